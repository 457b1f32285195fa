package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
)

// A hand-off made on a (its sub-request "c", whose delegate frame a runs)
// and joined on b by a call of its sub-agent there: the hand-off's end on
// a (its agent answered) ends b's part too, as one instance ends a
// hand-off's sub-request for every call in it: b's calls in it are cut
// (its context ends with request_ended), and a further call there is
// refused request_ended. Before, the end left a's part only: b's part ran
// on, its calls admitted under a hand-off that was over, until its idle
// gap ended it.
func TestCore38HandOffsEndReachesItsPartOnAnotherInstance(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	for i, c := range []*Cluster{a, b} {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
		if err := c.Start(rts[i], nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	pctx, p, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{Turns: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	_, sub, err := rts[0].Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t", ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	_, onB, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: "c", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer onB.End()

	sub.EndWith("done")
	select {
	case <-onB.Context().Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("b's part of the hand-off still runs 30 s after the hand-off ended on a (state %s)", onB.State())
	}
	var se *reach.StopError
	if cause := context.Cause(onB.Context()); !errors.As(cause, &se) || se.Cause.Reason != "request ended" {
		t.Errorf("b's part ended with %v, want the request's end", cause)
	}
	if onB.State() != reach.RequestCompleted {
		t.Errorf("b's part: %s, want completed (an end, not a stop)", onB.State())
	}
	for i, rt := range rts {
		if _, again, err := rt.Begin(ctx, &reach.RequestOptions{ID: "c", Principal: "alice"}); err == nil {
			again.End()
			t.Errorf("a call of the ended hand-off's sub-request through instance %d joined it again", i)
		} else if e, ok := errors.AsType[*reach.Error](err); !ok || e.Code != "request_ended" {
			t.Errorf("a call of the ended hand-off's sub-request through instance %d: %v, want request_ended", i, err)
		}
	}
}

// A hand-off made on b from a request that a runs too carves its budget
// from what the request has left on every instance together, as one
// instance carves it from what it has left: p has spent 8 of its 10 turns
// through a, so half of what it has left is 1 turn, and the hand-off made
// on b gets 1, not half of the 10 that b's own part of p has not spent
// (5, which would let the sub-agent take the last turns of its manager).
// Its tool calls and tokens are carved so too.
func TestCore38HandOffCarvedFromWhatEveryInstanceLeft(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	cs := [2]*Cluster{a, b}
	for i, c := range cs {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
	}
	_, p, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{Turns: 10, Tokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	for range 8 {
		if _, _, err := cs[0].AdmitTurn(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs[0].Spend(ctx, p, 600, 0); err != nil {
		t.Fatal(err)
	}
	bctx, onB, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer onB.End()
	_, sub, err := rts[1].Delegate(bctx, &reach.Delegation{Agent: "one", Task: "t", Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.End()
	if got := sub.Budget(); got.Turns != 1 || got.Tokens != 200 {
		t.Errorf("the hand-off's budget: %d turns, %d tokens; want 1 and 200, half of what p has left on both instances (2 turns, 400 tokens)", got.Turns, got.Tokens)
	}
}

// On PostgreSQL, the row of a hand-off's delegate frame, which another
// instance reads for its stack (Frame), is owned by the life that made
// the hand-off while it runs and takes its end once it is over, with its
// stack still there for the instances that read it.
func TestCore38DelegateRowEndsOnPostgres(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	rt := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil)), DisableLoopGuard: true})
	pctx, p, err := rt.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	_, sub, err := rt.Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t", ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	id := sub.DelegateFrame().ID
	row := func() string {
		t.Helper()
		f, err := b.st.FindFrame(ctx, id.String())
		if err != nil {
			t.Fatal(err)
		}
		req, stack, err := b.Frame(ctx, id)
		if err != nil || req != "c" || len(stack) == 0 || stack[0].ID != id {
			t.Errorf("b's read of the delegate frame: %s %v (%v), want request c and its stack", req, stack, err)
		}
		return f.State + " " + f.Owner
	}
	if got, want := row(), "executing "+a.Owner(); got != want {
		t.Errorf("the row while the hand-off runs: %q, want %q", got, want)
	}
	sub.EndWith("done")
	if got, want := row(), "completed "+a.Owner(); got != want {
		t.Errorf("the row once the hand-off is over: %q, want %q", got, want)
	}
}

// A hand-off's end is stored as its sub-request's end everywhere
// (postgres.Store.SettleHandOff) only while it runs with no stop: one
// stopped through another instance, whose stop the instance that made
// the hand-off has not heard yet, stays stopped, its writes for its stop
// to undo, and no instance is told to end its part.
func TestCore38HandOffsEndSettlesNoStoppedSubRequest(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	rt := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil)), DisableLoopGuard: true})
	pctx, p, err := rt.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	for _, id := range []string{"c1", "c2"} {
		_, sub, err := rt.Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t " + id, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.End()
	}
	if _, err := b.st.StopRequest(ctx, "c2", int(reach.Cancel), []byte(`{"by":"bob"}`)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"c1": true, "c2": false, "p": false} {
		if got, err := a.st.SettleHandOff(ctx, id); err != nil || got != want {
			t.Errorf("SettleHandOff(%s): %v (%v), want %v", id, got, err, want)
		}
	}
}

// A hand-off (and a further message to one, Request.Continue) made on b
// from a request whose tokens were spent through a is refused
// budget_tokens, as one instance refuses it: the request's ledger says
// what every instance spent. Before, b admitted it by what its own part
// had spent (nothing), and the agent was handed a task its caller had no
// budget left for.
func TestCore38HandOffRefusedWhenTheRequestSpentItAllElsewhere(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	cs := [2]*Cluster{a, b}
	for i, c := range cs {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
	}
	_, p, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{Tokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.End()
	bctx, onB, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer onB.End()
	_, first, err := rts[1].Delegate(bctx, &reach.Delegation{Agent: "one", Task: "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.End()
	if err := cs[0].Spend(ctx, p, 1000, 0); err != nil {
		t.Fatal(err)
	}
	_, sub, err := rts[1].Delegate(bctx, &reach.Delegation{Agent: "one", Task: "second"})
	if sub != nil {
		sub.End()
	}
	if e, ok := errors.AsType[*reach.Error](err); !ok || e.Code != "budget_tokens" {
		t.Errorf("a hand-off on b after p's tokens were spent through a: %v, want budget_tokens", err)
	}
	done, err := first.Continue(ctx, "and then?")
	if done != nil {
		done("", true)
	}
	if e, ok := errors.AsType[*reach.Error](err); !ok || e.Code != "budget_tokens" {
		t.Errorf("a further message to b's hand-off after p's tokens were spent through a: %v, want budget_tokens", err)
	}
}
