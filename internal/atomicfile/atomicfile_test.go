package atomicfile_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/atomicfile"
)

func TestWriteAndStamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.json")
	if st, err := atomicfile.Stamp(path); err != nil || st != atomicfile.NoFile {
		t.Fatalf("Stamp of a missing file = %q, %v; want %q", st, err, atomicfile.NoFile)
	}
	if err := atomicfile.Write(path, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "one\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
		}
	}
	st1, err := atomicfile.Stamp(path)
	if err != nil || st1 == atomicfile.NoFile || st1 == "" {
		t.Fatalf("Stamp = %q, %v", st1, err)
	}
	if err := atomicfile.Write(path, []byte("two, longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st2, err := atomicfile.Stamp(path); err != nil || st2 == st1 {
		t.Errorf("Stamp after a write = %q, %v; want other than %q", st2, err, st1)
	}
	if es, _ := os.ReadDir(filepath.Dir(path)); len(es) != 1 {
		t.Errorf("the folder holds %d files, want 1 (no temporary file left)", len(es))
	}
}

func TestReadJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "things.json")
	v := map[string]int{"kept": 1}
	if st, err := atomicfile.ReadJSON(path, "things", &v); err != nil || st != atomicfile.NoFile || v["kept"] != 1 {
		t.Fatalf("ReadJSON of a missing file = %q, %v, %v", st, err, v)
	}
	if err := atomicfile.Write(path, []byte(`{"a":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	v = nil
	st, err := atomicfile.ReadJSON(path, "things", &v)
	if err != nil || v["a"] != 2 {
		t.Fatalf("ReadJSON = %v, %v", v, err)
	}
	if want, _ := atomicfile.Stamp(path); st != want {
		t.Errorf("stamp %q, want %q", st, want)
	}
	if err := atomicfile.Write(path, []byte(`{"a":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = atomicfile.ReadJSON(path, "things", &v)
	if want := "reading things from " + path + ": the file is not valid JSON (unexpected end of JSON input): restore it from a backup, or mend it by hand"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := atomicfile.ReadJSON(dir, "things", &v); err == nil || !strings.HasPrefix(err.Error(), "reading things: ") {
		t.Errorf("reading a folder: error %v", err)
	}
}
