package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// A store of schema 13 (before the taker of a dead letter was kept) opens
// with its dead letters: the one a crash left taken is listed taken by no
// one (a restart of the folder's one process gives it back, as it did),
// the open one is taken by the life that asks, recorded.
func TestSQLiteMigratesDeadLetterTakers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 13)
	at := time.Now().Add(-time.Minute).UnixNano()
	if _, err := w.Exec(`INSERT INTO dead_letters (request, frame, tool, state, created, updated) VALUES
		('r1', '01', 'refund', 'taken', ?, ?), ('r2', '01', 'refund', 'open', ?, ?)`, at, at, at, at); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s := openSQLite(t, dir, nil)
	ls, err := s.ListDeadLetters(ctx, "")
	if err != nil || len(ls) != 2 || ls[0].State != store.DeadTaken || ls[0].Taker != "" || ls[1].State != store.DeadOpen {
		t.Fatalf("the dead letters after the migration = %+v, %v; want r1's taken by no one recorded, r2's open", ls, err)
	}
	got, err := s.TakeDeadLetter(ctx, ls[1].ID, "reach/2")
	if err != nil || got.Taker != "reach/2" {
		t.Fatalf("taking r2's after the migration = %+v, %v; want it taken by reach/2", got, err)
	}
	if ls, err := s.ListDeadLetters(ctx, store.DeadTaken); err != nil || len(ls) != 2 || ls[1].Taker != "reach/2" {
		t.Errorf("the taken dead letters = %+v, %v; want r2's taken by reach/2", ls, err)
	}
}
