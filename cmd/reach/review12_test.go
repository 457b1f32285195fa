package main

import (
	"strings"
	"testing"
)

// TestStdioListenAuthSaysWhoDecides: with auth, the calls of reach stdio
// are the local principal's (stdio authenticates nobody), and only that
// principal, with a key of its own, may decide their approvals over
// --listen: a key of anyone else sees none of them. reach stdio says so
// when it starts, and how to make that key; the approval's own words ("waits
// for the user local") did not say how to be that user.
func TestStdioListenAuthSaysWhoDecides(t *testing.T) {
	cfg := writeConfig(t, "examples: true\ndata: ./state\nauth: {keys: true}\n")
	stderr := &lockedBuffer{}
	root := newRoot(&lockedBuffer{}, stderr)
	root.SetIn(strings.NewReader(""))
	root.SetArgs([]string{"stdio", "--config", cfg, "--listen", "127.0.0.1:0"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "reach keys create --principal local") {
		t.Errorf("reach stdio --listen with auth did not say how to decide its approvals:\n%s", stderr.String())
	}
}
