package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// A database of schema 29 (before a dead letter kept its owner) gets the
// columns when a gateway opens it: its dead letters read as of no owner
// (their requests say whose they are), and one added after keeps its
// owner, listed and taken.
func TestPostgresMigratesDeadLetterOwner(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `ALTER TABLE dead_letters DROP COLUMN principal, DROP COLUMN tenant;
		DELETE FROM schema_migrations WHERE version = 30`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).UnixNano()
	if _, err := s.pool.Exec(ctx, `INSERT INTO dead_letters (request, frame, tool, state, created, updated) VALUES
		('r1', '01', 'refund', 'resolved', $1, $1), ('r2', '01', 'refund', 'open', $1, $1)`, at); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	if v, err := s2.SchemaVersion(ctx); err != nil || v < 30 {
		t.Fatalf("SchemaVersion = %d, %v; want 30 or later", v, err)
	}
	ls, err := s2.ListDeadLetters(ctx, "")
	if err != nil || len(ls) != 2 || ls[0].Principal != "" || ls[0].Tenant != "" || ls[1].State != store.DeadOpen {
		t.Fatalf("the dead letters after the migration = %+v, %v; want both of no owner, r2's open", ls, err)
	}
	id, err := s2.AddDeadLetter(ctx, &store.DeadLetter{Request: "r1", Frame: "02", Tool: "refund", Principal: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.TakeDeadLetter(ctx, id, "a/1")
	if err != nil || got.Principal != "alice" || got.Tenant != "acme" {
		t.Fatalf("taking the dead letter added after the migration = %+v, %v; want it of alice in acme", got, err)
	}
	if ls, err := s2.ListDeadLetters(ctx, store.DeadTaken); err != nil || len(ls) != 1 || ls[0].Principal != "alice" || ls[0].Tenant != "acme" {
		t.Errorf("the taken dead letters = %+v, %v; want the one of alice in acme", ls, err)
	}
}
