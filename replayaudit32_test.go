package reach_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

// TestReplayedCallAuditedAsReplayed: a write answered from the idempotency
// record of its first run is audited as such (guard idempotency, code
// replayed), not as a second completed call an auditor would count as a
// second run. The first run's event carries no such mark.
func TestReplayedCallAuditedAsReplayed(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	log, err := audit.New(ctx, mem, &audit.Options{Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	rt := reach.New(&reach.Options{Recorder: reach.Recorders(log), DisableLoopGuard: true})
	runs := 0
	rt.MustRegister(reach.Tool{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`{"refunded":true}`), nil
		}})
	rctx, _ := begin(t, rt, &reach.RequestOptions{ID: "r-replay"})
	for i, id := range []string{"c1", "c2"} {
		res := rt.Call(rctx, &reach.Call{ID: id, Tool: "refund", IdempotencyKey: "k1", Arguments: json.RawMessage(`{"order":"1001"}`)})
		if res.Status != reach.StatusSuccess || res.Replayed != (i == 1) {
			t.Fatalf("call %s: %s replayed %v %v", id, res.Status, res.Replayed, res.Error)
		}
	}
	if runs != 1 {
		t.Fatalf("refund ran %d times, want 1", runs)
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.Recent(ctx, mem, 100)
	if err != nil {
		t.Fatal(err)
	}
	var calls []*audit.Event
	for _, e := range evs {
		if e.Kind == "tool" && e.Name == "refund" && e.Decision == "completed" {
			calls = append(calls, e)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d completed refund events, want 2: %+v", len(calls), calls)
	}
	if calls[0].Code != "" {
		t.Errorf("the first run's event has code %q, want none", calls[0].Code)
	}
	if c := calls[1]; c.Code != audit.ReplayedCode || c.Guard != "idempotency" || c.Message == "" {
		t.Errorf("the replayed call's event: guard %q code %q message %q; want idempotency/replayed, saying the tool did not run again", c.Guard, c.Code, c.Message)
	}
}
