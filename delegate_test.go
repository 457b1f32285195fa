package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// hop is one hand-off of a chain: to whom, what, under which contract.
type hop struct {
	agent string
	task  string
	re    reach.Reentrancy
	key   []string
	meta  string
	on    reach.Mode
}

// chain hands each hop's task to its agent inside the previous hop's
// sub-request, and returns the last hand-off's error (nil if every hop
// was accepted) with the sub-requests made.
func chain(t *testing.T, rt *reach.Runtime, ctx context.Context, hops ...hop) ([]*reach.Request, error) {
	t.Helper()
	var subs []*reach.Request
	for i, h := range hops {
		sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: h.agent, Task: h.task, Reentrancy: h.re, Key: h.key,
			Metadata: json.RawMessage(h.meta), OnViolation: h.on})
		if err != nil {
			if i != len(hops)-1 {
				t.Fatalf("hop %d (%s) refused: %v", i, h.agent, err)
			}
			return subs, err
		}
		t.Cleanup(sub.End)
		subs = append(subs, sub)
		ctx = sctx
	}
	return subs, nil
}

func codeOf(err error) string {
	if e, ok := errors.AsType[*reach.Error](err); ok {
		return e.Code
	}
	return ""
}

// The graph stage of a hand-off: an agent already on the delegation stack
// is re-entered only as its contract allows, and never with the task it is
// already working on.
func TestDelegationGuards(t *testing.T) {
	for _, tc := range []struct {
		name string
		hops []hop
		want string // the last hop's refusal code, "" if accepted
	}{
		{"non-reentrant by default: A -> B -> A", []hop{{agent: "A", task: "plan"}, {agent: "B", task: "do it"}, {agent: "A", task: "check it"}}, "agent_reentrancy"},
		{"reentrant, another task", []hop{{agent: "A", task: "plan", re: reach.Reentrant}, {agent: "B", task: "do it"}, {agent: "A", task: "check it", re: reach.Reentrant}}, ""},
		{"reentrant, the same task: A -> B -> A", []hop{{agent: "A", task: "plan the trip", re: reach.Reentrant}, {agent: "B", task: "plan the trip"}, {agent: "A", task: "plan the trip", re: reach.Reentrant}}, "delegation_cycle"},
		{"reentrant, the same normalized task: A -> B -> C -> A", []hop{{agent: "A", task: "Verify the order.", re: reach.Reentrant}, {agent: "B", task: "x"}, {agent: "C", task: "y"},
			{agent: "A", task: "  verify\tthe   ORDER ", re: reach.Reentrant}}, "delegation_cycle"},
		{"a cycle is refused whatever the contract says of re-entry", []hop{{agent: "A", task: "t", re: reach.Keyed, key: []string{"k"}, meta: `{"k":1}`}, {agent: "A", task: "t", re: reach.Keyed, key: []string{"k"}, meta: `{"k":2}`}}, "delegation_cycle"},
		{"keyed, the same key", []hop{{agent: "A", task: "one", re: reach.Keyed, key: []string{"order"}, meta: `{"order":7}`}, {agent: "B", task: "b"},
			{agent: "A", task: "two", re: reach.Keyed, key: []string{"order"}, meta: `{"order":7.0,"other":1}`}}, "agent_keyed_reentrancy"},
		{"keyed, another key", []hop{{agent: "A", task: "one", re: reach.Keyed, key: []string{"order"}, meta: `{"order":7}`}, {agent: "B", task: "b"},
			{agent: "A", task: "two", re: reach.Keyed, key: []string{"order"}, meta: `{"order":8}`}}, ""},
		{"warn lets it through", []hop{{agent: "A", task: "t"}, {agent: "A", task: "u", on: reach.Warn}}, ""},
		{"allow does not check", []hop{{agent: "A", task: "t"}, {agent: "A", task: "t", on: reach.Allow}}, ""},
		{"the agent that made the request is on the stack", []hop{{agent: "B", task: "b"}, {agent: "root", task: "r"}}, "agent_reentrancy"},
		{"a reentrant agent that made the request", []hop{{agent: "B", task: "b"}, {agent: "root", task: "r", re: reach.Reentrant}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := reach.New(nil)
			ctx, _ := begin(t, rt, &reach.RequestOptions{Agent: "root"})
			_, err := chain(t, rt, ctx, tc.hops...)
			if got := codeOf(err); got != tc.want {
				t.Fatalf("last hop: %v (code %q), want code %q", err, got, tc.want)
			}
		})
	}
}

// A refused hand-off leaves a refused delegate frame that points at the
// frame it would have re-entered, and a text the agent can act on.
func TestDelegationCycleFrame(t *testing.T) {
	rt := reach.New(nil)
	ctx, req := begin(t, rt, &reach.RequestOptions{Agent: "client"})
	subs, err := chain(t, rt, ctx, hop{agent: "planner", task: "ship order 1001", re: reach.Reentrant},
		hop{agent: "executor", task: "ship it"}, hop{agent: "planner", task: "Ship order 1001", re: reach.Reentrant})
	e, ok := errors.AsType[*reach.Error](err)
	if !ok || e.Type != reach.TypeCycle || e.Guard != "graph" {
		t.Fatalf("err = %v, want a graph cycle", err)
	}
	for _, want := range []string{"agent planner", `"Ship order 1001"`, "handed to it by the main agent"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	if e.Suggestion == "" {
		t.Error("no suggestion")
	}
	fs := subs[1].Frames()
	if len(fs) != 1 || fs[0].Kind != reach.DelegateFrame || fs[0].State() != reach.Refused {
		t.Fatalf("frames of the executor's request = %v", fs)
	}
	first := req.Frames()[0]
	if fs[0].CycleTo() != first || fs[0].SubRequest() != nil || first.SubRequest() != subs[0] {
		t.Errorf("cycle points at %v, want the planner's delegate frame %v", fs[0].CycleTo(), first)
	}
}

// Sibling hand-offs to one agent are not on each other's stack.
func TestDelegationSiblings(t *testing.T) {
	rt := reach.New(nil)
	ctx, _ := begin(t, rt, nil)
	for range 2 {
		_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "a"})
		if err != nil {
			t.Fatal(err)
		}
		sub.End()
	}
}

