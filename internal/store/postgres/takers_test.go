package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// A database of schema 12 (before the taker of a dead letter was kept)
// gets the columns when a gateway opens it: the dead letter it left taken
// is listed taken by no one (the recovery gives it back after ten
// minutes, as before), and the open one is taken by the life that asks,
// recorded, until it is given back.
func TestPostgresMigratesDeadLetterTakers(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `ALTER TABLE dead_letters DROP COLUMN taker, DROP COLUMN taken;
		DELETE FROM schema_migrations WHERE version = 13`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).UnixNano()
	if _, err := s.pool.Exec(ctx, `INSERT INTO dead_letters (request, frame, tool, state, created, updated) VALUES
		('r1', '01', 'refund', 'taken', $1, $1), ('r2', '01', 'refund', 'open', $1, $1)`, at); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	ls, err := s2.ListDeadLetters(ctx, "")
	if err != nil || len(ls) != 2 || ls[0].State != store.DeadTaken || ls[0].Taker != "" || ls[1].State != store.DeadOpen {
		t.Fatalf("the dead letters after the migration = %+v, %v; want r1's taken by no one recorded, r2's open", ls, err)
	}
	got, err := s2.TakeDeadLetter(ctx, ls[1].ID, "a/1")
	if err != nil || got.Taker != "a/1" {
		t.Fatalf("taking r2's after the migration = %+v, %v; want it taken by a/1", got, err)
	}
	if ls, err := s2.ListDeadLetters(ctx, store.DeadTaken); err != nil || len(ls) != 2 || ls[1].Taker != "a/1" {
		t.Errorf("the taken dead letters = %+v, %v; want r2's taken by a/1", ls, err)
	}
	got.State = store.DeadOpen
	if err := s2.UpdateDeadLetter(ctx, got); err != nil {
		t.Fatal(err)
	}
	if ls, err := s2.ListDeadLetters(ctx, store.DeadOpen); err != nil || len(ls) != 1 || ls[0].Taker != "" {
		t.Errorf("the open dead letters once r2's is given back = %+v, %v; want it with no taker", ls, err)
	}
}
