package render

import (
	"context"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestCaptionPriority (R8): the drawings of a request's graph say its
// priority when it is not the default: a caption line above the frames
// (SVG, the boxes moved down under it; DOT, the graph's label), escaped
// as names are; a request of priority 0 is drawn as before.
func TestCaptionPriority(t *testing.T) {
	rt := reach.New(nil)
	_, urgent, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: `r<1>"`, Priority: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, plain, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	if c := Caption(plain); c != "" {
		t.Errorf("Caption of a request of priority 0 = %q, want none", c)
	}
	if g := GraphOf(urgent); g.Priority != 2 {
		t.Errorf("GraphOf: priority %d, want 2", g.Priority)
	}
	c := Caption(urgent)
	if c != `request r<1>": priority 2` {
		t.Fatalf("Caption = %q", c)
	}
	nodes := []Frame{{ID: 1, Kind: "tool", Name: "search", Status: "completed"}}
	bare, captioned := SVG(nodes), SVGWith(nodes, &SVGOptions{Caption: c})
	if xml.Unmarshal(captioned, new(struct{})) != nil {
		t.Fatalf("the captioned SVG is not well-formed:\n%s", captioned)
	}
	if !strings.Contains(string(captioned), `>request r&lt;1&gt;&#34;: priority 2</text>`) || strings.Contains(string(bare), "priority") {
		t.Errorf("SVG caption missing or unescaped:\n%s", captioned)
	}
	boxY := regexp.MustCompile(`<rect x="[0-9.]+" y="([0-9.]+)" width="200"`)
	if b, cp := boxY.FindSubmatch(bare), boxY.FindSubmatch(captioned); b == nil || cp == nil || string(b[1]) == string(cp[1]) {
		t.Errorf("the frame's box is not moved under the caption: %s, %s", b, cp)
	}
	if dot := string(DOTWith(nodes, c)); !strings.Contains(dot, `label="request r<1>\": priority 2";`) {
		t.Errorf("DOT caption:\n%s", dot)
	}
	if string(DOTWith(nodes, "")) != string(DOT(nodes)) {
		t.Error("DOTWith without a caption differs from DOT")
	}
}
