package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// An agent configured under two names at one endpoint is one agent to the
// graph check: a hand-off through the second name, while the first is on
// the delegation stack, re-enters it (A -> B -> A'), and the same task
// handed to it again is a cycle, whatever the names say. Endpoints that
// differ only in how they are spelled (the scheme's or host's case, a
// default port, a trailing slash) are one endpoint; two endpoints are two
// agents, as two names without one are.
func TestCore37AgentBehindTwoNames(t *testing.T) {
	for _, tc := range []struct {
		name       string
		first, end string // the endpoints of the first and the last hop
		re         reach.Reentrancy
		task       string // the last hop's task (the first's is "plan the trip")
		want       string
	}{
		{"one endpoint, two names", "http://agents.example:8080/planner", "http://agents.example:8080/planner", "", "check it", "agent_reentrancy"},
		{"one endpoint spelled two ways", "HTTP://Agents.Example:80/planner/", "http://agents.example/planner", "", "check it", "agent_reentrancy"},
		{"one endpoint, reentrant, the same task", "http://agents.example/planner", "http://agents.example/planner", reach.Reentrant, "Plan  the trip", "delegation_cycle"},
		{"one endpoint, reentrant, another task", "http://agents.example/planner", "http://agents.example/planner", reach.Reentrant, "check it", ""},
		{"two endpoints", "http://agents.example/planner", "http://agents.example/reviewer", "", "check it", ""},
		{"no endpoints: the names decide", "", "", "", "check it", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := reach.New(nil)
			ctx, _ := begin(t, rt, &reach.RequestOptions{Agent: "root"})
			ctx, a, err := rt.Delegate(ctx, &reach.Delegation{Agent: "planner", Endpoint: tc.first, Task: "plan the trip", Reentrancy: tc.re})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.End)
			ctx, b, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Endpoint: "http://other.example", Task: "do it"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.End)
			_, c, err := rt.Delegate(ctx, &reach.Delegation{Agent: "planner-eu", Endpoint: tc.end, Task: tc.task, Reentrancy: tc.re})
			if c != nil {
				t.Cleanup(c.End)
			}
			if got := codeOf(err); got != tc.want {
				t.Fatalf("A -> B -> A': %v (code %q), want code %q", err, got, tc.want)
			}
		})
	}
}

// The same across runtimes: a hand-off placed under a stack another
// runtime runs (its ancestry adopted, as an instance does for a call that
// names its parent there) re-enters the agent the other runtime handed a
// task to, under another name at its endpoint.
func TestCore37AgentBehindTwoNamesAcrossRuntimes(t *testing.T) {
	one, two := reach.New(nil), reach.New(nil)
	ctx, _ := begin(t, one, &reach.RequestOptions{Agent: "root"})
	_, a, err := one.Delegate(ctx, &reach.Delegation{Agent: "planner", Endpoint: "http://agents.example/planner", Task: "plan the trip"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.End)
	stack, err := json.Marshal(a.DelegateFrame().Ancestry())
	if err != nil {
		t.Fatal(err)
	}
	var back []reach.Ancestor
	if err := json.Unmarshal(stack, &back); err != nil {
		t.Fatal(err)
	}
	ctx2, req2 := begin(t, two, &reach.RequestOptions{Agent: "root"})
	top, err := two.AdoptAncestry(req2, back)
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := two.Delegate(reach.WithParent(ctx2, top), &reach.Delegation{Agent: "planner-eu", Endpoint: "http://Agents.Example/planner/", Task: "check it"})
	if c != nil {
		t.Cleanup(c.End)
	}
	if got := codeOf(err); got != "agent_reentrancy" {
		t.Fatalf("A (there) -> A' (here): %v (code %q), want agent_reentrancy", err, got)
	}
}

// slowBegins is a request store whose record of a sub-request's begin
// waits for hold to close (a shared store's write takes that long): a stop
// of its parent lands meanwhile.
type slowBegins struct {
	began chan struct{} // closed at the sub-request's begin
	hold  chan struct{}
}

func (b *slowBegins) RequestBegan(ctx context.Context, r *reach.Request) error {
	if r.Parent() != nil {
		close(b.began)
		<-b.hold
	}
	return nil
}
func (b *slowBegins) RequestStopped(context.Context, *reach.Request, reach.Cause) {}
func (b *slowBegins) RequestEnded(context.Context, *reach.Request)                {}

// A stop racing a hand-off: the sub-request the hand-off begins is either
// refused, or stopped with the request above it (its own state stopped,
// its cause the stop's, its context done), never left running under a
// stopped parent. The stop's walk of the parent's sub-requests missed one
// begun between the hand-off's admit and its join of its parent's list
// (its begin being recorded meanwhile): it stayed running, its stop never
// recorded nor its undos run, and it ended completed.
func TestCore37StopRacingDelegate(t *testing.T) {
	for _, mode := range []reach.StopMode{reach.Soft, reach.Cancel} {
		t.Run(mode.String(), func(t *testing.T) {
			store := &slowBegins{began: make(chan struct{}), hold: make(chan struct{})}
			rt := reach.New(&reach.Options{Requests: store})
			ctx, req := begin(t, rt, nil)
			type result struct {
				sub *reach.Request
				err error
			}
			got := make(chan result, 1)
			go func() {
				_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "worker", Task: "work"})
				got <- result{sub, err}
			}()
			wait, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			select {
			case <-store.began:
			case <-wait.Done():
				t.Fatal("the sub-request's begin was never recorded")
			}
			req.Stop(mode, "user", "enough")
			close(store.hold)
			var r result
			select {
			case r = <-got:
			case <-wait.Done():
				t.Fatal("Delegate did not return")
			}
			if r.err != nil {
				return // refused: nothing escaped
			}
			defer r.sub.End()
			want := reach.RequestState("stopped_" + mode.String())
			if c := r.sub.StopCause(); c == nil || r.sub.State() != want {
				t.Fatalf("the sub-request begun as its parent stopped is %s (cause %v), want %s", r.sub.State(), c, want)
			}
			if mode >= reach.Cancel {
				select {
				case <-r.sub.Context().Done():
				case <-wait.Done():
					t.Fatal("the sub-request's context was not cancelled")
				}
			}
			if !slices.ContainsFunc(req.Children(), func(c *reach.Request) bool { return c == r.sub }) {
				t.Error("the sub-request is not among its parent's")
			}
		})
	}
}

