package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
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
