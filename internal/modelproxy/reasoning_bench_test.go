package modelproxy

import (
	"encoding/json"
	"testing"

	"github.com/agentreach/reach/internal/openai"
)

// BenchmarkChatChunkReasoning reads one chunk of a chat stream of a
// reasoning model (a delta of reasoning, 4 words) as passStream does: its
// decode, and the second decode of its reasoning (noteReasoning), which
// only chunks that mention "reasoning" pay; Content is a chunk of an
// answer's text, for the cost without it.
func BenchmarkChatChunkReasoning(b *testing.B) {
	for _, c := range []struct{ name, chunk string }{
		{"Content", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the next few words"},"finish_reason":null}]}`},
		{"Reasoning", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":" the next few words"},"finish_reason":null}]}`},
		{"Both", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":" the next few words","reasoning":" the next few words"},"finish_reason":null}]}`},
	} {
		d := []byte(c.chunk)
		b.Run(c.name, func(b *testing.B) {
			a := &answer{}
			b.ReportAllocs()
			for b.Loop() {
				var cc openai.Completion
				if json.Unmarshal(d, &cc) != nil {
					b.Fatal("not a chunk")
				}
				a.note(&cc)
				a.noteReasoning(d)
			}
		})
	}
}
