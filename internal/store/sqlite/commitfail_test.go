package sqlite

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// TestWriterFailedCommitLeavesNoTransaction: a COMMIT that fails (here a
// deferred foreign key, which SQLite checks at COMMIT and which leaves the
// transaction open) fails the writes of its batch, writes nothing of
// them, and leaves no transaction open on the writer's connection: the
// next batch begins, and commits.
func TestWriterFailedCommitLeavesNoTransaction(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	// The writer is idle: its connection has no transaction, where the
	// pragma would be ignored.
	for _, q := range []string{
		`PRAGMA foreign_keys = ON`,
		`CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
	} {
		if _, err := s.wc.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	defer s.wc.ExecContext(ctx, `PRAGMA foreign_keys = OFF`)
	orphan := &sqlcore.Write{Run: func(b sqlcore.Batch, w *sqlcore.Write) {
		b.Exec(w, sqlcore.StPutFrame, []any{"", "", "", "", "", "executing", nil, nil, nil, 0, 0, "r", "lost"}, nil)
		b.(*batch).run(w, func() error {
			if _, err := b.(*batch).s.wc.ExecContext(bg, `INSERT INTO child (id, parent) VALUES (1, 42)`); err != nil {
				return &dbError{err}
			}
			return nil
		})
	}}
	for range 3 { // a failed COMMIT, again and again: each leaves the connection usable
		err := s.W.Do(ctx, orphan)
		if err == nil || !strings.Contains(err.Error(), "committing") {
			t.Fatalf("a batch whose COMMIT fails returned %v, want the COMMIT's error", err)
		}
		if err := s.PutFrame(ctx, &store.Frame{Request: "r", Frame: "0000000000000001", State: "executing", Started: t0}); err != nil {
			t.Fatalf("the write after a failed COMMIT: %v", err)
		}
	}
	frames, err := s.RequestFrames(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].Frame != "0000000000000001" {
		t.Errorf("frames stored: %+v; want only the write after the failed COMMIT", frames)
	}
	var n int
	if err := s.wc.QueryRowContext(ctx, `SELECT count(*) FROM child`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows of the failed batch: %d, %v; want none", n, err)
	}
}
