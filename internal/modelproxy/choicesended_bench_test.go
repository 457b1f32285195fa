package modelproxy

import (
	"fmt"
	"testing"

	"github.com/agentreach/reach/internal/openai"
)

// hostileChoices is a stream's chunks from a model that opens one choice
// it never ends and then sends n chunks, each ending a new choice.
func hostileChoices(n int) [][]openai.Choice {
	chunks := [][]openai.Choice{{{Index: 0}}}
	for i := 1; i <= n; i++ {
		chunks = append(chunks, []openai.Choice{{Index: i, FinishReason: "stop"}})
	}
	return chunks
}

// BenchmarkChoicesEndedHostile: what telling whether a stream's text is
// whole (choicesEnded) costs over a whole stream whose model keeps one
// choice open and ends a new one on each of n chunks.
func BenchmarkChoicesEndedHostile(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		chunks := hostileChoices(n)
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			for b.Loop() {
				var a answer
				for _, ch := range chunks {
					if a.choicesEnded(ch) {
						b.Fatal("whole while choice 0 is open")
					}
				}
			}
		})
	}
}
