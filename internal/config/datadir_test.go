package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data folder that cannot be made (a container's read-only working
// directory, where the default .reach lies) is an error that says what to
// do: name a folder reach may write.
func TestEnsureDataDirSaysWhatToDo(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Under a file, as root too (root writes a read-only folder).
	c := &Config{Data: filepath.Join(file, ".reach")}
	_, err := c.EnsureDataDir()
	if err == nil {
		t.Fatal("a data folder under a file was made")
	}
	for _, want := range []string{"creating the data folder", "data:", "--data"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
