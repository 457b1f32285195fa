package reach_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentreach/reach"
)

// A tool whose implementation asks the model, which picks the same tool with
// the same arguments again: the second entry is refused before it runs.
func ExampleRuntime_Call() {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{
		Name:       "format_answer",
		Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			// The implementation calls the model; the model picks format_answer again.
			mctx, m, err := rt.BeginModel(ctx, "gpt-4o")
			if err != nil {
				return nil, err
			}
			defer m.EndModel(reach.TokenUsage{Input: 300, Output: 20})
			res := rt.Call(mctx, &reach.Call{ID: "call_2", Tool: "format_answer", Arguments: args})
			fmt.Println(res.Status)
			fmt.Println(res.ModelText())
			return json.RawMessage(`"formatted"`), nil
		},
	})
	ctx, req, _ := rt.Begin(context.Background(), nil)
	defer req.End()
	mctx, turn, _ := rt.BeginModel(ctx, "gpt-4o")
	res := rt.Call(mctx, &reach.Call{ID: "call_1", Tool: "format_answer", Arguments: json.RawMessage(`{"text": "refund policy"}`)})
	turn.EndModel(reach.TokenUsage{Input: 1200, Output: 80})
	fmt.Println(res.Status, string(res.Data))
	// Output:
	// refused
	// This would create a cycle: format_answer {"text":"refund policy"} is already on your call stack at depth 1 (called by the main agent).
	// Choose a different approach or answer with what you have.
	// success "formatted"
}

// Chain composes middleware so that the first listed runs first.
func ExampleChain() {
	trace := func(name string) reach.Middleware {
		return func(next reach.Handler) reach.Handler {
			return func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
				fmt.Println("enter", name)
				defer fmt.Println("leave", name)
				return next(ctx, c)
			}
		}
	}
	h := reach.Chain(func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
		fmt.Println("tool", c.Tool)
		return &reach.Result{Status: reach.StatusSuccess}, nil
	}, trace("a"), trace("b"))
	h(context.Background(), &reach.Call{Tool: "t"})
	// Output:
	// enter a
	// enter b
	// tool t
	// leave b
	// leave a
}

// A sub-agent gets a carved share of what its parent has left, never a
// fresh default; its spend counts for both.
func ExampleRuntime_Delegate() {
	rt := reach.New(nil)
	ctx, parent, _ := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{Turns: 10, ToolCalls: 40, Tokens: 50000}})
	defer parent.End()
	_, turn, _ := rt.BeginModel(ctx, "gpt-4o")
	turn.EndModel(reach.TokenUsage{Input: 10000})
	_, sub, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "researcher", Task: "find sources", Fraction: 0.5})
	defer sub.End()
	b := sub.Budget()
	fmt.Println(b.Turns, b.ToolCalls, b.Tokens)
	// Output: 4 20 20000
}

// Stop cascades to sub-requests; a cancelled handler sees why.
func ExampleRequest_Stop() {
	rt := reach.New(nil)
	ctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r1"})
	sctx, _, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "worker"})
	req.Stop(reach.Cancel, "operator", "runaway spend")
	<-sctx.Done()
	fmt.Println(context.Cause(sctx))
	_, _, err := rt.BeginModel(sctx, "gpt-4o")
	fmt.Println(err.(*reach.Error).Code)
	// Output:
	// request r1 stopped (cancel) by operator: runaway spend
	// stopped_cancel
}

// A read whose upstream is down: after Failures transient failures in a
// row its breaker opens, and a call fails at once (nothing runs) — or,
// with a fallback, the fallback answers, and the result says so.
func ExampleTool_fallback() {
	rt := reach.New(&reach.Options{DisableLoopGuard: true})
	rt.MustRegister(
		reach.Tool{Name: "kb__search", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 1},
			Breaker: &reach.BreakerPolicy{Failures: 2},
			Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				return nil, &reach.ToolError{Type: "unavailable", Message: "upstream kb is not reachable: connection refused"}
			},
			Fallback: []reach.Followup{{Tool: "mirror__search", Args: `{"query": "{args.q}"}`}}},
		reach.Tool{Name: "mirror__search", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"hits": ["refund policy"]}`), nil
		}},
	)
	ctx, req, _ := rt.Begin(context.Background(), nil)
	defer req.End()
	var res *reach.Result
	for i := range 3 {
		res = rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: "kb__search", Arguments: json.RawMessage(`{"q": "refunds"}`)})
	}
	fmt.Println(rt.Breaker(reach.BreakerTool, "kb__search", nil).State())
	fmt.Println(res.Status, res.Fallback, string(res.Data))
	fmt.Println(res.Notes[0])
	// Output:
	// open
	// success mirror__search {"hits": ["refund policy"]}
	// kb__search failed (it is unavailable: its circuit breaker is open); this result comes from its fallback mirror__search, not from kb__search.
}
