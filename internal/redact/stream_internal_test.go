package redact

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/agentreach/reach/internal/jsonscan"
)

// TestUnescapedOffsets: the view's offsets kept as its escapes' (escapes)
// are those of a reading that records every byte's, on texts of escapes
// whole, cut short, unknown and in pairs.
func TestUnescapedOffsets(t *testing.T) {
	each := func(text []byte) (view []byte, at []int) {
		for i := 0; i < len(text); {
			if text[i] != '\\' {
				view, at = append(view, text[i]), append(at, i)
				i++
				continue
			}
			if unfinished(text[i:]) {
				return view, append(at, i)
			}
			n := len(view)
			var next int
			var ok bool
			if view, next, ok = jsonscan.AppendUnescape(view, text, i); !ok {
				view, next = append(view, '\\'), i+1
			}
			for range len(view) - n {
				at = append(at, i)
			}
			i = next
		}
		return view, append(at, len(text))
	}
	parts := []string{`\`, `\\`, `\u`, `\u00`, `\u00f6`, `\ud83d`, `\ude00`, `\ud83d\ude00`, `\n`, `\x`, `a`, `ö`, `\"`, `\u0073`, `\uD83D`, `\/`}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b bytes.Buffer
		for range rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.Bytes()
		want, at := each(text)
		view, m := unescaped(text)
		if !bytes.Equal(view, want) {
			t.Fatalf("%q: view %q, want %q", text, view, want)
		}
		for p := range at {
			if m.at(p) != at[p] {
				t.Fatalf("%q: byte %d of the view at %d, want %d", text, p, m.at(p), at[p])
			}
		}
	}
}
