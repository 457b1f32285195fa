package reach

import (
	"context"
	"encoding/json"
	"testing"
)

// TestHeldEndTimerStoppedWithTheEnd: a stopped request's end waits for its
// write in flight, bounded by a timer (boundHeldEnd); the write completes,
// its undo runs and the end is recorded. The timer is stopped then, and
// the runtime keeps no reference to the request for it. Before, the timer
// was left to fire (the write's tool's time, minutes with default
// settings) and held the ended request until it did.
func TestHeldEndTimerStoppedWithTheEnd(t *testing.T) {
	rt := New(nil)
	entered, release := make(chan struct{}), make(chan struct{})
	rt.MustRegister(
		Tool{Name: "book", Access: Write, Reentrancy: Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				close(entered)
				<-release // ignores its context
				return json.RawMessage(`{}`), nil
			},
			Undo: &Followup{Tool: "unbook", Args: `{}`}},
		Tool{Name: "unbook", Access: Write, Reentrancy: Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	ctx, r, err := rt.Begin(t.Context(), &RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result, 1)
	go func() { done <- rt.Call(ctx, &Call{ID: "w", Tool: "book", Arguments: json.RawMessage(`{}`)}) }()
	<-entered
	r.Stop(Cancel, "operator", "enough")
	r.End()
	if _, ok := rt.heldEnds.Load(r); !ok {
		t.Fatal("r's end, held for its write in flight, has no bound")
	}
	close(release)
	if res := <-done; res.IsError() {
		t.Fatal(res.ModelText())
	}
	r.settle.Lock()
	owed := r.owed
	r.settle.Unlock()
	if owed != 0 {
		t.Errorf("owed %#x after the write and its undo; want 0", owed)
	}
	if t2, ok := rt.heldEnds.Load(r); ok {
		t.Errorf("the bound of r's end is kept after its end was recorded (its timer still running: %v)", t2.(interface{ Stop() bool }).Stop())
	}
}
