package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// readmeConfig is README.md's yaml block under "## A configuration".
	readmeConfig = regexp.MustCompile("(?s)## A configuration\n\n```yaml\n(.*?)\n```")
	// docsYAMLBlock is any yaml block of a page, on lines of its own.
	docsYAMLBlock = regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```")
	// configVar is a ${NAME} a configuration reads from the environment.
	configVar = regexp.MustCompile(`\$\{([A-Z_]+)\}`)
)

// validateConfig is reach validate --offline on block, a configuration a
// page shows, as a user who copies it runs it: written as reach.yaml in a
// folder of its own with a policy folder (policies/p.cedar) and a secrets
// file (secrets.env, holding secrets) beside it, every variable it names
// (${NAME}) set. It returns why validate did not say ok, or nil.
func validateConfig(t *testing.T, block []byte, secrets string) error {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(config, block, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "policies"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policies", "p.cedar"), []byte("permit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.env"), []byte(secrets), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range configVar.FindAllSubmatch(block, -1) {
		t.Setenv(string(v[1]), "test-value")
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", config}, &out, io.Discard); err != nil {
		return err
	}
	if !strings.Contains(out.String(), ": ok, ") {
		return fmt.Errorf("validate said %s; want ok", out.String())
	}
	return nil
}

// The configuration README.md shows ("A configuration") is one reach
// reads: reach validate --offline, with the variables it names set and the
// policy folder and secrets file it names in place, says ok. A key renamed
// or a template the code refuses would fail it here, not for a user.
func TestReadmeConfigValidates(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := readmeConfig.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no yaml block under \"## A configuration\"")
	}
	if err := validateConfig(t, m[1], "DB_PASSWORD=x\n"); err != nil {
		t.Fatalf("README.md's configuration: %v", err)
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
		for i, m := range docsYAMLBlock.FindAllSubmatch(text, -1) {
			blocks++
			if err := validateConfig(t, m[1], "SOME_SECRET=x\n"); err != nil {
				t.Errorf("%s, yaml block %d: %v", filepath.Base(f), i+1, err)
			}
		}
	}
	if blocks < 4 {
		t.Errorf("%d yaml blocks found in docs/, want at least A2A's, BREAKERS', INSTANCES' and PERMISSIONS'", blocks)
	}
}
