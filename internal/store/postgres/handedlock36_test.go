package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/store"
)

// TestPostgresHandedClaimAndSweepTakeOneOrder36: a claim of a handed task
// and another instance's write of handed tasks at once (its sweep of the
// expired records, which the claim, on a clock a little behind, still
// reads as live) lock the task's records in the same order, so that
// neither waits for the other while holding what the other waits for. The
// records lie in the table as updates leave them (the task's second call's
// record before its first's, another record between): the test holds
// that other record (an explicit lock on a session of its own) until the
// write has locked the second call's record and waits on it, lets the
// claim begin (it locks the first call's record and waits on the second),
// then lets the write go on. Before, the write went on to the first call's
// record, held by the claim: a deadlock, one of the two refused (40P01,
// answered 503 and retried by the client).
func TestPostgresHandedClaimAndSweepTakeOneOrder36(t *testing.T) {
	a, b, url := twoPostgres(t)
	ctx := t.Context()
	t0 := time.Now()
	expires := t0.Add(time.Minute)
	for _, id := range []string{"r-turn", "r-other"} {
		if err := a.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", State: "running", Started: t0}); err != nil {
			t.Fatal(err)
		}
	}
	gate, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close(context.Background())
	// In the table's order: the task's second call's record, another task's
	// record, the task's first call's record (as the claim of a first
	// sub-agent's turn, an update, leaves it).
	for _, r := range []struct {
		digest, request string
		nth             int
	}{{"d-task", "r-turn", 1}, {"d-gate", "r-other", 0}, {"d-task", "r-turn", 0}} {
		if _, err := gate.Exec(ctx, `INSERT INTO handed_tasks (digest, request, principal, tenant, frame, tool, created, expires, nth)
			VALUES ($1, $2, 'alice', '', 'f', 'research', $3, $4, $5)`, r.digest, r.request, store.UnixNano(t0), store.UnixNano(expires), r.nth); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := gate.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM handed_tasks WHERE digest = 'd-gate' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	watch := openPostgres(t, url)
	// waiting waits until n sessions wait for a lock, or done is closed.
	waiting := func(n int, done <-chan struct{}) {
		t.Helper()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			default:
			}
			var w int
			if err := watch.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&w); err != nil {
				t.Fatal(err)
			}
			if w >= n {
				return
			}
		}
	}
	// Another instance's write, two minutes on: its sweep deletes the
	// task's records, expired at its time.
	putDone, putErr := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(putDone)
		putErr <- a.PutHandedTasks(ctx, []*store.HandedTask{{Digest: "d-next", Request: "r-other", Principal: "alice", Frame: "g", Tool: "research",
			Created: t0.Add(2 * time.Minute), Expires: t0.Add(4 * time.Minute)}}, 100)
	}()
	waiting(1, putDone)
	// The claim, on a clock at t0: the task's records are live there.
	claimDone, claimErr := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(claimDone)
		_, err := b.ClaimHandedTask(ctx, "alice", "", "d-task", t0)
		claimErr <- err
	}()
	select {
	case <-putDone:
		waiting(1, claimDone) // the claim waits for the write only until its commit
	default:
		waiting(2, claimDone)
	}
	tx.Rollback(ctx)
	<-putDone
	<-claimDone
	if err := <-putErr; err != nil {
		t.Errorf("the write of handed tasks: %v; want it done", err)
	}
	if err := <-claimErr; err != nil {
		t.Errorf("the claim: %v; want it done", err)
	}
}
