package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataFlagNamingAFile: a command that reads the data folder, given a
// file for it (--data reach.db, or the configuration's file), says that it
// is a file and to name the folder: it said "opening store: stat
// afile/reach.db: not a directory".
func TestDataFlagNamingAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reach.db")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"audit", "verify"},
		{"audit", "show", "r1"},
		{"audit", "export", "r1"},
		{"deadletters", "list"},
		{"tools", "list"},
		{"tools", "diff"},
		{"keys", "list"},
	} {
		err := run(t.Context(), append(args, "--data", file), io.Discard, io.Discard)
		name := "reach " + strings.Join(args, " ") + " --data FILE"
		if err == nil || !strings.Contains(err.Error(), file+" is a file, not a data folder") || !strings.Contains(err.Error(), "--data DIR") {
			t.Errorf("%s: %v, want it to say the path is a file, not a data folder, and to pass --data DIR", name, err)
		}
	}
}
