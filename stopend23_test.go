package reach_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestStopOfAnEndedRequestUndoesNothing: a request that booked something
// and ended (completed) is over: a Stop of it changes nothing, its state
// stays completed and its undo does not run. Its sub-request that ended
// while it ran is undone by its stop, as before (a stop undoes the chain
// below it, a sub-agent's finished work too), while a Stop of that ended
// sub-request itself changes nothing. Before, Stop of the ended request
// ran its undo and showed it stopped_cancel.
func TestStopOfAnEndedRequestUndoesNothing(t *testing.T) {
	rt, undone := bookingRuntime(t, nil)
	book := func(ctx context.Context, id string) {
		t.Helper()
		if res := rt.Call(ctx, &reach.Call{ID: id, Tool: "book", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusSuccess {
			t.Fatalf("book %s: %s %+v", id, res.Status, res.Error)
		}
	}
	waitUndone := func(want int32) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); undone.Load() < want && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // an undo too many would show by now
		if n := undone.Load(); n != want {
			t.Fatalf("undos run: %d; want %d", n, want)
		}
	}

	ctx, req := begin(t, rt, nil)
	book(ctx, "b1")
	req.End()
	req.Stop(reach.Cancel, "test", "too late")
	if s := req.State(); s != reach.RequestCompleted || req.StopCause() != nil {
		t.Fatalf("an ended request after a stop: %s, cause %v; want completed, none", s, req.StopCause())
	}
	waitUndone(0)

	pctx, parent := begin(t, rt, nil)
	sctx, sub, err := rt.Delegate(pctx, &reach.Delegation{Agent: "booker", Task: "book"})
	if err != nil {
		t.Fatal(err)
	}
	book(sctx, "s1")
	sub.End()
	sub.Stop(reach.Isolate, "test", "the sub-request alone")
	if s := sub.State(); s != reach.RequestCompleted {
		t.Fatalf("an ended sub-request after its own stop: %s; want completed", s)
	}
	waitUndone(0)
	parent.Stop(reach.Cancel, "test", "the chain")
	if s := sub.State(); s != reach.RequestStoppedCancel {
		t.Fatalf("the ended sub-request after its parent's stop: %s; want %s", s, reach.RequestStoppedCancel)
	}
	waitUndone(1)
}
