package reach_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// A middleware that lets a tool finish when its caller goes away (it
// hands the tool a context without the caller's cancel) runs under a
// context that is not done when the caller's is. A write with no key of its client's (its key derived, cutoff.go) whose
// caller went away before its tool started is then answered as
// cancelled, its tool not run, and the runtime does not panic: before,
// the runtime took the cause of the middleware's context, which had
// none, and its message dereferenced nil.
func TestCutOffDispatchUnderDetachedMiddleware(t *testing.T) {
	var cancelCaller context.CancelFunc
	detach := func(next reach.Handler) reach.Handler {
		return func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
			cancelCaller() // the caller goes away as the call reaches the tool
			return next(context.WithoutCancel(ctx), c)
		}
	}
	rt := reach.New(&reach.Options{Middleware: []reach.Middleware{detach}, DisableLoopGuard: true})
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{}`), nil
		}})
	rctx, _, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(rctx)
	cancelCaller = cancel
	res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"amount":1}`)})
	if res.Status == reach.StatusSuccess || res.Error == nil {
		t.Fatalf("a write whose caller went away before its tool started: %s %+v; want it not run", res.Status, res.Error)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("pay ran %d times, want 0", n)
	}
}
