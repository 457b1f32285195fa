package sqlite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenPoolNamesTheFile: a pool opened with or without settings, as
// the writer's (immediate) or not, opens the file at its path and no
// other (a setting must not end up in the file's name).
func TestOpenPoolNamesTheFile(t *testing.T) {
	for _, c := range []struct {
		immediate bool
		pragmas   []string
	}{{false, nil}, {true, nil}, {false, []string{"foreign_keys=0"}}, {true, []string{"foreign_keys=0", "busy_timeout=100"}}} {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.db")
		db, err := openPool(path, c.immediate, c.pragmas...)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`CREATE TABLE t (a)`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		db.Close()
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "s.db" {
				t.Errorf("immediate %v, pragmas %v: a file %q beside s.db", c.immediate, c.pragmas, e.Name())
			}
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("immediate %v, pragmas %v: %v", c.immediate, c.pragmas, err)
		}
	}
}
