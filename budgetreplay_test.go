package reach_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// TestRetryByKeySpendsOneToolCall: a call retried by its idempotency key,
// as a client is told to retry, is answered from the record of the first
// (nothing runs again) and spends the tool-call budget once, in the
// sub-agent that made it and in its parent. Before, each retry counted
// as a tool call: a sub-agent with a budget of 2 whose client retried its first call
// was refused its second ("2 tool calls made of 2") with one call run.
func TestRetryByKeySpendsOneToolCall(t *testing.T) {
	rt := reach.New(nil)
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return args, nil
		}})
	ctx, parent := begin(t, rt, &reach.RequestOptions{ID: "r1", Budget: &reach.Budget{ToolCalls: 10}})
	sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "payer", Task: "pay bob", Budget: &reach.Budget{ToolCalls: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.End()
	pay := func(id, key, args string) *reach.Result {
		return rt.Call(sctx, &reach.Call{ID: id, Tool: "pay", IdempotencyKey: key, Arguments: json.RawMessage(args)})
	}
	if r := pay("c1", "k1", `{"amount":10}`); r.Status != reach.StatusSuccess || r.Replayed {
		t.Fatalf("the first call: %s replayed %v %+v", r.Status, r.Replayed, r.Error)
	}
	for i := range 4 {
		if r := pay("c1", "k1", `{"amount":10}`); r.Status != reach.StatusSuccess || !r.Replayed {
			t.Fatalf("retry %d: %s replayed %v %+v; want the recorded result", i, r.Status, r.Replayed, r.Error)
		}
	}
	if u := sub.Usage().ToolCalls; u != 1 {
		t.Errorf("the sub-agent spent %d tool calls, want 1 (the call ran once)", u)
	}
	if u := parent.Usage().ToolCalls; u != 1 {
		t.Errorf("the parent spent %d tool calls, want 1", u)
	}
	// The sub-agent's second call runs; its third passes its budget.
	if r := pay("c2", "k2", `{"amount":20}`); r.Status != reach.StatusSuccess || r.Replayed {
		t.Fatalf("the second call: %s replayed %v %+v; want it run", r.Status, r.Replayed, r.Error)
	}
	r := pay("c3", "k3", `{"amount":30}`)
	if r.Status != reach.StatusRefused || r.Error.Code != "budget_tool_calls" || r.Error.Suggestion == "" {
		t.Fatalf("the third call: %s %+v; want refused budget_tool_calls with what to do", r.Status, r.Error)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("pay ran %d times, want 2", n)
	}
	if u := parent.Usage().ToolCalls; u != 2 {
		t.Errorf("the parent spent %d tool calls, want 2", u)
	}
}
