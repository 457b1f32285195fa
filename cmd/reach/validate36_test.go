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

// TestValidateWarnsOfNoKeys: reach validate of a configuration that asks
// for API keys (auth: {keys: true}, no JWT) whose data folder holds none
// warns, as serve's banner does, that every client would be refused and
// how to make the first key: it printed "ok" and nothing else.
func TestValidateWarnsOfNoKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\ndata: d\nauth:\n  keys: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"validate", "--offline", "--config", cfg}, &out, io.Discard); err != nil {
		t.Fatalf("reach validate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "warning: no API key exists yet in ") || !strings.Contains(out.String(), "reach keys create --principal NAME --roles operator --data "+filepath.Join(dir, "d")) {
		t.Errorf("reach validate of auth: {keys: true} with no keys printed:\n%s\nwant the warning that no key exists and the command that makes one", out.String())
	}
	out.Reset()
	if err := run(t.Context(), []string{"keys", "create", "--principal", "ops", "--roles", "operator", "--config", cfg}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"validate", "--offline", "--config", cfg}, &out, io.Discard); err != nil || strings.Contains(out.String(), "no API key") {
		t.Errorf("reach validate with a key made: %v\n%s", err, out.String())
	}
}
