package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAttack33WrittenFilesArePrivate: what `reach audit export -o` and
// `reach graph -o` write holds a request's recorded arguments and results
// (the audit log's, which its data folder keeps to its owner, 0700 and
// 0600): the file they write is its owner's alone too, not readable by
// every user of the machine as a 0644 file under the usual umask was.
func TestAttack33WrittenFilesArePrivate(t *testing.T) {
	out := t.TempDir()
	trace := filepath.Join(out, "trace.json")
	if _, err := runCLI(t, "audit", "export", "req_a", "--data", auditData(t), "-o", trace); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"g1","tool_calls":[{"call_id":"c","tool":"search_kb","arguments":{"query":"q"}}]}`)
	graph := filepath.Join(out, "graph.json")
	if _, _, err := runCmd(t, newGraph, "g1", "--api", base, "--format", "json", "-o", graph); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{trace, graph} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s was written with mode %v: others may read it", filepath.Base(f), fi.Mode().Perm())
		}
	}
}
