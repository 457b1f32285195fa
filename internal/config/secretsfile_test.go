package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secrets file that is not there is named with its line and what to do:
// write it, or leave secrets out. One that is there but is no secrets file
// says what is wrong with it, and not to write it.
func TestSecretsFileMissingSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(cfgPath, []byte("secrets: {file: ./nope.env}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(cfgPath)
	if err == nil {
		t.Fatal("Load: no error for a secrets file that does not exist")
	}
	for _, want := range []string{"line 1", filepath.Join(dir, "nope.env"), "write the secrets there", "or leave secrets out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load: %v\nwant it to contain %q", err, want)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "nope.env"), []byte("not a pair\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(cfgPath)
	if err == nil || !strings.Contains(err.Error(), "line 1 is not NAME=VALUE") || strings.Contains(err.Error(), "write the secrets there") {
		t.Errorf("Load of a malformed secrets file: %v\nwant its line named, not the missing file's hint", err)
	}
}
