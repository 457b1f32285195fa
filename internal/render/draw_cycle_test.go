package render

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestSVGParentCycle: nodes whose parent links form a cycle (so
// none of them is a root), and a node below them, are still drawn, each
// once and at a place of its own, instead of crashing the renderer.
func TestSVGParentCycle(t *testing.T) {
	nodes := []Frame{
		{ID: 1, Kind: "model", Name: "m", Status: "completed"},
		{ID: 2, Parent: id(3), Kind: "tool", Name: "x", Status: "completed"},
		{ID: 3, Parent: id(2), Kind: "tool", Name: "y", Status: "completed"},
		{ID: 4, Parent: id(3), Kind: "tool", Name: "z", Status: "failed"},
	}
	var svg string
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("SVG panicked on a parent cycle: %v", p)
			}
		}()
		svg = string(SVG(nodes))
	}()
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("SVG is not well-formed XML: %v", err)
	}
	re := regexp.MustCompile(`<g class="frame [^"]*" id="f-([^"]*)"><title>[^<]*</title><rect x="([0-9.]+)" y="([0-9.]+)"`)
	at := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		if _, dup := at[m[1]]; dup {
			t.Errorf("frame %s drawn twice", m[1])
		}
		at[m[1]] = m[2] + "," + m[3]
	}
	seen := map[string]reach.FrameID{}
	for _, n := range nodes {
		p, ok := at[n.ID.String()]
		if !ok {
			t.Errorf("frame %s is not drawn:\n%s", n.ID, svg)
			continue
		}
		if o, clash := seen[p]; clash {
			t.Errorf("frames %s and %s are drawn at the same place %s", o, n.ID, p)
		}
		seen[p] = n.ID
	}
	if !strings.HasSuffix(svg, "</svg>\n") {
		t.Errorf("SVG does not end with </svg>")
	}
}
