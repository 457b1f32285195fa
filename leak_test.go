package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// After 10,000 calls of every outcome (success, tool failure, timeout,
// refusal, cancellation, a batch with references) no goroutine is left
// behind.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}})
	rt.MustRegister(
		reach.Tool{Name: "ok", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }},
		reach.Tool{Name: "fail", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("boom")
		}},
		reach.Tool{Name: "slow", Reentrancy: reach.Reentrant, Timeout: time.Millisecond, Retry: &reach.RetryPolicy{Attempts: 1},
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}},
	)
	for i := range 10000 {
		id := fmt.Sprint("r", i%50)
		if i%5 == 4 { // stopped below: a stopped request is never begun again
			id = fmt.Sprint("s", i)
		}
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: id, Budget: &reach.Budget{}})
		if err != nil {
			t.Fatal(err)
		}
		switch i % 5 {
		case 0:
			rt.Call(ctx, &reach.Call{ID: "a", Tool: "ok", Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		case 1:
			rt.Call(ctx, &reach.Call{ID: "a", Tool: "fail", Arguments: json.RawMessage(`{}`)})
		case 2:
			if i%100 == 2 {
				rt.Call(ctx, &reach.Call{ID: "a", Tool: "slow", Arguments: json.RawMessage(`{}`)})
			}
		case 3:
			rt.Call(ctx, &reach.Call{ID: "a", Tool: "missing"})
		case 4:
			sctx, _, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "sub"})
			env, _ := reach.DecodeEnvelope([]byte(`{"tool_calls":[{"call_id":"x","tool":"ok","arguments":{"v":1}},{"call_id":"y","tool":"ok","arguments":{"w":{"$ref":"x.v"}}}]}`))
			rt.Batch(sctx, env)
			req.Stop(reach.Cancel, "test", "done")
		}
		req.End()
	}
	// Goroutines end asynchronously (context.AfterFunc, compensation);
	// give them a chance, then compare.
	var now int
	for range 200 {
		runtime.GC()
		if now = runtime.NumGoroutine(); now <= before+2 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("%d goroutines before, %d after:\n%s", before, now, buf[:runtime.Stack(buf, true)])
}
