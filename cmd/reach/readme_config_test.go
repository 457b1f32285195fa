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

// TestDocsConfigsValidate: every yaml block in docs/ (and docs/frameworks/)
// is a configuration reach reads, as README's is: reach validate --offline,
// with the variables it names set and a policy folder and secrets file in
// place, says ok. A block a user copies that the code refuses (a key
// renamed, a placeholder such as FILE_OR_URL) fails here.
func TestDocsConfigsValidate(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../docs/frameworks/*.md")
	blocks := 0
	for _, f := range append(files, more...) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```").FindAllSubmatch(text, -1) {
			blocks++
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
			if err := os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("SOME_SECRET=x\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, v := range regexp.MustCompile(`\$\{([A-Z_]+)\}`).FindAllSubmatch(m[1], -1) {
				t.Setenv(string(v[1]), "test-value")
			}
			var out strings.Builder
			if err := run(context.Background(), []string{"validate", "--offline", "--config", config}, &out, io.Discard); err != nil {
				t.Errorf("%s, yaml block %d: %v", filepath.Base(f), i+1, err)
			} else if !strings.Contains(out.String(), ": ok, ") {
				t.Errorf("%s, yaml block %d: validate said %s; want ok", filepath.Base(f), i+1, out.String())
			}
		}
	}
	if blocks < 4 {
		t.Errorf("%d yaml blocks found in docs/, want at least A2A's, BREAKERS', INSTANCES' and PERMISSIONS'", blocks)
	}
}
