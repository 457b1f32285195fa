package main

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestSec36ToolsListShowsUnlisted: `reach tools list` shows each pin's
// upstream, and a pin its upstream no longer lists as "unlisted since"
// (kept, so that a definition coming back changed is held); a listed one
// is not so marked. Before, a pin of a resource long gone looked like
// any other.
func TestSec36ToolsListShowsUnlisted(t *testing.T) {
	data := t.TempDir()
	st, err := sqlite.Open(t.Context(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := pin.OpenStore(t.Context(), st, pin.Path(data))
	if err != nil {
		t.Fatal(err)
	}
	of := func(string) string { return "docs" }
	docs := []pin.Listing{{Upstream: "docs", Content: true}}
	if _, err := s.CheckListings(map[string]pin.Definition{"resource:doc://x": {Description: "x"}, "resource:doc://y": {Description: "y"}}, of, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckListings(map[string]pin.Definition{"resource:doc://x": {Description: "x"}}, of, docs); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, newToolsCmd, "list", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	var x, y string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "resource:doc://x"):
			x = line
		case strings.HasPrefix(line, "resource:doc://y"):
			y = line
		}
	}
	if !strings.Contains(out, "UPSTREAM") || !strings.Contains(y, "docs") || !strings.Contains(y, "unlisted since") {
		t.Errorf("tools list: doc://y's line %q, want its upstream and unlisted since\n%s", y, out)
	}
	if x == "" || strings.Contains(x, "unlisted") {
		t.Errorf("tools list: doc://x's line %q, want it listed\n%s", x, out)
	}
}
