package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A keys.json cut short (a disk that filled as it was written by hand, an
// edit gone wrong): reach serve said "line 2: auth.keys: [REDACTED] keys
// from .../keys.json: unexpected end of JSON input", its own words masked
// as a secret and nothing said of what to do; reach keys list and create
// said the JSON error alone. Each now names the file, says it is not valid
// JSON, and what to do.
func TestDamagedKeysFileSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(cfg, []byte("listen: "+freeAddr(t)+"\nauth: {keys: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, ".reach", "keys.json")
	if err := os.MkdirAll(filepath.Dir(keys), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte(`{"version": 1, "keys": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve", "--config", cfg}, {"keys", "list", "--config", cfg}, {"keys", "create", "--principal", "alice", "--config", cfg}} {
		cmd := exec.Command(exe(t), args...)
		cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		msg := stderr.String()
		if err == nil {
			t.Errorf("reach %s on a damaged keys.json succeeded; want it refused", strings.Join(args[:2], " "))
			continue
		}
		for _, want := range []string{keys, "not valid JSON", "restore it from a backup"} {
			if !strings.Contains(msg, want) {
				t.Errorf("reach %s on a damaged keys.json said:\n%s\nwant %q", strings.Join(args[:2], " "), msg, want)
			}
		}
		if strings.Contains(msg, "[REDACTED]") {
			t.Errorf("reach %s on a damaged keys.json said:\n%s\nwant its own words unmasked", strings.Join(args[:2], " "), msg)
		}
	}
	if b, _ := os.ReadFile(keys); string(b) != `{"version": 1, "keys": [` {
		t.Errorf("keys.json after the refusals: %q; want it left as it was", b)
	}
}
