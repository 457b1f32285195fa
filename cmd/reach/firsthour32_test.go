package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/policy"
)

// TestLogFlagsOnlyWhereTheyLog: --log-format and --log-level are flags of
// the commands that run a gateway (serve, stdio, validate, demo), listed
// in their help; another command refuses them as unknown, naming its own
// flags. They were the root's: every command's help listed them, and
// `reach keys list --log-level bogus` ran without a word.
func TestLogFlagsOnlyWhereTheyLog(t *testing.T) {
	for _, name := range []string{"serve", "stdio", "validate", "demo"} {
		var out bytes.Buffer
		if err := run(t.Context(), []string{name, "--help"}, &out, io.Discard); err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		if !strings.Contains(out.String(), "--log-level") || !strings.Contains(out.String(), "--log-format") {
			t.Errorf("reach %s --help lists no log flags:\n%s", name, out.String())
		}
	}
	for _, args := range [][]string{
		{"keys", "list", "--data", t.TempDir(), "--log-level", "bogus"},
		{"approvals", "list", "--log-format", "json"},
		{"audit", "verify", "--data", t.TempDir(), "--log-level", "debug"},
		{"version", "--log-level", "debug"},
	} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "unknown flag: --log-") {
			t.Errorf("reach %s: %v, want unknown flag", strings.Join(args, " "), err)
		}
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"approvals", "--help"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "--log-") {
		t.Errorf("reach approvals --help lists log flags:\n%s", out.String())
	}
	// A gateway command still reads them, and refuses a bad value.
	cfg := writeConfig(t, "listen: 127.0.0.1:0\n")
	if err := run(t.Context(), []string{"validate", "--offline", "--config", cfg, "--log-level", "bogus"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("validate --log-level bogus: %v, want an error naming --log-level", err)
	}
}

// TestPoliciesDefault: reach policies default prints the shipped policies;
// -o writes them to a new file, which a configuration's policy: then
// reads, and refuses to overwrite one, saying so. A user adding a policy
// file had no command to start it from.
func TestPoliciesDefault(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"policies", "default"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), policy.DefaultSource()) {
		t.Errorf("reach policies default printed %d bytes, not the shipped policies", out.Len())
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "policies", "default.cedar")
	if err := os.Mkdir(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(cfg, []byte("auth: {keys: true}\npolicy: {path: ./policies/}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A policy folder with no policy yet says how to start one.
	if err := run(t.Context(), []string{"validate", "--offline", "--config", cfg}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "reach policies default -o FILE") {
		t.Errorf("validate with an empty policy folder: %v, want it to name reach policies default", err)
	}
	if err := run(t.Context(), []string{"policies", "default", "-o", file}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, policy.DefaultSource()) {
		t.Errorf("-o wrote %d bytes (%v), want the shipped policies", len(b), err)
	}
	err := run(t.Context(), []string{"policies", "default", "-o", file}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exists, and is not overwritten") {
		t.Errorf("-o over a file: %v, want it refused", err)
	}
	var v strings.Builder
	if err := run(t.Context(), []string{"validate", "--offline", "--config", cfg}, &v, io.Discard); err != nil || !strings.Contains(v.String(), ": ok, ") {
		t.Errorf("a configuration with the written policies: %v %s", err, v.String())
	}
}
