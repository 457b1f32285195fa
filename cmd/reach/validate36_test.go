package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateWithoutConfigNamesTheFileBeside: reach validate with no
// --config, in a folder that holds reach.yaml (where a new user runs it,
// as serve warns of), says the command that checks that file; it said
// only "--config FILE is required".
func TestValidateWithoutConfigNamesTheFileBeside(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	err := run(t.Context(), []string{"validate"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--config") {
		t.Fatalf("reach validate with no --config in an empty folder: %v, want it to ask for --config", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reach.yaml"), []byte("listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run(t.Context(), []string{"validate"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "reach validate --config reach.yaml") {
		t.Errorf("reach validate with no --config beside reach.yaml: %v, want it to say reach validate --config reach.yaml", err)
	}
}
