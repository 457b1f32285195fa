package callgraph

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// controlNames are names a client can give a model (the model proxy takes
// the model's name from the request) that XML does not allow, or that a
// terminal acts on.
var controlNames = []string{"gpt\x01", "x\x1b[31m", "x\uFFFE", "x\uFFFF", "x\x0c", "bad\xff", "x\x7f\u009b2J", "x\r\x1b[2Ky"}

// TestSVGWellFormedWithControlCharacters: a name XML does not allow is
// drawn with U+FFFD, and the SVG still parses, to its end.
func TestSVGWellFormedWithControlCharacters(t *testing.T) {
	for _, name := range controlNames {
		for _, n := range []Node{
			{ID: "0000000000000001", Kind: "model", Name: name, Status: "completed"},
			{ID: "0000000000000001", Kind: "tool", Name: "t", Args: `{"q":"` + name + `"}`, Status: "failed", Error: name},
		} {
			svg := SVG([]Node{n})
			d := xml.NewDecoder(strings.NewReader(string(svg)))
			for {
				_, err := d.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("SVG of %+v is not well-formed XML: %v\n%q", n, err, svg)
				}
			}
			checkNoControls(t, "SVG", string(svg))
		}
	}
}

// TestDOTControlCharacters: DOT labels carry no control character (but
// the document's own newlines and tabs) and are UTF-8.
func TestDOTControlCharacters(t *testing.T) {
	for _, name := range controlNames {
		dot := string(DOT([]Node{{ID: "0000000000000001", Kind: "model", Name: name, Status: "completed"}}))
		checkNoControls(t, "DOT", dot)
		if !strings.Contains(dot, `"f0000000000000001" [label="◆ `) {
			t.Errorf("DOT of %q:\n%s", name, dot)
		}
	}
	// A line break of any kind is DOT's \n.
	if dot := string(DOT([]Node{{ID: "1", Name: "a\r\nb\rc\nd"}})); !strings.Contains(dot, `a\nb\nc\nd`) {
		t.Errorf("line breaks in DOT:\n%s", dot)
	}
}

func checkNoControls(t *testing.T, what, doc string) {
	t.Helper()
	if !utf8.ValidString(doc) || strings.ContainsFunc(doc, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\t' || 0x7f <= r && r <= 0x9f || r == 0xfffe || r == 0xffff
	}) {
		t.Errorf("%s has a control character or is not UTF-8: %q", what, doc)
	}
}

// TestDOTIDQuoted: a frame id is quoted as a DOT string, so a trailing
// backslash or a quote cannot end it early.
func TestDOTIDQuoted(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"0000000000000001", `"f0000000000000001"`},
		{`a\`, `"fa\\"`},
		{`a"b`, `"fa\"b"`},
	} {
		dot := string(DOT([]Node{{ID: tc.id, Kind: "tool", Name: "t", Status: "completed"}, {ID: "c", Parent: tc.id, Kind: "tool", Name: "u", Status: "completed"}}))
		if !strings.Contains(dot, "\n  "+tc.want+" [label=") || !strings.Contains(dot, "\n  "+tc.want+` -> "fc";`) {
			t.Errorf("DOT with frame id %q:\n%s\nwant a node and an edge named %s", tc.id, dot, tc.want)
		}
	}
}
