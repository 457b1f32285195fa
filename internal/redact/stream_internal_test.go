package redact

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestUnescapedOffsets: the view's offsets kept as its escapes' (escapes)
// are those of a reading that records every byte's, on texts of escapes
// (JSON's, percent-encoding, character references) whole, cut short,
// unknown and in pairs.
func TestUnescapedOffsets(t *testing.T) {
	each := func(text []byte) (view []byte, at []int) {
		for i := 0; i < len(text); {
			if strings.IndexByte(escapeStarts, text[i]) < 0 {
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
			if view, next, ok = appendSpelled(view, text, i); !ok {
				view, next = append(view, text[i]), i+1
			}
			for range len(view) - n {
				at = append(at, i)
			}
			i = next
		}
		return view, append(at, len(text))
	}
	parts := []string{`\`, `\\`, `\u`, `\u00`, `\u00f6`, `\ud83d`, `\ude00`, `\ud83d\ude00`, `\n`, `\x`, `a`, `ö`, `\"`, `\u0073`, `\uD83D`, `\/`,
		`%`, `%4`, `%41`, `%e2%82%ac`, `%zz`, `&`, `&#`, `&#x`, `&#x73`, `&#x73;`, `&#115;`, `&amp;`, `&am`, `&foo;`, `&#x110000;`, `;`}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b bytes.Buffer
		for range rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.Bytes()
		want, at := each(text)
		view, m := unescaped(text, false)
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
