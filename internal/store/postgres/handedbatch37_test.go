package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// TestPostgresHandedBatchesTakeOneOrder37: two instances' batches (the
// writer's group commits: several writes, one implicit transaction) that
// touch the records of two tasks in opposite orders, a claim of one and a
// write of the other in each, never each hold a record the other waits
// for. Instance a's batch claims task x, writes a gate record (held by a
// session of the test's own, so that a waits there holding x's record),
// then writes task y; instance b's batch writes task y, then claims task
// x. Before, b held y's record and waited for x's, a then went on to y's:
// a deadlock, one batch refused (40P01, answered 503 and retried). Every
// batch that touches the table now takes one lock first (an advisory lock
// of the transaction), so the second waits for the first holding nothing.
func TestPostgresHandedBatchesTakeOneOrder37(t *testing.T) {
	a, b, url := twoPostgres(t)
	ctx := t.Context()
	t0 := time.Now()
	expires := t0.Add(time.Minute)
	if err := a.PutRequest(ctx, &store.Request{ID: "r-turn", Principal: "alice", State: "running", Started: t0}); err != nil {
		t.Fatal(err)
	}
	gate, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close(context.Background())
	for _, d := range []string{"d-x", "d-y", "d-gate"} {
		if _, err := gate.Exec(ctx, `INSERT INTO handed_tasks (digest, request, principal, tenant, frame, tool, created, expires, nth)
			VALUES ($1, 'r-turn', 'alice', '', 'f', 'research', $2, $3, 0)`, d, store.UnixNano(t0), store.UnixNano(expires)); err != nil {
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
			time.Sleep(time.Millisecond)
		}
	}
	put := func(r sqlcore.Batch, w *sqlcore.Write, digest string) {
		r.Exec(w, sqlcore.StHandedPut, []any{digest, "r-turn", "alice", "", "f2", "research", nil, store.UnixNano(t0), store.UnixNano(expires), int64(0)}, nil)
	}
	claim := func(r sqlcore.Batch, w *sqlcore.Write, digest string) {
		r.Query(w, sqlcore.StHandedClaim, []any{digest, "alice", "", store.UnixNano(t0)}, func(rows sqlcore.Rows) error {
			for rows.Next() {
			}
			return nil
		})
	}
	// batch runs one batch of s's writer engine, as its writer sends one.
	batch := func(s *Store, steps ...func(sqlcore.Batch, *sqlcore.Write)) (chan struct{}, chan error) {
		done, errc := make(chan struct{}), make(chan error, 1)
		go func() {
			defer close(done)
			tx, err := engine{s}.Begin(false)
			if err != nil {
				errc <- err
				return
			}
			for _, step := range steps {
				step(tx, &sqlcore.Write{})
			}
			_, err = tx.Commit()
			tx.Rollback()
			errc <- err
		}()
		return done, errc
	}
	aDone, aErr := batch(a,
		func(r sqlcore.Batch, w *sqlcore.Write) { claim(r, w, "d-x") },
		func(r sqlcore.Batch, w *sqlcore.Write) { put(r, w, "d-gate") },
		func(r sqlcore.Batch, w *sqlcore.Write) { put(r, w, "d-y") })
	waiting(1, aDone) // a holds x's record and waits at the gate
	bDone, bErr := batch(b,
		func(r sqlcore.Batch, w *sqlcore.Write) { put(r, w, "d-y") },
		func(r sqlcore.Batch, w *sqlcore.Write) { claim(r, w, "d-x") })
	waiting(2, bDone) // b waits too: for x's record (before), or for a's batch
	tx.Rollback(ctx)
	<-aDone
	<-bDone
	if err := <-aErr; err != nil {
		t.Errorf("instance a's batch: %v; want it committed", err)
	}
	if err := <-bErr; err != nil {
		t.Errorf("instance b's batch: %v; want it committed", err)
	}
}
