package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reach graph REQUEST -o graph.png wrote an SVG drawing into graph.png,
// and -o graph.dot an SVG into graph.dot: the file's name was not read.
// Now a .dot (.gv) or .json file gets that format unless --format says
// otherwise, and a name of a picture reach does not draw (.png, .pdf...) is
// refused, nothing written, saying how to make one.
func TestGraphFileFormatFromItsName(t *testing.T) {
	base, stop, _ := startServe(t, "--data", t.TempDir(), "--listen", "127.0.0.1:0")
	defer stop()
	got := getJSON(t, "POST", base+"/v1/calls", `{"request_id":"g34","tool_calls":[{"call_id":"c1","tool":"get_order","arguments":{"order_id":"1001"}}]}`)
	if got["request_id"] != "g34" {
		t.Fatalf("call: %v", got)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ file, format, begins string }{
		{"g.svg", "", "<svg"},
		{"g.dot", "", "digraph"},
		{"g.gv", "", "digraph"},
		{"g.json", "", "{"},
		{"g2.dot", "svg", "<svg"}, // --format wins
	} {
		args := []string{"graph", "g34", "--api", base, "-o", filepath.Join(dir, tc.file)}
		if tc.format != "" {
			args = append(args, "--format", tc.format)
		}
		if out, err := runCLI(t, args...); err != nil {
			t.Errorf("graph -o %s: %v\n%s", tc.file, err, out)
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, tc.file))
		if !strings.HasPrefix(string(b), tc.begins) {
			t.Errorf("graph -o %s (--format %q) wrote %.40q, want it to begin %q", tc.file, tc.format, b, tc.begins)
		}
		if tc.begins == "{" && !json.Valid(b) {
			t.Errorf("graph -o %s wrote no JSON", tc.file)
		}
	}
	for _, name := range []string{"g.png", "g.PDF", "g.jpg"} {
		_, err := runCLI(t, "graph", "g34", "--api", base, "-o", filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), "dot -T") || !strings.Contains(err.Error(), ".svg") {
			t.Errorf("graph -o %s: %v; want it refused, saying to write .svg or render the DOT with Graphviz", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("graph -o %s wrote the file", name)
		}
	}
}
