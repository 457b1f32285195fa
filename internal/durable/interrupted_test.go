package durable

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestInterruptedRequestStaysInterrupted: after a crash, the request that
// was running is interrupted for good. Its completed write is undone, and
// the write's key answers a retry with "undone" instead of its old
// success; the request is refused, with its cause, whether the runtime
// restored it (the first restart) or only the store knows it (a later
// one); nothing overwrites its stored state and cause.
func TestInterruptedRequestStaysInterrupted(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	booked, undone := 0, 0
	newRuntime := func() *reach.Runtime {
		tools := bookTools(func(string) { undone++ })
		tools[0].Func = func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { booked++; return a, nil }
		return durableRuntime(st, tools...)
	}
	book := func(rt *reach.Runtime, ctx context.Context) *reach.Result {
		return rt.Call(ctx, &reach.Call{ID: "b1", Tool: "book", IdempotencyKey: "trip-leg-1", Arguments: json.RawMessage(`{"ref":"x"}`)})
	}
	old := newRuntime()
	rctx, _, err := old.Begin(ctx, &reach.RequestOptions{ID: "trip", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := book(old, rctx); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// The gateway dies here, trip still running.
	rt := newRuntime()
	rep, err := Recover(ctx, st, rt, nil)
	if err != nil || len(rep.Interrupted) != 1 || undone != 1 {
		t.Fatalf("recover: %+v, %v; undone %d", rep, err, undone)
	}
	stored, err := st.GetRequest(ctx, "trip")
	if err != nil || stored.State != "interrupted" || !strings.Contains(string(stored.Cause), "1 of its completed writes were undone") {
		t.Fatalf("the stored request: %+v (%v)", stored, err)
	}
	if r, ok := rt.Lookup("trip"); !ok || r.State() != "interrupted" || r.Principal() != "alice" {
		t.Fatalf("the runtime does not keep trip as interrupted: %v, %v", r, ok)
	}
	refused := func(rt *reach.Runtime) {
		t.Helper()
		_, _, err := rt.Begin(ctx, &reach.RequestOptions{ID: "trip", Principal: "alice"})
		e, ok := errors.AsType[*reach.Error](err)
		if !ok || e.Code != "request_interrupted" || !strings.Contains(e.Message, "1 of its completed writes were undone") {
			t.Errorf("Begin(trip) = %v; want request_interrupted with its cause", err)
		}
	}
	refused(rt)
	// A later restart: only the store knows trip.
	later := newRuntime()
	if rep, err := Recover(ctx, st, later, nil); err != nil || len(rep.Interrupted) != 0 {
		t.Fatalf("second recover: %+v, %v", rep, err)
	}
	refused(later)
	again, _ := st.GetRequest(ctx, "trip")
	if again.State != "interrupted" || string(again.Cause) != string(stored.Cause) || !again.Ended.Equal(stored.Ended) {
		t.Errorf("the stored request changed: %+v, was %+v", again, stored)
	}
	// The undone write's key: its retry, in a new request, is told, and runs nothing.
	nctx, req, err := later.Begin(ctx, &reach.RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	res := book(later, nctx)
	if res.Error == nil || res.Error.Code != "undone" || !strings.Contains(res.Error.Message, "(trip)") ||
		!strings.Contains(res.Error.Suggestion, "new idempotency key") {
		t.Errorf("the retry of the undone write: %s %+v; want the error undone", res.Status, res.Error)
	}
	if booked != 1 || undone != 1 {
		t.Errorf("booked %d, undone %d; want 1 and 1", booked, undone)
	}
}
