package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// recorder refuses the ids in refuse as a store refuses those of
// interrupted requests.
type recorder struct {
	refuse map[string]reach.Cause
	began  atomic.Int32
}

func (r *recorder) Executing(context.Context, *reach.Checkpoint) error { return nil }
func (r *recorder) Ended(context.Context, *reach.Checkpoint)           {}
func (r *recorder) RequestBegan(_ context.Context, q *reach.Request) error {
	if c, ok := r.refuse[q.ID()]; ok {
		return &reach.InterruptedError{Cause: c}
	}
	r.began.Add(1)
	return nil
}
func (r *recorder) RequestStopped(context.Context, *reach.Request, reach.Cause) {}
func (r *recorder) RequestEnded(context.Context, *reach.Request)                {}

// A request that a restart interrupted stays interrupted: restored, it
// refuses every call and every Begin of its id with request_interrupted,
// keeps its cause, and ending or stopping it changes nothing. A
// RequestRecorder that knows the id refuses a Begin of it the same way.
func TestInterruptedRequestStaysInterrupted(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cause := reach.Cause{By: "reach", Reason: "the gateway restarted while it ran; 1 of its completed writes were undone", At: at}
	rec := &recorder{refuse: map[string]reach.Cause{"old": cause}}
	rt := reach.New(&reach.Options{Checkpoints: rec, Requests: rec})
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`1`), nil
		}})

	r, err := rt.RestoreInterrupted(&reach.RequestOptions{ID: "trip", Principal: "alice", Tenant: "acme"}, cause)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := rt.Lookup("trip")
	if !ok || got != r || r.State() != "interrupted" || r.Principal() != "alice" || r.Tenant() != "acme" {
		t.Fatalf("Lookup(trip) = %v, %v (state %s)", got, ok, r.State())
	}
	res := rt.Call(r.Context(), &reach.Call{ID: "c1", Tool: "book", Arguments: json.RawMessage(`{}`)})
	if res.Status != reach.StatusRefused || res.Error.Code != "request_interrupted" || res.Error.Type != reach.TypeInterrupted ||
		!strings.Contains(res.Error.Message, "Request trip was interrupted at 2026-12-01T10:00:00Z: the gateway restarted") ||
		!strings.Contains(res.Error.Suggestion, "new request") {
		t.Errorf("a call in the interrupted request: %s %+v", res.Status, res.Error)
	}
	r.End()
	r.Stop(reach.Isolate, "op", "tidying")
	if r.State() != "interrupted" || r.StopCause().Reason != cause.Reason {
		t.Errorf("after End and Stop: state %s, cause %+v; want it interrupted as it was", r.State(), r.StopCause())
	}
	for _, id := range []string{"trip", "old"} {
		_, _, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: id})
		e, ok := errors.AsType[*reach.Error](err)
		if !ok || e.Code != "request_interrupted" || !errors.Is(err, reach.ErrRefused) || !strings.Contains(e.Message, "Request "+id) {
			t.Errorf("Begin(%s) = %v; want a request_interrupted refusal", id, err)
		}
	}
	if _, ok := rt.Lookup("old"); ok {
		t.Error("the refused request is kept among the requests")
	}
	if got, _ := rt.Lookup("trip"); got != r {
		t.Error("a refused Begin replaced the interrupted request")
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("book ran %d times", n)
	}
	// Other ids begin as usual.
	if _, _, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "new"}); err != nil || rec.began.Load() != 1 {
		t.Errorf("Begin(new) = %v, recorded %d", err, rec.began.Load())
	}
}

// A delegation whose id the recorder refuses fails, and its delegate frame
// says why.
func TestDelegationToInterruptedID(t *testing.T) {
	rec := &recorder{refuse: map[string]reach.Cause{"sub": {By: "reach", Reason: "the gateway restarted while it ran"}}}
	rt := reach.New(&reach.Options{Checkpoints: rec, Requests: rec})
	ctx, req := begin(t, rt, nil)
	_, _, err := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "t", ID: "sub"})
	if e, ok := errors.AsType[*reach.Error](err); !ok || e.Code != "request_interrupted" {
		t.Fatalf("Delegate = %v; want request_interrupted", err)
	}
	if len(req.Children()) != 0 {
		t.Errorf("the refused sub-request is a child: %v", req.Children())
	}
	fs := req.Frames()
	if len(fs) != 1 || fs[0].State() != reach.Refused {
		t.Errorf("frames %v; want one refused delegate frame", fmt.Sprint(fs))
	}
}
