package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// admittingCounter is a shared counter as the PostgreSQL store keeps it:
// a tool call that passes the admission (Options.Middleware, just before
// its tool) sets its request's count back in the store, and a runtime
// asks it to (ResetRefused) for a step no admission sees.
type admittingCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (a *admittingCounter) NoteRefused(_ context.Context, id string, reset bool) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if reset {
		a.n[id] = 0
	}
	a.n[id]++
	return a.n[id], nil
}

func (a *admittingCounter) ResetRefused(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n[id] = 0
	return nil
}

func (a *admittingCounter) admission(next reach.Handler) reach.Handler {
	return func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
		a.mu.Lock()
		a.n[c.Request().ID()] = 0
		a.mu.Unlock()
		return next(ctx, c)
	}
}

// On a shared counter, what is let through without passing the shared
// admission (a hand-off, a call answered from its record) sets the count
// back as on one runtime: seven refusals, one let through, seven more and
// the request still runs; the eighth since stops it. Before, only a call
// through the admission did, and the first refusal after stopped it.
func TestRefusedInARowSharedLetThroughUnadmitted(t *testing.T) {
	setup := func(t *testing.T) (*reach.Runtime, context.Context, *reach.Request) {
		ctr := &admittingCounter{n: map[string]int64{}}
		rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: ctr, RefusalsShared: true, Middleware: []reach.Middleware{ctr.admission}})
		rt.MustRegister(reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Func: echo})
		ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Agent: "planner"})
		return rt, ctx, req
	}
	deny := func(t *testing.T, rt *reach.Runtime, ctx context.Context, req *reach.Request, n, stopAt int) {
		t.Helper()
		for i := 1; i <= n; i++ {
			if res := call(rt, ctx, "wipe", `{}`); res.Status != reach.StatusRefused {
				t.Fatalf("refusal %d: %+v", i, res)
			}
			if stopped, want := req.StopCause() != nil, i == stopAt; stopped != want {
				t.Fatalf("after refusal %d since the last let through, stopped %v, want %v", i, stopped, want)
			}
		}
	}
	t.Run("hand-off", func(t *testing.T) {
		rt, ctx, req := setup(t)
		deny(t, rt, ctx, req, 7, 0)
		_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "do it"})
		if err != nil {
			t.Fatal(err)
		}
		sub.End()
		deny(t, rt, ctx, req, 8, 8)
	})
	t.Run("replay", func(t *testing.T) {
		rt, ctx, req := setup(t)
		put := func() *reach.Result {
			return rt.Call(ctx, &reach.Call{ID: "p", Tool: "put", IdempotencyKey: "k", Arguments: json.RawMessage(`{"v":1}`)})
		}
		if res := put(); res.Status != reach.StatusSuccess || res.Replayed {
			t.Fatalf("the write: %+v", res)
		}
		deny(t, rt, ctx, req, 7, 0)
		if res := put(); res.Status != reach.StatusSuccess || !res.Replayed {
			t.Fatalf("the write again: %+v, want its record", res)
		}
		deny(t, rt, ctx, req, 8, 8)
	})
	t.Run("through the admission", func(t *testing.T) {
		rt, ctx, req := setup(t)
		deny(t, rt, ctx, req, 7, 0)
		if res := call(rt, ctx, "lookup", `{"q":"a"}`); res.Status != reach.StatusSuccess {
			t.Fatalf("the lookup: %+v", res)
		}
		deny(t, rt, ctx, req, 8, 8)
	})
}

// A hand-off continued (its agent's next message to a sub-agent already
// handed a task, Request.Continue) and let through sets the count back, as
// a new hand-off let through does: seven refusals, the message, and the
// request is stopped at the eighth refusal after it, not the first.
func TestRefusedInARowContinueLetThrough(t *testing.T) {
	rt, _ := streakRuntime(t, nil)
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Agent: "planner"})
	_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "plan it"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.End()
	for range 7 {
		call(rt, ctx, "wipe", `{}`)
	}
	done, err := sub.Continue(ctx, "and the refunds too")
	if err != nil {
		t.Fatalf("the message to the sub-agent: %v", err)
	}
	done("done", false)
	for i := 1; i <= 8; i++ {
		if res := call(rt, ctx, "wipe", `{}`); res.Status != reach.StatusRefused {
			t.Fatalf("refusal %d: %+v", i, res)
		}
		if stopped, want := req.StopCause() != nil, i == 8; stopped != want {
			t.Fatalf("after refusal %d since the message, stopped %v, want %v", i, stopped, want)
		}
	}
}

// failingResetCounter is a shared counter whose ResetRefused fails (the
// store unreachable for that moment); a nil err makes it succeed.
type failingResetCounter struct {
	admittingCounter
	err error
}

func (f *failingResetCounter) ResetRefused(ctx context.Context, id string) error {
	if f.err != nil {
		return f.err
	}
	return f.admittingCounter.ResetRefused(ctx, id)
}

// noteOnlyCounter is a shared counter with no ResetRefused.
type noteOnlyCounter struct{ c *admittingCounter }

func (n noteOnlyCounter) NoteRefused(ctx context.Context, id string, reset bool) (int64, error) {
	return n.c.NoteRefused(ctx, id, reset)
}

func (n noteOnlyCounter) admission(next reach.Handler) reach.Handler { return n.c.admission(next) }

// A hand-off let through on a shared counter that cannot set the count
// back (its ResetRefused failed, or it has none) sets it back at the next
// refusal, as an unshared counter does: seven refusals, the hand-off, and
// the request stops at the eighth refusal after it. Before, the step was
// lost and the first refusal after it stopped the request.
func TestRefusedInARowSharedResetFails(t *testing.T) {
	for name, ctr := range map[string]interface {
		reach.RefusalCounter
		admission(reach.Handler) reach.Handler
	}{
		"reset fails": &failingResetCounter{admittingCounter: admittingCounter{n: map[string]int64{}}, err: errors.New("the store is unreachable")},
		"no reset":    noteOnlyCounter{&admittingCounter{n: map[string]int64{}}},
	} {
		t.Run(name, func(t *testing.T) {
			rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: ctr, RefusalsShared: true, Middleware: []reach.Middleware{ctr.admission}})
			ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Agent: "planner"})
			for range 7 {
				call(rt, ctx, "wipe", `{}`)
			}
			_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "do it"})
			if err != nil {
				t.Fatal(err)
			}
			sub.End()
			for i := 1; i <= 8; i++ {
				if res := call(rt, ctx, "wipe", `{}`); res.Status != reach.StatusRefused {
					t.Fatalf("refusal %d: %+v", i, res)
				}
				if stopped, want := req.StopCause() != nil, i == 8; stopped != want {
					t.Fatalf("after refusal %d since the hand-off, stopped %v, want %v", i, stopped, want)
				}
			}
		})
	}
}
