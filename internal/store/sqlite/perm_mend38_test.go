package sqlite

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// The store's file and its journals (-wal, -shm) are the owner's alone:
// they hold the audit log, tool arguments and results, and a data folder
// that other users may list must not let them read those. SQLite gives
// the journals the main file's mode, so the main file is made 0600 before
// SQLite opens it, whatever the umask.
func TestMend38StoreFilesAreOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	s := openSQLite(t, dir, nil)
	if err := s.AppendAudit(context.Background(), []*store.AuditRecord{auditRecord(1, "r1")}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{DefaultFile, DefaultFile + "-wal", DefaultFile + "-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", name, m)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o700 {
		t.Errorf("the data folder has mode %04o, want 0700", m)
	}
}

// A store file that others may read, left by an earlier version or made
// by hand, is not changed behind its owner's back: Open warns, naming the
// file and the chmod that closes it, and opens it as it is.
func TestMend38WarnsOfAStoreFileOthersMayRead(t *testing.T) {
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	s.Close()
	path := filepath.Join(dir, DefaultFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	s2 := openSQLite(t, dir, &Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	out := buf.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "chmod 600 "+path) {
		t.Fatalf("no warning with the chmod to run: %q", out)
	}
	if n := strings.Count(out, "chmod 600"); n != 1 {
		t.Fatalf("warned %d times, want once: %q", n, out)
	}
	st, _ := os.Stat(path)
	if m := st.Mode().Perm(); m != 0o644 {
		t.Fatalf("Open changed the owner's file to %04o", m)
	}
	// The journals SQLite made while the file was 0644 are 0644 too: the
	// warning names them as well, as long as they are there.
	os.Chmod(path, 0o600)
	buf.Reset()
	s3 := openSQLite(t, dir, &Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if !strings.Contains(buf.String(), "chmod 600 "+path+"-wal "+path+"-shm") {
		t.Fatalf("the warning does not name the journals others may read: %q", buf.String())
	}
	s2.Close()
	s3.Close()
	// Owner-only files draw no warning.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	buf.Reset()
	openSQLite(t, dir, &Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if strings.Contains(buf.String(), "chmod") {
		t.Fatalf("warned of owner-only files: %q", buf.String())
	}
}
