package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMend38ServeDataFolderIsOwnersOnly: the data folder reach serve
// creates is 0700, and the store in it (reach.db and the -wal and -shm
// SQLite makes beside it, which hold the audit log with tool arguments
// and results) 0600, whatever the umask lets through; before, the store's
// files were 0644.
func TestMend38ServeDataFolderIsOwnersOnly(t *testing.T) {
	data := filepath.Join(t.TempDir(), "fresh", "data")
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", data)
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"m1","tool_calls":[{"call_id":"c","tool":"search_kb","arguments":{"query":"q"}}]}`)
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o700 {
		t.Errorf("the data folder has mode %04o, want 0700", m)
	}
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	var store int
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "reach.db") {
			continue
		}
		store++
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s has mode %04o: others may read it", e.Name(), m)
		}
	}
	if store < 2 {
		t.Errorf("the data folder holds %d of the store's files, want reach.db and its journals", store)
	}
}
