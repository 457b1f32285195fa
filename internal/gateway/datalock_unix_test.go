//go:build unix

package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockDataDirSaysWhatToDo: a data folder reach cannot write its lock
// in (a read-only volume, where the folder already exists so that making
// it succeeded) is an error that says what to do: name a folder reach may
// write. The lock's path is made a folder here, which root cannot open for
// writing either.
func TestLockDataDirSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, dataLockFile), 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := lockDataDir(dir)
	if err == nil {
		release()
		t.Fatal("a data folder whose lock cannot be written was locked")
	}
	for _, want := range []string{"locking the data folder", "data:", "--data"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
