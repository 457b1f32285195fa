package openai

import (
	"strings"
	"testing"
)

// BenchmarkPromptWords counts the words of a chat request of some 40 KB,
// with escapes in its strings, as the model proxy does once per turn.
func BenchmarkPromptWords(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","messages":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"role":"user","content":"the quick brown fox\njumps over\tthe lazy dog\u0020again \u00e9t\u00e9 \"quoted\" words of a turn, some more of them here and there"}`)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		PromptWords(body)
	}
}
