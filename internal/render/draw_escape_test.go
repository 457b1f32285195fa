package render

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentreach/reach"
)

// controlNames are names a client can give a model (the model proxy takes
// the model's name from the request) that XML does not allow, or that a
// terminal acts on.
var controlNames = []string{"gpt\x01", "x\x1b[31m", "x\uFFFE", "x\uFFFF", "x\x0c", "bad\xff", "x\x7f\u009b2J", "x\r\x1b[2Ky"}

// TestSVGWellFormedWithControlCharacters: a name XML does not allow is
// drawn with U+FFFD, and the SVG still parses, to its end.
func TestSVGWellFormedWithControlCharacters(t *testing.T) {
	for _, name := range controlNames {
		for _, n := range []Frame{
			{ID: 1, Kind: "model", Name: name, Status: "completed"},
			{ID: 1, Kind: "tool", Name: "t", Arguments: []byte(`{"q":"` + name + `"}`), Status: "failed", Error: &reach.Error{Message: name}},
		} {
			svg := SVG([]Frame{n})
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
		dot := string(DOT([]Frame{{ID: 1, Kind: "model", Name: name, Status: "completed"}}))
		checkNoControls(t, "DOT", dot)
		if !strings.Contains(dot, `"f0000000000000001" [label="◆ `) {
			t.Errorf("DOT of %q:\n%s", name, dot)
		}
	}
	// A line break of any kind is DOT's \n.
	if dot := string(DOT([]Frame{{ID: 1, Name: "a\r\nb\rc\nd"}})); !strings.Contains(dot, `a\nb\nc\nd`) {
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

// TestDOTIDQuoted: a frame's node is named by a DOT string, so a trailing
// backslash or a quote cannot end it early; an edge names both ends so.
func TestDOTIDQuoted(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"f0000000000000001", `"f0000000000000001"`},
		{`a\`, `"a\\"`},
		{`a"b`, `"a\"b"`},
	} {
		if got := dotString(tc.s); got != tc.want {
			t.Errorf("dotString(%q) = %s, want %s", tc.s, got, tc.want)
		}
	}
	dot := string(DOT([]Frame{{ID: 1, Kind: "tool", Name: "t", Status: "completed"}, {ID: 0xc, Parent: id(1), Kind: "tool", Name: "u", Status: "completed"}}))
	if !strings.Contains(dot, "\n  \"f0000000000000001\" [label=") || !strings.Contains(dot, "\n  \"f0000000000000001\" -> \"f000000000000000c\";") {
		t.Errorf("DOT:\n%s\nwant a node and an edge named \"f0000000000000001\"", dot)
	}
}
