package reach_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// askOnce is an Approver and ApprovalFinder: the first call of a set of
// arguments is asked (pending), every later one approved; Asked says
// whether those arguments were asked.
type askOnce struct {
	mu    sync.Mutex
	asked map[string]bool
}

func (a *askOnce) Approve(_ context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asked[string(c.Args())] {
		return reach.Permit, nil
	}
	a.asked[string(c.Args())] = true
	return reach.NeedsApproval, nil
}

func (a *askOnce) Asked(_ context.Context, c *reach.Call) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked[string(c.Args())]
}

// asksFor needs approval for high-risk calls while needs is set, and
// permits every other call.
type asksFor struct{ needs bool }

func (a *asksFor) Authorize(_ context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	if a.needs && c.Access() == reach.HighRisk {
		return reach.NeedsApproval, nil
	}
	return reach.Permit, nil
}

// TestApprovedCallPastSpentBudget: with a tool-call budget of 2, a
// high-risk call asked for approval (counted), then a read that spends
// the budget: the approved call, repeated with its arguments written
// otherwise (normalized, they name the same approval), runs, uncounted;
// a read after is refused over budget, and so is a call the Approver
// never asked, before it is asked. A call asked before that no longer
// needs approval (the policy changed) is counted as any other, and
// refused over budget.
func TestApprovedCallPastSpentBudget(t *testing.T) {
	az := &asksFor{needs: true}
	rt := reach.New(&reach.Options{Authorizer: az, Approver: &askOnce{asked: map[string]bool{}}})
	runs := 0
	rt.MustRegister(
		reach.Tool{Name: "wipe", Access: reach.HighRisk, Reentrancy: reach.Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				runs++
				return json.RawMessage(`"wiped"`), nil
			}},
		reach.Tool{Name: "look", Access: reach.Read, Reentrancy: reach.Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"seen"`), nil }},
	)
	ctx, req := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{ToolCalls: 2}})
	call := func(id, tool, args string) *reach.Result {
		return rt.Call(ctx, &reach.Call{ID: id, Tool: tool, Arguments: json.RawMessage(args)})
	}
	if res := call("w1", "wipe", `{"a":1,"b":2}`); res.Status != reach.StatusPending {
		t.Fatalf("the high-risk call: %s %+v; want pending", res.Status, res.Error)
	}
	if res := call("l1", "look", `{}`); res.Status != reach.StatusSuccess {
		t.Fatalf("the read: %s %+v", res.Status, res.Error)
	}
	if res := call("l2", "look", `{"x":1}`); res.Error == nil || res.Error.Code != "budget_tool_calls" {
		t.Fatalf("a read past the budget: %s %+v; want budget_tool_calls", res.Status, res.Error)
	}
	if res := call("w2", "wipe", `{"b":2, "a":1}`); res.Status != reach.StatusSuccess || runs != 1 {
		t.Fatalf("the approved call repeated past the spent budget: %s %+v, %d runs; want it run once", res.Status, res.Error, runs)
	}
	if u := req.Usage().ToolCalls; u != 2 {
		t.Errorf("tool calls counted: %d; want 2 (the approved call counted when it was asked)", u)
	}
	if res := call("w3", "wipe", `{"a":3}`); res.Error == nil || res.Error.Code != "budget_tool_calls" {
		t.Fatalf("a high-risk call never asked, past the budget: %s %+v; want budget_tool_calls", res.Status, res.Error)
	}
	az.needs = false
	if res := call("w4", "wipe", `{"a":1,"b":2}`); res.Error == nil || res.Error.Code != "budget_tool_calls" || runs != 1 {
		t.Fatalf("a call asked before that needs no approval now, past the budget: %s %+v, %d runs; want budget_tool_calls", res.Status, res.Error, runs)
	}
}
