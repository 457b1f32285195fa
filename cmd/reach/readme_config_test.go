package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The configuration README.md shows ("A configuration") is one reach
// reads: reach validate --offline, with the variables it names set and the
// policy folder and secrets file it names in place, says ok. A key renamed
// or a template the code refuses would fail it here, not for a user.
func TestReadmeConfigValidates(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## A configuration\n\n```yaml\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no yaml block under \"## A configuration\"")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(config, m[1], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "policies"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policies", "p.cedar"), []byte("permit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("DB_PASSWORD=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range regexp.MustCompile(`\$\{([A-Z_]+)\}`).FindAllSubmatch(m[1], -1) {
		t.Setenv(string(v[1]), "test-value")
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", config}, &out, io.Discard); err != nil {
		t.Fatalf("README.md's configuration: %v", err)
	}
	if !strings.Contains(out.String(), ": ok, ") {
		t.Errorf("validate: %s; want ok", out.String())
	}
}
