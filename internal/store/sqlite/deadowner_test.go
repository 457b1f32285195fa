package sqlite

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// A store of schema 18 (before a dead letter kept its owner) holding dead
// letters, one taken, one settled, gets the columns when a newer binary
// opens it: they read as of no owner (their requests say whose they are),
// as they were otherwise, and one added after keeps its owner, listed and
// taken.
func TestSQLiteMigratesDeadLetterOwner(t *testing.T) {
	dir := t.TempDir()
	w := oldDatabase(t, dir, 18)
	at := time.Now().Add(-time.Minute).UnixNano()
	if _, err := w.Exec(`INSERT INTO dead_letters (request, frame, tool, args, error, state, note, created, updated, taker, taken) VALUES
		('r1', '01', 'refund', '{"a":1}', 'down', 'resolved', 'by hand', ?, ?, '', 0), ('r2', '01', 'refund', NULL, 'down', 'taken', '', ?, ?, 'a/1', ?)`,
		at, at, at, at, at); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s := openSQLite(t, dir, nil)
	ctx := t.Context()
	if v, err := s.SchemaVersion(ctx); err != nil || v < 19 {
		t.Fatalf("SchemaVersion = %d, %v; want 19 or later", v, err)
	}
	ls, err := s.ListDeadLetters(ctx, "")
	if err != nil || len(ls) != 2 || ls[0].Principal != "" || ls[0].Tenant != "" || ls[0].Note != "by hand" || string(ls[0].Args) != `{"a":1}` ||
		ls[1].State != store.DeadTaken || ls[1].Taker != "a/1" || ls[1].Tenant != "" {
		t.Fatalf("the dead letters after the migration = %+v, %v; want both of no owner, as they were", ls, err)
	}
	id, err := s.AddDeadLetter(ctx, &store.DeadLetter{Request: "r1", Frame: "02", Tool: "refund", Principal: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.TakeDeadLetter(ctx, id, "b/1")
	if err != nil || got.Principal != "alice" || got.Tenant != "acme" {
		t.Fatalf("taking the dead letter added after the migration = %+v, %v; want it of alice in acme", got, err)
	}
	if ls, err := s.ListDeadLetters(ctx, store.DeadTaken); err != nil || len(ls) != 2 || ls[1].Principal != "alice" || ls[1].Tenant != "acme" {
		t.Errorf("the taken dead letters = %+v, %v; want r2's and the one of alice in acme", ls, err)
	}
}
