package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/jackc/pgx/v5"
)

// A hand-off made on b (its sub-request "c", a sub-agent's, owned under
// b's part of its manager's request "p"), whose sub-agent works on through
// a: b's part of p leaves (its idle gap, its MCP session's end as b shuts
// down: the gateway ends the part, then the sub-requests it owns under
// it), and with it b's part of c. That is no end of the hand-off: p runs
// on through a, and so does c, as it would on one instance, where the
// sub-agent's calls keep the request running. c is not stored ended, and
// a's part of it runs on. Before, b's end of its part was taken for the
// hand-off's end (postgres.Store.SettleHandOff): every instance ended its
// part of c, and the sub-agent's next call through a was refused
// request_ended while its manager waited for its answer.
func TestReview38PartLeavingEndsNoHandOff(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	for i, c := range []*Cluster{a, b} {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
		if err := c.Start(rts[i], nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, p, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	bctx, pOnB, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := rts[1].Delegate(bctx, &reach.Delegation{Agent: "one", Task: "t", ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	_, cOnA, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "c", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer cOnA.End()

	// As the gateway ends a request it owns (link.Owned: Sweep, End,
	// EndSession): the request first, then the sub-requests under it.
	pOnB.End()
	sub.End()

	settled, err := a.st.Settled(ctx, a.Owner())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(settled, "c") {
		t.Errorf("the hand-off's sub-request is stored ended by its client once b's part of its manager's request left; want it running on a")
	}
	if cOnA.State() != reach.RequestRunning {
		t.Errorf("a's part of the hand-off: %s, want running", cOnA.State())
	}
	if err := cOnA.Context().Err(); err != nil {
		t.Errorf("a's part of the hand-off: its context ended (%v), want its calls running on", context.Cause(cOnA.Context()))
	}
}

// A hand-off from a request with a budget reads what every instance spent
// of it (Recorder.SharedUsage) within the bound every other read and write
// of the shared store has (instance_ttl): a store that does not answer (a
// lock held on the ledger here, a connection cut off with no reset) leaves
// the hand-off to what this instance's part spent, logged, or to a refusal
// of the store's, not waiting for good. Before, the read took the
// hand-off's context, which no deadline bounds (an A2A task's, the
// manager's request's): the hand-off, and the caller's message or the
// sub-agent's first turn, hung until the store answered.
func TestReview38SharedSpendReadIsBounded(t *testing.T) {
	ctx := context.Background()
	url, a, _ := twoInstances(t, 2*time.Second)
	rt := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil)), DisableLoopGuard: true})
	pctx, p, err := rt.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{Turns: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, sub, err := rt.Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t"})
		if sub != nil {
			sub.End()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("the hand-off while the store did not answer: %v", err)
		tx.Rollback(ctx)
	case <-time.After(time.Minute):
		t.Errorf("the hand-off still waits for the store a minute on, its bound 2 s")
		tx.Rollback(ctx)
		<-done
	}
}

// A hand-off's end is not stored as its sub-request's end everywhere
// (postgres.Store.SettleHandOff) while a request above it is stopped: the
// stop of the request it was made in, stored through another instance and
// not yet heard by the one whose hand-off ended, undoes the whole chain
// below it, the sub-agent's finished work too, as the sub-request's own
// stop does. Before, only the sub-request's own stop was looked at: the
// sub-request was stored ended by its client, and an instance that ran a
// part of it and died before it heard the stop had its writes left done
// by the recovery (a request its client ended is ended, nothing undone).
func TestReview38HandOffsEndSettlesNothingUnderAStop(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	rt := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil)), DisableLoopGuard: true})
	pctx, p, err := rt.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	sctx, c1, err := rt.Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t", ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.End()
	_, c2, err := rt.Delegate(sctx, &reach.Delegation{Agent: "two", Task: "u", ID: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.End()
	if _, err := b.st.StopRequest(ctx, "p", int(reach.Cancel), []byte(`{"by":"bob"}`)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c1", "c2"} {
		if got, err := a.st.SettleHandOff(ctx, id); err != nil || got {
			t.Errorf("SettleHandOff(%s) under the stopped p: %v (%v), want false", id, got, err)
		}
	}
}
