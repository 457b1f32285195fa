package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// The leaves a life records (LeavePartAt, schema 16) go with it, whether
// it is forgotten by the others (Forget) or departs (Depart: a clean
// shutdown, or a fenced life): no join of that life can come after. They
// stayed after a Depart, one row a stray leave for every life that ever
// ran, which no sweep removed.
func TestPartLeavesGoWithTheirLife(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"a/1", "b/1"} {
		if _, _, err := s.Beat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRequest(ctx, &store.Request{ID: "req-p", State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"a/1", "b/1"} {
		if _, err := s.LeavePartAt(ctx, "req-p", o, ttl, 3); err != nil {
			t.Fatal(err)
		}
	}
	count := func(owner string) int {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM part_leaves WHERE owner = $1`, owner).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count("a/1") != 1 || count("b/1") != 1 {
		t.Fatalf("part_leaves: a/1 %d, b/1 %d; want one leave each", count("a/1"), count("b/1"))
	}
	if err := s.Depart(ctx, "a/1"); err != nil {
		t.Fatal(err)
	}
	if n := count("a/1"); n != 0 {
		t.Errorf("the leaves of a departed life: %d rows; want none", n)
	}
	if n := count("b/1"); n != 1 {
		t.Errorf("the leaves of a life still running after another departed: %d rows; want 1", n)
	}
}