// Sub-agents that each ask for more than their parent has, and spend at
// once: each is carved no more than the parent has left, and together,
// nested two deep and all calling at once, they never pass the parent's
// tool-call budget (every admit counts against every meter above).
func TestCore37ConcurrentSubAgentsKeepTheParentsBudget(t *testing.T) {
	rt := reach.New(nil)
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "work", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return args, nil
		}})
	const limit = 10
	ctx, parent := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{ToolCalls: limit}})
	var wg sync.WaitGroup
	var made atomic.Int32
	for i := range 6 {
		sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: fmt.Sprintf("w%d", i), Task: "work", Budget: &reach.Budget{ToolCalls: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.End()
		if b := sub.Budget().ToolCalls; b > limit {
			t.Fatalf("sub-agent %d was carved %d tool calls of its parent's %d", i, b, limit)
		}
		nctx, nested, err := rt.Delegate(sctx, &reach.Delegation{Agent: fmt.Sprintf("n%d", i), Task: "more", Fraction: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer nested.End()
		for _, c := range []context.Context{sctx, nctx} {
			for j := range 2 * limit {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rt.Call(c, &reach.Call{Tool: "work", Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d,"j":%d}`, i, j))})
					// Refused past the budget, or once the refusals in a
					// row stop the request.
					if r.Status == reach.StatusSuccess {
						made.Add(1)
					}
				}()
			}
		}
	}
	wg.Wait()
	if n := made.Load(); n > limit || runs.Load() != n {
		t.Fatalf("%d calls succeeded and %d ran under a parent's budget of %d tool calls", n, runs.Load(), limit)
	}
	if u := parent.Usage().ToolCalls; u > limit {
		t.Fatalf("the parent spent %d tool calls of %d", u, limit)
	}
}

// A non-reentrant tool entered again through a nested path: its call hands
// a task to a sub-agent, whose model turn calls a second tool, which calls
// the first again: the re-entry is refused, naming the depth of the call
// it re-enters. A reentrant tool may be entered so with other arguments.
func TestCore37NonReentrantThroughADelegation(t *testing.T) {
	rt := reach.New(nil)
	var inner *reach.Result
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			inner = rt.Call(ctx, &reach.Call{Tool: "ledger", Arguments: json.RawMessage(`{"step":2}`)})
			return args, nil
		}})
	rt.MustRegister(reach.Tool{Name: "ledger", Access: reach.Read, // non_reentrant, the default
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			if string(args) != `{"step":1}` {
				return args, nil
			}
			sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "check the ledger"})
			if err != nil {
				return nil, err
			}
			defer sub.End()
			mctx, m, err := rt.BeginModel(sctx, "test-model")
			if err != nil {
				return nil, err
			}
			defer m.EndModel(reach.TokenUsage{})
			r := rt.Call(mctx, &reach.Call{Tool: "lookup", Arguments: json.RawMessage(`{}`)})
			if r.Status != reach.StatusSuccess {
				return nil, fmt.Errorf("lookup: %s %+v", r.Status, r.Error)
			}
			return args, nil
		}})
	ctx, _ := begin(t, rt, nil)
	turn(t, rt, ctx, func(ctx context.Context) {
		if r := rt.Call(ctx, &reach.Call{Tool: "ledger", Arguments: json.RawMessage(`{"step":1}`)}); r.Status != reach.StatusSuccess {
			t.Fatalf("the outer ledger call: %s %+v", r.Status, r.Error)
		}
	})
	if inner == nil || inner.Status != reach.StatusRefused || inner.Error.Code != "reentrancy" {
		t.Fatalf("ledger entered again through helper -> lookup: %+v, want refused reentrancy", inner)
	}
}

// Hand-offs nest on the stack as tool calls do, and the depth budget bounds
// them: two reentrant agents handing each other new tasks (B -> C -> B ->
// C ..., each task another, no tool call in between, as A2A agents calling
// each other through reach do) are refused once the chain passes the depth
// budget, with a refusal that says so. Before, a hand-off took its parent
// frame's depth: such a chain nested without bound, until its wall clock.
func TestCore37HandOffsNestWithinTheDepthBudget(t *testing.T) {
	rt := reach.New(nil)
	ctx, _ := begin(t, rt, &reach.RequestOptions{Agent: "root", Budget: &reach.Budget{Depth: 4}})
	var err error
	hops := 0
	for ; hops < 50; hops++ {
		var sub *reach.Request
		ctx, sub, err = rt.Delegate(ctx, &reach.Delegation{Agent: []string{"B", "C"}[hops%2], Task: fmt.Sprintf("step %d: refine the draft", hops),
			Reentrancy: reach.Reentrant})
		if err != nil {
			break
		}
		t.Cleanup(sub.End)
	}
	if hops != 4 || codeOf(err) != "budget_depth" {
		t.Fatalf("hand-off %d: %v (code %q), want the 5th refused budget_depth", hops+1, err, codeOf(err))
	}
	if e, _ := errors.AsType[*reach.Error](err); !strings.Contains(e.Message, "hand-off") || e.Suggestion == "" {
		t.Errorf("refusal %q / %q: want one that names the hand-offs and what to do", e.Message, e.Suggestion)
	}
}

// A cycle across runtimes: the hand-off of a task to a reentrant agent
// that a stack another runtime runs (its ancestry adopted, as an instance
// does for a hand-off that names its parent there) already handed it is a
// cycle, and a keyed agent re-entered there with the same key breaks its
// contract, as on one runtime. An adopted frame has its hashes, not its
// task or metadata: they were compared by those alone, and matched nothing.
func TestCore37AgentCycleAcrossRuntimes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, last reach.Delegation
		want        string
	}{
		{"reentrant, the same task", reach.Delegation{Agent: "planner", Task: "Plan the trip", Reentrancy: reach.Reentrant},
			reach.Delegation{Agent: "planner", Task: "plan  the trip.", Reentrancy: reach.Reentrant}, "delegation_cycle"},
		{"reentrant, another task", reach.Delegation{Agent: "planner", Task: "Plan the trip", Reentrancy: reach.Reentrant},
			reach.Delegation{Agent: "planner", Task: "book the hotel", Reentrancy: reach.Reentrant}, ""},
		{"keyed, the same key", reach.Delegation{Agent: "clerk", Task: "one", Reentrancy: reach.Keyed, Key: []string{"order"}, Metadata: json.RawMessage(`{"order":7}`)},
			reach.Delegation{Agent: "clerk", Task: "two", Reentrancy: reach.Keyed, Key: []string{"order"}, Metadata: json.RawMessage(`{"order":7.0,"x":1}`)}, "agent_keyed_reentrancy"},
		{"keyed, another key", reach.Delegation{Agent: "clerk", Task: "one", Reentrancy: reach.Keyed, Key: []string{"order"}, Metadata: json.RawMessage(`{"order":7}`)},
			reach.Delegation{Agent: "clerk", Task: "two", Reentrancy: reach.Keyed, Key: []string{"order"}, Metadata: json.RawMessage(`{"order":8}`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one, two := reach.New(nil), reach.New(nil)
			ctx, _ := begin(t, one, &reach.RequestOptions{Agent: "root"})
			ctx, a, err := one.Delegate(ctx, &tc.first)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.End)
			_, b, err := one.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "do it"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.End)
			stack, err := json.Marshal(b.DelegateFrame().Ancestry())
			if err != nil {
				t.Fatal(err)
			}
			var back []reach.Ancestor
			if err := json.Unmarshal(stack, &back); err != nil {
				t.Fatal(err)
			}
			ctx2, req2 := begin(t, two, &reach.RequestOptions{Agent: "executor"})
			top, err := two.AdoptAncestry(req2, back)
			if err != nil {
				t.Fatal(err)
			}
			_, c, err := two.Delegate(reach.WithParent(ctx2, top), &tc.last)
			if c != nil {
				t.Cleanup(c.End)
			}
			if got := codeOf(err); got != tc.want {
				t.Fatalf("A (there) -> B (there) -> A (here): %v (code %q), want code %q", err, got, tc.want)
			}
			if e, ok := errors.AsType[*reach.Error](err); ok && (strings.Contains(e.Message, "working on ,") || strings.Contains(e.Message, "on  up") || !strings.Contains(e.Message, "by the root agent")) {
				t.Errorf("refusal %q: want it to name a task, and who handed it (the root agent)", e.Message)
			}
		})
	}
}
