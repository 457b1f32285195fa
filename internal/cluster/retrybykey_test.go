package cluster

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
)

// TestRetryByKeyOnAnotherInstance: a call made on instance a and retried
// by its idempotency key on instance b (the client's connection moved) is
// answered there from the shared record, runs once, and spends the
// request's tool-call budget once on both counts of it: the shared ledger,
// debited as a call is dispatched, and b's own meter, which the admit
// stage counts before the key is looked up. The budget's second call then
// runs on b, and a third is refused on a, the ledger's 2 of 2 spent.
// Before, b's meter counted each retry, and b refused the third retry
// (and the second call) as over budget while the ledger held one call.
func TestRetryByKeyOnAnotherInstance(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var runs atomic.Int32
	var rts [2]*reach.Runtime
	for i, c := range []*Cluster{a, b} {
		rec := c.Recorder(durable.New(c.st, nil, nil))
		rts[i] = reach.New(&reach.Options{Requests: rec, Middleware: []reach.Middleware{c.Admission()},
			Idempotency: store.NewIdempotency(c.st, nil), DisableLoopGuard: true})
		rts[i].MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				return args, nil
			}})
	}
	pay := func(rt *reach.Runtime, ctx context.Context, id, key, args string) *reach.Result {
		return rt.Call(ctx, &reach.Call{ID: id, Tool: "pay", IdempotencyKey: key, Arguments: json.RawMessage(args)})
	}
	actx, _, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{ToolCalls: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if r := pay(rts[0], actx, "c1", "k1", `{"amount":1}`); r.IsError() || r.Replayed {
		t.Fatalf("the first call on a: %s replayed %v %+v", r.Status, r.Replayed, r.Error)
	}
	bctx, breq, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if r := pay(rts[1], bctx, "c1", "k1", `{"amount":1}`); r.IsError() || !r.Replayed {
			t.Fatalf("retry %d on b: %s replayed %v %+v; want the recorded result", i, r.Status, r.Replayed, r.Error)
		}
	}
	if r := pay(rts[1], bctx, "c2", "k2", `{"amount":2}`); r.IsError() || r.Replayed {
		t.Fatalf("the second call on b: %s replayed %v %+v; want it run", r.Status, r.Replayed, r.Error)
	}
	r := pay(rts[0], actx, "c3", "k3", `{"amount":3}`)
	if !r.IsError() || r.Error.Type != reach.TypeBudget || r.Error.Suggestion == "" {
		t.Fatalf("the third call on a: %s %+v; want refused by the tool-call budget, saying what to do", r.Status, r.Error)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("pay ran %d times, want 2", n)
	}
	if sp, err := a.st.Spent(ctx, "p"); err != nil || sp.ToolCalls != 2 {
		t.Errorf("p has spent %+v (%v) on the ledger; want 2 tool calls", sp, err)
	}
	if u := breq.Usage().ToolCalls; u != 1 {
		t.Errorf("b counts %d tool calls of p, want 1 (the call it ran)", u)
	}
}
