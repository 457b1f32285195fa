package main

import (
	"strings"
	"testing"
)

// `reach tools list` over the data folder of a gateway that served only
// its own tools (zero configuration, four tools served) printed "no
// tools": a new user read that the gateway had none. It lists the pinned
// definitions of upstream tools, so it now says that none is pinned, where
// it looked and why, as it does before any gateway made the folder; with
// --held, that none is held.
func TestToolsListSaysNothingIsPinned(t *testing.T) {
	data := t.TempDir()
	_, stop, _ := startServe(t, "--data", data, "--listen", "127.0.0.1:0")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "tools", "list", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if want := "no pinned tools in " + data + " (the gateway pins the tools of its upstreams"; !strings.HasPrefix(out, want) {
		t.Errorf("tools list of a folder with nothing pinned: %q, want it to begin %q", out, want)
	}
	out, err = runCLI(t, "tools", "list", "--held", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if want := "no tool definition is held in " + data; !strings.HasPrefix(out, want) {
		t.Errorf("tools list --held of a folder with nothing held: %q, want it to begin %q", out, want)
	}
}