// A bad contract is an error, not a refusal, and says what is wrong with
// whose contract; a tool's is checked alike.
func TestDelegationContractErrors(t *testing.T) {
	rt := reach.New(nil)
	ctx, _ := begin(t, rt, nil)
	for _, tc := range []struct {
		d    reach.Delegation
		want string
	}{
		{reach.Delegation{Agent: "a", Reentrancy: "sometimes"}, `delegate to a: unknown reentrancy "sometimes"`},
		{reach.Delegation{Agent: "a", Reentrancy: reach.Keyed}, "delegate to a: a keyed agent needs the metadata fields that key it"},
		{reach.Delegation{Agent: "a", Reentrancy: reach.Keyed, Key: []string{"k"}, Metadata: json.RawMessage(`[1]`)}, "delegate to a: the metadata is not a JSON object"},
		{reach.Delegation{Agent: "a", OnViolation: "shrug"}, `delegate to a: unknown mode "shrug"`},
	} {
		if _, _, err := rt.Delegate(ctx, &tc.d); err == nil || codeOf(err) != "" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want a plain error saying %q", tc.d, err, tc.want)
		}
	}
	for _, tc := range []struct {
		tool reach.Tool
		want string
	}{
		{reach.Tool{Name: "t", Func: echo, Reentrancy: "sometimes"}, `tool t: unknown reentrancy "sometimes"`},
		{reach.Tool{Name: "t", Func: echo, Reentrancy: reach.Keyed}, "tool t: a keyed tool needs Key"},
		{reach.Tool{Name: "t", Func: echo, OnViolation: "shrug"}, `tool t: unknown mode "shrug"`},
	} {
		if err := rt.Register(tc.tool); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("registering %+v: err = %v, want %q", tc.tool, err, tc.want)
		}
	}
}

// A keyed agent's refusal names the key's values it clashed on.
func TestDelegationKeyedRefusalSaysTheKey(t *testing.T) {
	rt := reach.New(nil)
	ctx, _ := begin(t, rt, nil)
	_, err := chain(t, rt, ctx, hop{agent: "A", task: "one", re: reach.Keyed, key: []string{"order"}, meta: `{"order":7}`},
		hop{agent: "A", task: "two", re: reach.Keyed, key: []string{"order"}, meta: `{"order":7}`})
	if e, ok := errors.AsType[*reach.Error](err); !ok || e.Code != "agent_keyed_reentrancy" || !strings.Contains(e.Message, "with order=7 up the delegation stack") {
		t.Fatalf("err = %v, want agent_keyed_reentrancy naming order=7", err)
	}
}

// A frame linked under a delegate frame (a call from the delegated agent's
// process naming the frame) belongs to the sub-request: it counts against
// the carved budget, and stopping the sub-request refuses it.
func TestWithParentDelegateFrame(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "t", Reentrancy: reach.Reentrant, Func: echo})
	ctx, req := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{ToolCalls: 10}})
	_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "x", Budget: &reach.Budget{ToolCalls: 1}})
	if err != nil {
		t.Fatal(err)
	}
	df := req.Frames()[0]
	lctx := reach.WithParent(sub.Context(), df)
	if r, _ := reach.RequestFrom(lctx); r != sub {
		t.Fatalf("request under the delegate frame = %v, want the sub-request", r)
	}
	if res := call(rt, lctx, "t", `{"i":1}`); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if res := call(rt, lctx, "t", `{"i":2}`); res.Error == nil || res.Error.Code != "budget_tool_calls" {
		t.Fatalf("second call = %+v, want the sub-agent's budget refusal", res.Error)
	}
	f := sub.Frames()[0]
	if f.Parent != df || f.Request != sub {
		t.Errorf("call frame parent %v request %v", f.Parent, f.Request.ID())
	}
	sub.Stop(reach.Cancel, "test", "enough")
	if res := call(rt, reach.WithParent(ctx, df), "t", `{"i":3}`); res.Status != reach.StatusCancelled {
		t.Errorf("after the stop: %+v", res)
	}
}

// EndWith's verdict is what the delegate frame records and what the loop
// guard compares: the third hand-off of a sub-task that came back with the
// same verdict twice is refused, quoting it.
func TestEndWithVerdict(t *testing.T) {
	rt := reach.New(nil)
	ctx, req := begin(t, rt, nil)
	for i := range 3 {
		_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "verifier", Task: "verify order 1001"})
		if i == 2 {
			if codeOf(err) != "loop_delegation" || !strings.Contains(err.Error(), "REJECTED: no tracking number") {
				t.Fatalf("third hand-off: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("hand-off %d: %v", i, err)
		}
		sub.EndWith("REJECTED: no tracking number")
	}
	if s := req.Frames()[0].Summary(); s != "REJECTED: no tracking number" {
		t.Errorf("delegate frame summary = %q", s)
	}
}
