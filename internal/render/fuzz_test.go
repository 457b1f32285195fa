package render

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// framesFrom makes a graph from fuzz input: shape gives each frame its
// parent (an id of 0 to 7: none, itself, a later frame, a cycle, a frame
// that is not there) and its kind and status; names gives their names,
// agents and errors, split at '|': text that tools, agents and upstreams
// choose, so anything.
func framesFrom(shape []byte, names string) []Frame {
	texts := strings.Split(names, "|")
	text := func(i int) string { return texts[i%len(texts)] }
	kinds := []string{"tool", "model", "delegate"}
	states := []string{"completed", "failed", "refused", "executing", "awaiting_approval", "cancelled"}
	var out []Frame
	t0 := time.Unix(1_700_000_000, 0).UTC()
	for i, b := range shape {
		if i == 32 {
			break
		}
		f := Frame{ID: reach.FrameID(i + 1), Kind: kinds[int(b>>3)%len(kinds)], Name: text(i), Agent: text(i + 1),
			Status: states[int(b>>5)%len(states)], Started: t0.Add(time.Duration(i) * time.Millisecond), Depth: int(b >> 6)}
		if p := reach.FrameID(b & 7); p != 0 {
			f.Parent = &p
		}
		if b&0x10 != 0 {
			f.Error = &reach.Error{Code: "x", Message: text(i + 2)}
			f.Summary = text(i + 3)
		}
		out = append(out, f)
	}
	return out
}

// Whatever a graph holds (parent cycles, parents missing, names with
// markup, quotes, line breaks or invalid UTF-8), SVG draws well-formed XML
// and DOT keeps every name inside its quotes; folding any frame ends.
func FuzzDraw(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x13, 0x22}, `search|<script>alert(1)</script>|"quoted"\|a\nb`)
	f.Add([]byte{0x03, 0x02, 0x01}, `x|y|z`)
	f.Add([]byte{0x01, 0x01, 0x07, 0xff}, "\xff\xfe|]]>|&amp;|\r\n")
	f.Fuzz(func(t *testing.T, shape []byte, names string) {
		nodes := framesFrom(shape, names)
		svg := SVG(nodes)
		d := xml.NewDecoder(strings.NewReader(string(svg)))
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("SVG is not well-formed XML (%v):\n%s", err, svg)
				}
				break
			}
		}
		dot := string(DOT(nodes))
		for n, line := range strings.Split(dot, "\n") {
			// Outside DOT's strings a line holds no quote left open: every
			// name's quote and line break is escaped.
			open := false
			for i := 0; i < len(line); i++ {
				switch {
				case line[i] == '\\' && open:
					i++
				case line[i] == '"':
					open = !open
				}
			}
			if open {
				t.Fatalf("DOT line %d leaves a string open: %q", n+1, line)
			}
		}
		folded := map[reach.FrameID]bool{}
		for i, b := range shape {
			if b&1 != 0 {
				folded[reach.FrameID(i+1)] = true
			}
		}
		Fold(nodes, folded)
	})
}
