package sqlite

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
)

// TestSQLiteMigration20KilledMidway: a process killed (kill -9) while it
// migrates a populated store to schema 20, the frames copied to their new
// table and the old one dropped but not committed, leaves the store at
// the schema before, whole: the old table with its unique (request, frame)
// and every row at its rowid, the mark and the held list as they were, no
// table of the copy. The next Open migrates it and finds every frame.
func TestSQLiteMigration20KilledMidway(t *testing.T) {
	if dir := os.Getenv("REACH_TEST_MIGRATE_DIR"); dir != "" { // the child, which stops at the crash point
		Open(t.Context(), dir, nil)
		t.Fatal("the migration ended without reaching its crash point")
	}
	if testing.Short() {
		t.Skip("kills a child process")
	}
	dir := t.TempDir()
	before := slices.IndexFunc(migrations, func(m migration) bool { return m.version == 20 })
	w := oldDatabase(t, dir, before)
	for _, q := range []string{
		`INSERT INTO frames (seq, request, frame, state, started, updated, origin) VALUES
			(1, 'r1', '0000000000000001', 'completed', 10, 10, NULL),
			(3, 'r2', '0000000000000003', 'executing', 30, 30, NULL),
			(5, 'r1', '0000000000000002', 'executing', 20, 50, 2),
			(6, 'r1', '0000000000000006', 'completed', 60, 60, NULL)`,
		`UPDATE store_meta SET value = 4 WHERE key = 'frames_settled'`,
		`INSERT INTO frames_held (frame) VALUES (3)`,
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func(what string) string {
		t.Helper()
		var b strings.Builder
		for _, q := range []string{
			`SELECT group_concat(sql, ';') FROM sqlite_master WHERE tbl_name LIKE 'frames%'`,
			`SELECT group_concat(seq || ' ' || request || ' ' || frame || ' ' || state || ' ' || ifnull(origin, '-'), ';') FROM frames`,
			`SELECT value FROM store_meta WHERE key = 'frames_settled'`,
			`SELECT group_concat(frame) FROM frames_held`,
			`SELECT max(version) FROM schema_migrations`,
		} {
			var v string
			if err := w.QueryRow(q).Scan(&v); err != nil {
				t.Fatalf("%s: %s: %v", what, q, err)
			}
			b.WriteString(v + "\n")
		}
		return b.String()
	}
	was := snapshot("before")
	w.Close()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSQLiteMigration20KilledMidway$")
	// 20 is the first migration the child applies.
	point := "migration#1"
	cmd.Env = append(os.Environ(), "REACH_TEST_MIGRATE_DIR="+dir, crashpoint.Env+"="+point)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hit := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "reach: crash point "+point) {
				hit <- true
				return
			}
		}
		hit <- false
	}()
	select {
	case ok := <-hit:
		cmd.Process.Kill() // SIGKILL, the child stopped at the point
		if !ok {
			cmd.Wait()
			t.Fatal("the child ended without reaching the crash point")
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never reached the crash point")
	}
	cmd.Wait()
	w, err = OpenFile(dir + "/" + DefaultFile)
	if err != nil {
		t.Fatal(err)
	}
	if now := snapshot("after the kill"); now != was {
		t.Fatalf("the store after a kill mid-migration:\n%s\nwant it as before:\n%s", now, was)
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	for req, want := range map[string]int{"r1": 3, "r2": 1} {
		if fs, err := s.RequestFrames(t.Context(), req); err != nil || len(fs) != want {
			t.Errorf("RequestFrames(%s) after the migration = %d frames, %v; want %d", req, len(fs), err, want)
		}
	}
	if open, err := s.OpenFrames(t.Context()); err != nil || len(open) != 2 {
		t.Errorf("OpenFrames after the migration = %d, %v; want the held frame and the one above the mark", len(open), err)
	}
}
