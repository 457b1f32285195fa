package render

import (
	"encoding/xml"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// svgSize reads the width and height of a rendered SVG.
func svgSize(t *testing.T, svg []byte) (w, h float64) {
	t.Helper()
	m := regexp.MustCompile(`<svg [^>]*width="([0-9.]+)" height="([0-9.]+)"`).FindSubmatch(svg)
	if m == nil {
		t.Fatalf("no size in %.200s", svg)
	}
	w, _ = strconv.ParseFloat(string(m[1]), 64)
	h, _ = strconv.ParseFloat(string(m[2]), 64)
	return w, h
}

// TestSVGWrapsWideFanOut: a model turn that chose 40 tools is drawn in
// rows of 8, not one row 40 boxes wide, and every box is still drawn.
func TestSVGWrapsWideFanOut(t *testing.T) {
	m := reach.FrameID(1000)
	nodes := []Frame{{ID: m, Kind: "model", Name: "gpt", Status: "completed"}}
	for i := range 40 {
		nodes = append(nodes, Frame{ID: reach.FrameID(i + 1), Parent: &m, Kind: "tool", Name: "search_kb", Status: "completed"})
	}
	svg := SVG(nodes)
	w, h := svgSize(t, svg)
	if max8 := margin*2 + 8*(boxW+gapX); w > max8 {
		t.Errorf("width %.0f for a fan-out of 40, want at most %.0f (8 boxes a row)", w, max8)
	}
	if rows := (h - margin*2 + gapY) / (boxH + gapY); rows != 6 {
		t.Errorf("%.1f rows, want 6 (the model, then 5 rows of 8)", rows)
	}
	if n := strings.Count(string(svg), `<g class="frame`); n != 41 {
		t.Errorf("%d boxes drawn, want 41", n)
	}
	// No two boxes overlap.
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`<rect x="([0-9.]+)" y="([0-9.]+)" width="200"`).FindAllStringSubmatch(string(svg), -1) {
		if seen[m[1]+","+m[2]] {
			t.Fatalf("two boxes at %s,%s", m[1], m[2])
		}
		seen[m[1]+","+m[2]] = true
	}
	// Without wrapping, the old endless row.
	if w, _ := svgSize(t, SVGWith(nodes, &SVGOptions{Wrap: -1})); w < 40*boxW {
		t.Errorf("unwrapped width %.0f, want 40 boxes wide", w)
	}
}

// TestSVGFoldedAndLinked: a folded frame shows how many frames it hides,
// and with Link every box links where the option says, escaped.
func TestSVGFoldedAndLinked(t *testing.T) {
	nodes := []Frame{{ID: 0xa, Kind: "tool", Name: "crawl", Status: "completed", Folded: 12}}
	svg := SVGWith(nodes, &SVGOptions{Link: func(id reach.FrameID) string { return "/ui/requests/r?fold=" + id.String() + "&x=\"<" }})
	for _, want := range []string{`>+12</text>`, `<a href="/ui/requests/r?fold=000000000000000a&amp;x=&#34;&lt;">`, "12 frames folded under it"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("SVG lacks %q:\n%s", want, svg)
		}
	}
	if err := xml.Unmarshal(svg, new(any)); err != nil {
		t.Errorf("not well-formed: %v", err)
	}
}

func TestFold(t *testing.T) {
	id := func(i int) *reach.FrameID { f := reach.FrameID(i); return &f }
	// 1 <- 2 <- 3 <- 4, 1 <- 5; 6 <-> 7 in a cycle of parents.
	nodes := []Frame{{ID: 1}, {ID: 2, Parent: id(1)}, {ID: 3, Parent: id(2)}, {ID: 4, Parent: id(3)}, {ID: 5, Parent: id(1)}, {ID: 6, Parent: id(7)}, {ID: 7, Parent: id(6)}}
	got := Fold(nodes, map[reach.FrameID]bool{2: true, 3: true, 6: true})
	var ids []string
	for _, n := range got {
		ids = append(ids, fmt.Sprintf("%d+%d", n.ID, n.Folded))
	}
	if s := strings.Join(ids, " "); s != "1+0 2+2 5+0 6+1" {
		t.Errorf("folded: %s, want 1+0 2+2 5+0 6+1 (2 hides 3 and 4; 6, in a cycle of parents, hides 7)", s)
	}
}

// TestStatusLineLatency: a box says how long its frame ran to three
// digits, not to the tenth of a millisecond.
func TestStatusLineLatency(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		22622500 * time.Microsecond: "completed · 22.6s",
		12340 * time.Microsecond:    "completed · 12.3ms",
		388 * time.Microsecond:      "completed · 390µs", // frames are kept to 10 µs
		184500 * time.Millisecond:   "completed · 3m5s",
	} {
		end := start.Add(d)
		if got := statusLine(&Frame{Status: "completed", Started: start, Ended: &end}); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
