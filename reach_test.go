package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// begin starts a request and ends it with the test.
func begin(t *testing.T, rt *reach.Runtime, o *reach.RequestOptions) (context.Context, *reach.Request) {
	t.Helper()
	ctx, req, err := rt.Begin(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(req.End)
	return ctx, req
}

// turn runs f inside one model frame.
func turn(t *testing.T, rt *reach.Runtime, ctx context.Context, f func(ctx context.Context)) {
	t.Helper()
	mctx, m, err := rt.BeginModel(ctx, "test-model")
	if err != nil {
		t.Fatalf("BeginModel: %v", err)
	}
	f(mctx)
	m.EndModel(reach.TokenUsage{Input: 10, Output: 5})
}

func call(rt *reach.Runtime, ctx context.Context, tool, args string) *reach.Result {
	return rt.Call(ctx, &reach.Call{ID: tool, Tool: tool, Arguments: json.RawMessage(args)})
}

// nested returns a ToolFunc that asks the model (a nested model frame) and
// lets pick choose the next call, whose result it returns.
func nested(rt *reach.Runtime, pick func(ctx context.Context, args json.RawMessage) *reach.Result) reach.ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		mctx, m, err := rt.BeginModel(ctx, "inner-model")
		if err != nil {
			return nil, err
		}
		defer m.EndModel(reach.TokenUsage{Input: 5, Output: 5})
		res := pick(mctx, args)
		if res.IsError() {
			return json.Marshal(res.Error.ModelText())
		}
		return res.Data, nil
	}
}

func echo(ctx context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }

// Seed 000: format_answer -> model -> search_kb -> model -> format_answer is
// refused at the second entry, with the cycle text.
func TestCycleThroughTheModel(t *testing.T) {
	rt := reach.New(nil)
	var second *reach.Result
	rt.MustRegister(
		reach.Tool{Name: "search_kb", Reentrancy: reach.Reentrant, Func: nested(rt, func(ctx context.Context, args json.RawMessage) *reach.Result {
			return call(rt, ctx, "format_answer", `{"text": "refund policy"}`)
		})},
		reach.Tool{Name: "format_answer", Reentrancy: reach.Reentrant, Func: nested(rt, func(ctx context.Context, args json.RawMessage) *reach.Result {
			if f, _ := reach.FrameFrom(ctx); f.Depth > 1 {
				return &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`"done"`)}
			}
			second = call(rt, ctx, "search_kb", `{ "query" : "refund policy" }`)
			return second
		})},
	)
	ctx, req := begin(t, rt, nil)
	var first *reach.Result
	turn(t, rt, ctx, func(ctx context.Context) {
		first = call(rt, ctx, "format_answer", `{"text":"refund policy"}`)
	})
	if first.IsError() {
		t.Fatalf("outer call failed: %s", first.ModelText())
	}
	_ = req
	// format_answer(depth1) -> search_kb(depth2) -> format_answer(depth3, same args): cycle.
	var refused *reach.Frame
	for _, f := range req.Frames() {
		if f.State() == reach.Refused {
			refused = f
		}
	}
	if refused == nil {
		t.Fatalf("no frame was refused; frames: %v", names(req.Frames()))
	}
	e := refused.Err()
	if e.Code != "cycle" || !errors.Is(e, reach.ErrRefused) {
		t.Fatalf("refusal = %+v, want code cycle", e)
	}
	want := `This would create a cycle: format_answer {"text":"refund policy"} is already on your call stack at depth 1 (called by the main agent).`
	if e.Message != want {
		t.Errorf("message:\n got %s\nwant %s", e.Message, want)
	}
	if !strings.Contains(e.ModelText(), "Choose a different approach or answer with what you have.") {
		t.Errorf("model text lacks the suggestion: %s", e.ModelText())
	}
	if refused.CycleTo() == nil || refused.CycleTo().Name != "format_answer" || refused.CycleTo().Depth != 1 {
		t.Errorf("CycleTo = %v, want the depth-1 format_answer", refused.CycleTo())
	}
}

func names(fs []*reach.Frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%s:%s", f.Kind, f.Name, f.State()))
	}
	return out
}

// The exact cycle of the issue: search_kb -> model -> format_answer ->
// model -> search_kb with the same query.
func TestCycleMessageNamesCaller(t *testing.T) {
	rt := reach.New(nil)
	var inner *reach.Result
	rt.MustRegister(
		reach.Tool{Name: "lookup", Reentrancy: reach.Reentrant, Func: nested(rt, func(ctx context.Context, _ json.RawMessage) *reach.Result {
			return call(rt, ctx, "format_answer", `{"style":"short"}`)
		})},
		reach.Tool{Name: "format_answer", Reentrancy: reach.Reentrant, Func: nested(rt, func(ctx context.Context, _ json.RawMessage) *reach.Result {
			return call(rt, ctx, "search_kb", `{"query":"refund policy"}`)
		})},
		reach.Tool{Name: "search_kb", Reentrancy: reach.Reentrant, Func: nested(rt, func(ctx context.Context, _ json.RawMessage) *reach.Result {
			if f, _ := reach.FrameFrom(ctx); f.Depth == 2 {
				return call(rt, ctx, "format_answer", `{"style":"other"}`)
			}
			inner = call(rt, ctx, "search_kb", `{"query":"refund policy"}`)
			return inner
		})},
	)
	ctx, _ := begin(t, rt, nil)
	// lookup(1) -> format_answer(2)... we want search_kb at depth 2 called by format_answer:
	// lookup(1) -> format_answer(2) -> search_kb(3) -> search_kb again: cycle at depth 3 called by format_answer.
	turn(t, rt, ctx, func(ctx context.Context) { call(rt, ctx, "lookup", `{}`) })
	if inner == nil || inner.Error == nil {
		t.Fatalf("inner search_kb was not refused: %+v", inner)
	}
	want := `This would create a cycle: search_kb {"query":"refund policy"} is already on your call stack at depth 3 (called by format_answer).`
	if inner.Error.Message != want {
		t.Errorf("message:\n got %s\nwant %s", inner.Error.Message, want)
	}
}

// Seed 000: a non-reentrant transaction tool entered again from inside
// itself is refused; entering it again after it finished is fine.
func TestNonReentrantTransaction(t *testing.T) {
	rt := reach.New(nil)
	var inner *reach.Result
	rt.MustRegister(
		reach.Tool{Name: "db_transaction", Access: reach.Write, Func: nested(rt, func(ctx context.Context, _ json.RawMessage) *reach.Result {
			inner = call(rt, ctx, "db_transaction", `{"sql":"UPDATE accounts SET x=2"}`)
			return &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`"committed"`)}
		})},
	)
	ctx, _ := begin(t, rt, nil)
	turn(t, rt, ctx, func(ctx context.Context) {
		if res := call(rt, ctx, "db_transaction", `{"sql":"UPDATE accounts SET x=1"}`); res.IsError() {
			t.Fatalf("outer transaction: %s", res.ModelText())
		}
	})
	if inner == nil || inner.Status != reach.StatusRefused || inner.Error.Code != "reentrancy" {
		t.Fatalf("inner = %+v, want a reentrancy refusal", inner)
	}
	if !strings.Contains(inner.Error.Message, "db_transaction is already running on your call stack at depth 1") {
		t.Errorf("message = %q", inner.Error.Message)
	}
	// Sequential use is not re-entry.
	turn(t, rt, ctx, func(ctx context.Context) {
		if res := rt.Call(ctx, &reach.Call{ID: "again", Tool: "db_transaction", Arguments: json.RawMessage(`{"sql":"SELECT 1"}`)}); res.Status == reach.StatusRefused {
			t.Fatalf("a second, sequential transaction was refused: %s", res.ModelText())
		}
	})
}

// A keyed write re-entered with the same path is refused; with another
// path it is allowed.
func TestKeyedReentry(t *testing.T) {
	for _, tc := range []struct {
		innerPath string
		refused   bool
	}{{"/tmp/a.txt", true}, {"/tmp/b.txt", false}} {
		t.Run(tc.innerPath, func(t *testing.T) {
			inner := reenterKeyed(t, "write_file", "path", `{"path":"/tmp/a.txt","content":"x"}`, `{"content":"other","path":"`+tc.innerPath+`"}`)
			if got := inner.Status == reach.StatusRefused; got != tc.refused {
				t.Fatalf("refused = %v, want %v (%s)", got, tc.refused, inner.ModelText())
			}
			if tc.refused && (inner.Error.Code != "keyed_reentrancy" || !strings.Contains(inner.Error.Message, `path="/tmp/a.txt"`)) {
				t.Errorf("error = %+v", inner.Error)
			}
		})
	}
}

// reenterKeyed calls tool (keyed on key) with outer in a model turn; the
// tool calls itself once, with inner, and the result of that inner call is
// returned.
func reenterKeyed(t *testing.T, tool, key, outer, inner string) *reach.Result {
	t.Helper()
	rt := reach.New(nil)
	var res *reach.Result
	depth := 0
	rt.MustRegister(reach.Tool{Name: tool, Access: reach.Write, Reentrancy: reach.Keyed, Key: []string{key},
		Func: nested(rt, func(ctx context.Context, _ json.RawMessage) *reach.Result {
			if depth++; depth > 1 {
				return &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`"ok"`)}
			}
			res = rt.Call(ctx, &reach.Call{ID: "inner", Tool: tool, Arguments: json.RawMessage(inner)})
			return res
		})})
	ctx, _ := begin(t, rt, nil)
	turn(t, rt, ctx, func(ctx context.Context) { call(rt, ctx, tool, outer) })
	return res
}

// TestKeyedReentryNumbers: a numeric key is one key however it is spelled,
// compared exactly: re-entering with 7.0, 7e0 or 70e-1 for 7 is refused, 8
// or 7.5 is not; two 64-bit ids float64 cannot tell apart are two keys,
// 7.5 and 7.50 are one, and so are a large integer and its exponent
// spelling.
func TestKeyedReentryNumbers(t *testing.T) {
	for _, tc := range []struct {
		outer, inner string
		refused      bool
	}{
		{"7", "7.0", true}, {"7", "7e0", true}, {"7", "70e-1", true}, {"7", "7.00000000000000000001", false},
		{"7", "8", false}, {"7", "7.5", false},
		{"1234567890123456789", "1234567890123456790", false},
		{"9007199254740993", "9007199254740992.0", false},
		{"7.5", "7.50", true},
		{"18446744073709551615", "1.8446744073709551615e19", true},
	} {
		inner := reenterKeyed(t, "update_order", "id", `{"id":`+tc.outer+`}`, `{"id":`+tc.inner+`}`)
		if got := inner.Status == reach.StatusRefused; got != tc.refused {
			t.Errorf("id %s under id %s: refused %v, want %v", tc.inner, tc.outer, got, tc.refused)
		}
	}
}

// A legitimate recursive decomposition: a reentrant planner calls itself on
// distinct sub-tasks down to depth 4; nothing is refused.
func TestLegitRecursion(t *testing.T) {
	rt := reach.New(nil)
	var calls atomic.Int32
	plan := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		var a struct{ Task string }
		json.Unmarshal(args, &a)
		f, _ := reach.FrameFrom(ctx)
		if f.Depth >= 4 {
			return json.Marshal("leaf " + a.Task)
		}
		mctx, m, err := rt.BeginModel(ctx, "planner")
		if err != nil {
			return nil, err
		}
		defer m.EndModel(reach.TokenUsage{Input: 1})
		var parts []string
		for i := range 2 {
			res := rt.Call(mctx, &reach.Call{ID: fmt.Sprint(i), Tool: "plan", Arguments: json.RawMessage(fmt.Sprintf(`{"task":"%s.%d"}`, a.Task, i))})
			if res.IsError() {
				return nil, res.Err()
			}
			parts = append(parts, string(res.Data))
		}
		return json.Marshal(parts)
	}
	rt.MustRegister(reach.Tool{Name: "plan", Reentrancy: reach.Reentrant, Func: plan})
	ctx, req := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Depth: 4}})
	turn(t, rt, ctx, func(ctx context.Context) {
		if res := call(rt, ctx, "plan", `{"task":"root"}`); res.IsError() {
			t.Fatalf("decomposition refused: %s", res.ModelText())
		}
	})
	if got := calls.Load(); got != 15 { // 1 + 2 + 4 + 8
		t.Errorf("planner ran %d times, want 15", got)
	}
	if u := req.Usage(); u.MaxDepth != 4 || u.ToolCalls != 15 {
		t.Errorf("usage = %+v, want max depth 4 and 15 tool calls", u)
	}
}

// chainTool calls itself (through the model) until it reaches depth n.
func deepTool(rt *reach.Runtime, name string) reach.ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		var a struct{ Want, Turn int }
		json.Unmarshal(args, &a)
		f, _ := reach.FrameFrom(ctx)
		if f.Depth >= a.Want {
			return json.RawMessage(fmt.Sprintf(`"bottom of turn %d"`, a.Turn)), nil
		}
		mctx, m, err := rt.BeginModel(ctx, "m")
		if err != nil {
			return nil, err
		}
		defer m.EndModel(reach.TokenUsage{})
		res := rt.Call(mctx, &reach.Call{ID: "d", Tool: name, Arguments: json.RawMessage(fmt.Sprintf(`{"want":%d,"at":%d,"turn":%d}`, a.Want, f.Depth+1, a.Turn))})
		if res.IsError() {
			return nil, res.Err()
		}
		return res.Data, nil
	}
}

// Depth and turns are separate budgets: 30 turns at depth 3 and 3 turns at
// depth 10 both pass with budgets that allow exactly that, and one more of
// either is refused with the matching budget error.
func TestTurnsAndDepthAreIndependent(t *testing.T) {
	for _, tc := range []struct{ turns, depth int }{{30, 3}, {3, 10}} {
		t.Run(fmt.Sprintf("%d turns at depth %d", tc.turns, tc.depth), func(t *testing.T) {
			rt := reach.New(nil)
			rt.MustRegister(reach.Tool{Name: "dig", Reentrancy: reach.Reentrant, Func: deepTool(rt, "dig")})
			ctx, req := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Turns: tc.turns, Depth: tc.depth}})
			for i := range tc.turns {
				turn(t, rt, ctx, func(ctx context.Context) {
					res := rt.Call(ctx, &reach.Call{ID: "t", Tool: "dig", Arguments: json.RawMessage(fmt.Sprintf(`{"want":%d,"turn":%d}`, tc.depth, i))})
					if res.IsError() {
						t.Fatalf("turn %d: %s", i, res.ModelText())
					}
				})
			}
			if u := req.Usage(); u.Turns != tc.turns || u.MaxDepth != tc.depth {
				t.Fatalf("usage = %+v", u)
			}
			// One level deeper is refused by the depth budget.
			var deeper *reach.Result
			rt2 := rt
			_ = rt2
			if _, _, err := rt.BeginModel(ctx, "m"); !errors.Is(err, reach.ErrBudget) {
				t.Fatalf("turn %d: err = %v, want the turn budget", tc.turns+1, err)
			} else if e := err.(*reach.Error); e.Code != "budget_turns" {
				t.Fatalf("code = %s, want budget_turns", e.Code)
			}
			ctx2, _ := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Turns: 1, Depth: tc.depth}})
			turn(t, rt, ctx2, func(ctx context.Context) {
				deeper = rt.Call(ctx, &reach.Call{ID: "t", Tool: "dig", Arguments: json.RawMessage(fmt.Sprintf(`{"want":%d}`, tc.depth+1))})
			})
			if deeper.Error == nil || !strings.Contains(deeper.Error.Message, "budget_depth") && !strings.Contains(deeper.ModelText(), "depth budget") {
				t.Fatalf("depth %d: %s, want the depth budget", tc.depth+1, deeper.ModelText())
			}
		})
	}
}

// A sub-agent's budget is carved from its parent's remaining budget; when it
// is spent only the sub-agent stops, and its spend counts for the parent.
func TestSubAgentBudgetIsCarved(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "work", Reentrancy: reach.Reentrant, Func: echo})
	ctx, parent := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Turns: 20, ToolCalls: 20, Tokens: 10000}})
	turn(t, rt, ctx, func(ctx context.Context) {
		for i := range 4 {
			call(rt, ctx, "work", fmt.Sprintf(`{"i":%d}`, i))
		}
	})
	// Parent spent 4 tool calls and 15 tokens. Carve half of what is left.
	sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "researcher", Task: "find sources", Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if b := sub.Budget(); b.ToolCalls != 8 || b.Turns != 9 || b.Tokens != (10000-15)/2 {
		t.Fatalf("carved budget = %+v, want half of the parent's remaining (8 tool calls, 9 turns, 4992 tokens)", b)
	}
	// The sub-agent keeps calling until its own budget refuses it.
	made := 0
	for i := 0; i < 100; i++ {
		mctx, m, err := rt.BeginModel(sctx, "sub-model")
		if err != nil {
			t.Fatalf("sub turn %d refused early: %v", i, err)
		}
		res := call(rt, mctx, "work", fmt.Sprintf(`{"sub":%d}`, i))
		m.EndModel(reach.TokenUsage{Input: 1})
		if res.Status == reach.StatusRefused {
			if res.Error.Code != "budget_tool_calls" || !strings.Contains(res.Error.Message, "sub-agent") {
				t.Fatalf("refusal = %+v", res.Error)
			}
			break
		}
		made++
	}
	if made != 8 {
		t.Fatalf("sub-agent made %d calls, want its carved 8", made)
	}
	// Its spend counts for the parent, which goes on.
	if u := parent.Usage(); u.ToolCalls != 4+8+1 { // the refused 9th was not counted... see below
		if u.ToolCalls != 12 {
			t.Fatalf("parent tool calls = %d, want 12 (4 own + 8 of the sub-agent)", u.ToolCalls)
		}
	}
	turn(t, rt, ctx, func(ctx context.Context) {
		if res := call(rt, ctx, "work", `{"after":true}`); res.IsError() {
			t.Fatalf("parent refused after the sub-agent's budget ran out: %s", res.ModelText())
		}
	})
	if sub.Parent() != parent || len(parent.Children()) != 1 {
		t.Error("sub-request not linked to its parent")
	}
}

// A sub-agent's tokens count for the parent: when the parent's token budget
// is exhausted by the child, both stop.
func TestTokenBudgetStopsTree(t *testing.T) {
	rt := reach.New(nil)
	ctx, parent := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Tokens: 1000}})
	sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "child"})
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := rt.BeginModel(sctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	m.EndModel(reach.TokenUsage{Input: 900, Output: 200})
	if parent.Usage().Tokens != 1100 {
		t.Fatalf("parent tokens = %d", parent.Usage().Tokens)
	}
	for _, r := range []*reach.Request{parent, sub} {
		if r.State() != reach.RequestStoppedCancel {
			t.Errorf("%s state = %s, want stopped", r.ID(), r.State())
		}
	}
	if c := parent.StopCause(); c == nil || c.Budget != "tokens" {
		t.Errorf("cause = %+v", c)
	}
	if _, _, err := rt.BeginModel(ctx, "m"); !errors.Is(err, reach.ErrBudget) {
		t.Errorf("BeginModel after exhaustion: %v", err)
	}
}

// Each stop mode, with calls in flight, cascading to a sub-request.
func TestStopModes(t *testing.T) {
	for _, mode := range []reach.StopMode{reach.Soft, reach.Cancel, reach.Isolate} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := reach.New(nil)
				entered := make(chan struct{}, 2)
				release := make(chan struct{})
				var sawCancel atomic.Int32
				rt.MustRegister(reach.Tool{Name: "slow", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
					entered <- struct{}{}
					select {
					case <-release:
						return json.RawMessage(`"finished"`), nil
					case <-ctx.Done():
						sawCancel.Add(1)
						return nil, context.Cause(ctx)
					}
				}})
				ctx, req := begin(t, rt, nil)
				sctx, sub, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "helper"})
				results := make([]*reach.Result, 2)
				var wg sync.WaitGroup
				for i, c := range []context.Context{ctx, sctx} {
					wg.Go(func() {
						mctx, m, err := rt.BeginModel(c, "m")
						if err != nil {
							t.Error(err)
							return
						}
						results[i] = call(rt, mctx, "slow", fmt.Sprintf(`{"i":%d}`, i))
						m.EndModel(reach.TokenUsage{})
					})
				}
				<-entered
				<-entered
				req.Stop(mode, "operator", "runaway")
				if mode == reach.Soft {
					synctest.Wait()
					if sawCancel.Load() != 0 {
						t.Fatal("soft stop cancelled calls in flight")
					}
					close(release)
				}
				wg.Wait()
				for i, res := range results {
					switch mode {
					case reach.Soft:
						if res.Status != reach.StatusSuccess {
							t.Errorf("call %d: %s, want it finished", i, res.ModelText())
						}
					default:
						if res.Status != reach.StatusCancelled {
							t.Errorf("call %d status = %s, want cancelled", i, res.Status)
						}
					}
				}
				if mode != reach.Soft && sawCancel.Load() != 2 {
					t.Errorf("%d handlers saw ctx.Done, want 2", sawCancel.Load())
				}
				// Nothing new starts, in the request or its sub-request.
				for _, c := range []context.Context{ctx, sctx} {
					if _, _, err := rt.BeginModel(c, "m"); !errors.Is(err, reach.ErrCancelled) {
						t.Errorf("new model call after %s: %v", mode, err)
					}
				}
				if c := sub.StopCause(); c == nil || c.By != "operator" || c.Reason != "runaway" || c.Request != req.ID() {
					t.Errorf("sub cause = %+v, want the parent's", c)
				}
			})
		})
	}
}

// Isolate refuses a result that arrives after it, even from a handler that
// ignores its context.
func TestIsolateDropsLateResults(t *testing.T) {
	rt := reach.New(nil)
	entered, release := make(chan struct{}), make(chan struct{})
	var ran atomic.Bool
	rt.MustRegister(reach.Tool{Name: "stubborn", Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		close(entered)
		<-release // ignores ctx
		ran.Store(true)
		return json.RawMessage(`"late"`), nil
	}})
	ctx, req := begin(t, rt, nil)
	done := make(chan *reach.Result)
	go func() { done <- call(rt, ctx, "stubborn", `{}`) }()
	<-entered
	req.Stop(reach.Isolate, "operator", "compromised")
	close(release)
	res := <-done
	if !ran.Load() || res.Status != reach.StatusCancelled || res.Data != nil {
		t.Fatalf("late result = %+v, want it dropped as cancelled", res)
	}
}

type flaky struct {
	fails int
	calls atomic.Int32
	keys  sync.Map
}

func (f *flaky) fn(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	n := f.calls.Add(1)
	if k, ok := reach.IdempotencyKey(ctx); ok {
		f.keys.Store(k, true)
	}
	if int(n) <= f.fails {
		return nil, &reach.ToolError{Type: "unavailable", Message: "upstream 503"}
	}
	return json.RawMessage(`{"ok":true}`), nil
}

// Retries: reads retry transient failures with backoff; writes retry only
// under an idempotency key the tool honours; permanent failures never
// retry; the limit ends with "hand this to a human".
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tool       reach.Tool
		fails      int
		wantCalls  int32
		wantStatus reach.Status
		wantRetry  string
	}{
		{"read retries", reach.Tool{Access: reach.Read}, 2, 3, reach.StatusSuccess, ""},
		{"read gives up", reach.Tool{Access: reach.Read}, 5, 3, reach.StatusError, "3/3"},
		{"write without idempotency does not retry", reach.Tool{Access: reach.Write}, 1, 1, reach.StatusError, "1/1"},
		{"idempotent write retries", reach.Tool{Access: reach.Write, Idempotent: true}, 1, 2, reach.StatusSuccess, ""},
		{"more attempts", reach.Tool{Access: reach.Read, Retry: &reach.RetryPolicy{Attempts: 5}}, 4, 5, reach.StatusSuccess, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := reach.New(nil)
				f := &flaky{fails: tc.fails}
				tool := tc.tool
				tool.Name, tool.Func = "svc", f.fn
				rt.MustRegister(tool)
				ctx, _ := begin(t, rt, nil)
				start := time.Now()
				res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "svc", Arguments: json.RawMessage(`{}`)})
				if res.Status != tc.wantStatus || f.calls.Load() != tc.wantCalls {
					t.Fatalf("status %s after %d calls, want %s after %d (%s)", res.Status, f.calls.Load(), tc.wantStatus, tc.wantCalls, res.ModelText())
				}
				if tc.wantRetry != "" && res.Error.Retry != tc.wantRetry {
					t.Errorf("retry = %q, want %q", res.Error.Retry, tc.wantRetry)
				}
				if tc.wantRetry == "3/3" && !strings.Contains(res.Error.Suggestion, "hand this to a human") {
					t.Errorf("suggestion = %q", res.Error.Suggestion)
				}
				// Backoff: each retry n waits between base*2^(n-1)/2 and base*2^(n-1).
				if waited := time.Since(start); tc.wantCalls > 1 && waited < 50*time.Millisecond {
					t.Errorf("retried without backoff (waited %s)", waited)
				}
				if tool.Access == reach.Write {
					n := 0
					f.keys.Range(func(k, v any) bool { n++; return true })
					if n != 1 {
						t.Errorf("write saw %d distinct idempotency keys, want 1", n)
					}
				}
			})
		})
	}
}

// A per-attempt timeout is a transient failure, retried for reads.
func TestTimeoutRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		var n atomic.Int32
		rt.MustRegister(reach.Tool{Name: "slow_read", Timeout: time.Second, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if n.Add(1) == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(`1`), nil
		}})
		ctx, _ := begin(t, rt, nil)
		if res := call(rt, ctx, "slow_read", `{}`); res.IsError() || n.Load() != 2 {
			t.Fatalf("%s after %d attempts", res.ModelText(), n.Load())
		}
	})
}

// TestTimeoutMessageIsTruthful: a read that times out on every attempt
// says how many attempts it made and how long the caller waited in all,
// not only one attempt's bound.
func TestTimeoutMessageIsTruthful(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		rt.MustRegister(reach.Tool{Name: "slow_read", Timeout: 30 * time.Second, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		ctx, _ := begin(t, rt, nil)
		start := time.Now()
		res := call(rt, ctx, "slow_read", `{}`)
		took := time.Since(start).Round(100 * time.Millisecond)
		want := fmt.Sprintf("slow_read did not answer within 30s on any of 3 attempts (%s in all).", took)
		if res.Error == nil || res.Error.Message != want || took < 90*time.Second {
			t.Errorf("message %q after %s, want %q", res.Error.Message, took, want)
		}
	})
}

// A repeated idempotency key returns the recorded result without running
// the tool again, also when both calls race.
func TestIdempotency(t *testing.T) {
	rt := reach.New(nil)
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		time.Sleep(time.Millisecond)
		return json.RawMessage(`{"refund_id":"R1"}`), nil
	}})
	ctx, _ := begin(t, rt, nil)
	var wg sync.WaitGroup
	results := make([]*reach.Result, 8)
	for i := range results {
		wg.Go(func() {
			results[i] = rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: "refund", IdempotencyKey: "order-42", Arguments: json.RawMessage(`{"order":42}`)})
		})
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("refund ran %d times, want once", runs.Load())
	}
	replayed := 0
	for _, r := range results {
		if r.Status != reach.StatusSuccess || string(r.Data) != `{"refund_id":"R1"}` {
			t.Fatalf("result = %+v", r)
		}
		if r.Replayed {
			replayed++
		}
	}
	if replayed != 7 {
		t.Errorf("%d replayed, want 7", replayed)
	}
	// A derived key (request + call id): the same call id is the same call.
	before := runs.Load()
	rt.Call(ctx, &reach.Call{ID: "w1", Tool: "refund", Arguments: json.RawMessage(`{"order":43}`)})
	rt.Call(ctx, &reach.Call{ID: "w1", Tool: "refund", Arguments: json.RawMessage(`{"order":43}`)})
	rt.Call(ctx, &reach.Call{ID: "w2", Tool: "refund", Arguments: json.RawMessage(`{"order":43}`)})
	if got := runs.Load() - before; got != 2 {
		t.Errorf("derived keys: %d runs, want 2", got)
	}
}

// Rate limits: per principal, with retry_after; other principals unaffected.
func TestRateLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerPrincipal: 2, PerPrincipalBurst: 2}})
		rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
		actx, _ := begin(t, rt, &reach.RequestOptions{Principal: "alice", Budget: &reach.Budget{}})
		bctx, _ := begin(t, rt, &reach.RequestOptions{Principal: "bob", Budget: &reach.Budget{}})
		for i := range 2 {
			if res := call(rt, actx, "ping", fmt.Sprintf(`{"i":%d}`, i)); res.IsError() {
				t.Fatal(res.ModelText())
			}
		}
		res := call(rt, actx, "ping", `{"i":3}`)
		if res.Status != reach.StatusRefused || res.Error.Type != reach.TypeRateLimit || res.Error.RetryAfter <= 0 || res.Error.RetryAfter > time.Second {
			t.Fatalf("third call: %+v", res.Error)
		}
		if res := call(rt, bctx, "ping", `{}`); res.IsError() {
			t.Fatalf("bob limited by alice's bucket: %s", res.ModelText())
		}
		time.Sleep(res.Error.RetryAfter)
		if res := call(rt, actx, "ping", `{"i":4}`); res.IsError() {
			t.Fatalf("after retry_after: %s", res.ModelText())
		}
	})
}

// Schema violations name every bad field and how to fix it.
func TestValidation(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "get_order", Func: echo, InputSchema: json.RawMessage(`{
		"type":"object","required":["order_id"],"additionalProperties":false,
		"properties":{"order_id":{"type":"string","pattern":"^[0-9]+$"},"limit":{"type":"integer","maximum":50}}}`)})
	ctx, _ := begin(t, rt, nil)
	res := call(rt, ctx, "get_order", `{"limit": 100, "orderid": "7"}`)
	if res.Status != reach.StatusRefused || res.Error.Type != reach.TypeInvalidArgs {
		t.Fatalf("result = %+v", res)
	}
	text := res.Error.ModelText()
	for _, want := range []string{"order_id", "add the missing field", "/limit", "use a number within the range", "orderid", "remove the unknown field"} {
		if !strings.Contains(text, want) {
			t.Errorf("model text lacks %q:\n%s", want, text)
		}
	}
	if res := call(rt, ctx, "get_order", `{"order_id": "7",}`); res.Error == nil || !strings.Contains(res.Error.Message, "not valid JSON") {
		t.Errorf("malformed JSON: %+v", res.Error)
	}
	if res := call(rt, ctx, "get_ordr", `{}`); res.Error == nil || res.Error.Code != "unknown_tool" || len(res.Error.Alternatives) == 0 || res.Error.Alternatives[0] != "get_order" {
		t.Errorf("unknown tool: %+v", res.Error)
	}
	if res := call(rt, ctx, "get_order", `{"order_id":"7"}`); res.IsError() {
		t.Errorf("valid call refused: %s", res.ModelText())
	}
}

// Access levels: forbidden never runs; high_risk needs an approver.
func TestAccessLevels(t *testing.T) {
	rt := reach.New(nil)
	var ran atomic.Int32
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`1`), nil
	}
	rt.MustRegister(
		reach.Tool{Name: "drop_db", Access: reach.Forbidden, Tags: []string{"db"}, Func: fn},
		reach.Tool{Name: "read_db", Access: reach.Read, Tags: []string{"db"}, Func: fn},
		reach.Tool{Name: "wire_money", Access: reach.HighRisk, Func: fn},
		reach.Tool{Name: "drop_schema", Access: reach.Forbidden, Func: fn,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)},
	)
	ctx, _ := begin(t, rt, nil)
	res := call(rt, ctx, "drop_db", `{}`)
	if res.Error == nil || res.Error.Type != reach.TypePermission || len(res.Error.Alternatives) != 1 || res.Error.Alternatives[0] != "read_db" {
		t.Fatalf("forbidden: %+v", res.Error)
	}
	if res := call(rt, ctx, "wire_money", `{}`); res.Error == nil || res.Error.Type != reach.TypeApproval {
		t.Fatalf("high risk: %+v", res.Error)
	}
	// Arguments that miss a required field: still refused as forbidden, not
	// sent back to be mended first.
	if res := call(rt, ctx, "drop_schema", `{"x":1}`); res.Error == nil || res.Error.Type != reach.TypePermission {
		t.Fatalf("forbidden, bad arguments: %+v", res.Error)
	}
	if ran.Load() != 0 {
		t.Fatal("a refused tool ran")
	}
}

// The warn mode lets a violation through and notes it; allow skips the check.
func TestViolationModes(t *testing.T) {
	for _, mode := range []reach.Mode{reach.Warn, reach.Allow} {
		rt := reach.New(nil)
		var inner *reach.Result
		rt.MustRegister(reach.Tool{Name: "tx", OnViolation: mode, Func: nested(rt, func(ctx context.Context, _ json.RawMessage) *reach.Result {
			if f, _ := reach.FrameFrom(ctx); f.Depth > 1 {
				return &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)}
			}
			inner = call(rt, ctx, "tx", `{}`)
			return inner
		})})
		ctx, _ := begin(t, rt, nil)
		turn(t, rt, ctx, func(ctx context.Context) { call(rt, ctx, "tx", `{}`) })
		if inner.IsError() {
			t.Fatalf("%s: refused: %s", mode, inner.ModelText())
		}
		warned := len(inner.Notes) > 0 && strings.Contains(inner.Notes[0], "warning:")
		if warned != (mode == reach.Warn) {
			t.Errorf("%s: notes = %v", mode, inner.Notes)
		}
	}
}

// The chain runs user middleware inside the guards, first listed outermost.
func TestMiddlewareOrder(t *testing.T) {
	var trace []string
	mw := func(name string) reach.Middleware {
		return func(next reach.Handler) reach.Handler {
			return func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
				trace = append(trace, ">"+name)
				res, err := next(ctx, c)
				trace = append(trace, "<"+name)
				return res, err
			}
		}
	}
	rt := reach.New(&reach.Options{Middleware: []reach.Middleware{mw("a"), mw("b")}})
	rt.MustRegister(reach.Tool{Name: "t", Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		trace = append(trace, "tool")
		return a, nil
	}})
	ctx, _ := begin(t, rt, nil)
	call(rt, ctx, "t", `{}`)
	if got, want := strings.Join(trace, " "), ">a >b tool <b <a"; got != want {
		t.Errorf("trace = %s, want %s", got, want)
	}
	// A refused call never reaches user middleware.
	trace = nil
	call(rt, ctx, "missing", `{}`)
	if len(trace) != 0 {
		t.Errorf("refused call reached middleware: %v", trace)
	}
}

// Results are shaped: fields selected, flattened, truncated with a note,
// summarized; a low token budget is noted.
func TestShaping(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "orders", Shape: &reach.Shape{Fields: []string{"id", "customer.name"}, Flatten: true}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`[{"id":1,"customer":{"name":"Ann","ssn":"x"},"blob":"zzz"},{"id":2,"customer":{"name":"Bo"}}]`), nil
		}},
		reach.Tool{Name: "logs", Shape: &reach.Shape{MaxBytes: 100}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			items := make([]string, 50)
			for i := range items {
				items[i] = fmt.Sprintf("line %02d", i)
			}
			return json.Marshal(items)
		}},
	)
	ctx, _ := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Tokens: 100}})
	res := call(rt, ctx, "orders", `{}`)
	if got, want := string(res.Data), `[{"customer.name":"Ann","id":1},{"customer.name":"Bo","id":2}]`; got != want {
		t.Errorf("shaped = %s, want %s", got, want)
	}
	if res.Summary != "2 items" {
		t.Errorf("summary = %q", res.Summary)
	}
	res = call(rt, ctx, "logs", `{}`)
	if len(res.Data) > 100 || !json.Valid(res.Data) || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "Narrow your query") {
		t.Errorf("truncated = %s, notes %v", res.Data, res.Notes)
	}
	_, m, _ := rt.BeginModel(ctx, "m")
	m.EndModel(reach.TokenUsage{Input: 90})
	res = call(rt, ctx, "orders", `{"again":1}`)
	if n := res.Notes; len(n) == 0 || !strings.Contains(n[len(n)-1], "10 of 100 tokens left") {
		t.Errorf("notes = %v, want a low-context note", n)
	}
}

// The envelope: independent calls run concurrently, $ref waits for its
// source, results come back in order.
// TestBatchRefCycles: every call on a $ref cycle is refused, however many
// cycles the batch has, and the batch returns; a call that uses a refused
// call's result is refused too; an independent call runs.
func TestBatchRefCycles(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "echo", Reentrancy: reach.Reentrant, Func: echo})
	ctx, _ := begin(t, rt, nil)
	env, err := reach.DecodeEnvelope([]byte(`{"request_id":"r","tool_calls":[
		{"call_id":"a","tool":"echo","arguments":{"x":{"$ref":"b.x"}}},
		{"call_id":"b","tool":"echo","arguments":{"x":{"$ref":"a.x"}}},
		{"call_id":"c","tool":"echo","arguments":{"x":{"$ref":"d.x"}}},
		{"call_id":"d","tool":"echo","arguments":{"x":{"$ref":"e.x"}}},
		{"call_id":"e","tool":"echo","arguments":{"x":{"$ref":"c.x"}}},
		{"call_id":"f","tool":"echo","arguments":{"x":{"$ref":"a.x"}}},
		{"call_id":"g","tool":"echo","arguments":{"x":1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Response, 1)
	go func() { done <- rt.Batch(ctx, env) }()
	var resp *reach.Response
	select {
	case resp = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch did not return: a $ref cycle was left waiting")
	}
	for _, r := range resp.Results {
		want := reach.StatusRefused
		if r.CallID == "g" {
			want = reach.StatusSuccess
		}
		if r.Status != want {
			t.Errorf("%s: %s %+v, want %s", r.CallID, r.Status, r.Error, want)
		}
		if strings.Contains("abcde", r.CallID) && (r.Error == nil || r.Error.Code != "ref_cycle") {
			t.Errorf("%s: %+v, want ref_cycle", r.CallID, r.Error)
		}
	}
}

func TestBatch(t *testing.T) {
	rt := reach.New(nil)
	started := make(chan string, 4)
	gate := make(chan struct{})
	rt.MustRegister(
		reach.Tool{Name: "find_customer", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
			started <- "find"
			<-gate
			return json.RawMessage(`{"customer":{"id":"C7"}}`), nil
		}},
		reach.Tool{Name: "weather", Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
			started <- "weather"
			<-gate
			return json.RawMessage(`"sunny"`), nil
		}},
		reach.Tool{Name: "orders_of", Func: echo},
	)
	ctx, _ := begin(t, rt, nil)
	env, err := reach.DecodeEnvelope([]byte(`{"request_id":"r","tool_calls":[
		{"call_id":"c1","tool":"find_customer","arguments":{"name":"Ann"}},
		{"call_id":"c2","tool":"orders_of","arguments":{"customer":{"$ref":"c1.customer.id"}}},
		{"call_id":"c3","tool":"weather","arguments":{}},
		{"call_id":"c4","tool":"orders_of","arguments":{"x":{"$ref":"c9.id"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Response)
	go func() { done <- rt.Batch(ctx, env) }()
	// Both independent calls start before either finishes.
	got := map[string]bool{<-started: true, <-started: true}
	if !got["find"] || !got["weather"] {
		t.Fatalf("started = %v", got)
	}
	close(gate)
	resp := <-done
	var ids []string
	for _, r := range resp.Results {
		ids = append(ids, r.CallID+":"+string(r.Status))
	}
	if want := "c1:success c2:success c3:success c4:refused"; strings.Join(ids, " ") != want {
		t.Fatalf("results = %v, want %s", ids, want)
	}
	if string(resp.Results[1].Data) != `{"customer":"C7"}` {
		t.Errorf("c2 data = %s", resp.Results[1].Data)
	}
	if resp.Results[3].Error.Code != "bad_ref" {
		t.Errorf("c4 = %+v", resp.Results[3].Error)
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"tool_calls":[]}`:                "no tool_calls",
		`{"tool_calls":[{"tool":"x"}]}`:    "call_id is required",
		`{"tool_calls":[{"call_id":"a"}]}`: "tool is required",
		`{"tool_calls":[{"call_id":"a","tool":"x"},{"call_id":"a","tool":"y"}]}`: "used twice",
		`{"tool_calls":[{"call_id":"a","tool":"x"}],"extra":1}`:                  "unknown field",
		`{"tool_calls":[{"call_id":"a","tool":"x"}]} {}`:                         "after the JSON object",
		`[`: "decoding envelope",
	} {
		_, err := reach.DecodeEnvelope([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeEnvelope(%s) = %v, want an error containing %q", in, err, want)
		}
	}
}

// The wall-clock budget cancels the request with its cause.
func TestWallBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		rt.MustRegister(reach.Tool{Name: "wait", Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}})
		ctx, _ := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{Wall: time.Minute}})
		res := call(rt, ctx, "wait", `{}`)
		if res.Status != reach.StatusCancelled || res.Error.Code != "budget_wall" {
			t.Fatalf("result = %+v", res.Error)
		}
	})
}

func TestBeginDuplicateID(t *testing.T) {
	rt := reach.New(nil)
	_, req := begin(t, rt, &reach.RequestOptions{ID: "r1"})
	if _, _, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1"}); err == nil {
		t.Fatal("a second running request with the same id was accepted")
	}
	req.End()
	if _, _, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1"}); err != nil {
		t.Fatalf("id reuse after End: %v", err)
	}
	if got := rt.Requests(); len(got) != 1 || got[0].ID() != "r1" || got[0].State() != "running" {
		t.Errorf("Requests() = %v", got)
	}
}

func TestRegisterErrors(t *testing.T) {
	rt := reach.New(nil)
	for _, tc := range []struct {
		tool reach.Tool
		want string
	}{
		{reach.Tool{Name: "", Func: echo}, "tool name"},
		{reach.Tool{Name: "x y", Func: echo}, "tool name"},
		{reach.Tool{Name: "x"}, "Func is nil"},
		{reach.Tool{Name: "x", Func: echo, Access: "admin"}, "unknown access level"},
		{reach.Tool{Name: "x", Func: echo, Reentrancy: reach.Keyed}, "needs Key"},
		{reach.Tool{Name: "x", Func: echo, InputSchema: json.RawMessage(`{"type":12}`)}, "input schema"},
	} {
		if err := rt.Register(tc.tool); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%+v) = %v, want %q", tc.tool.Name, err, tc.want)
		}
	}
	rt.MustRegister(reach.Tool{Name: "x", Func: echo})
	if err := rt.Register(reach.Tool{Name: "x", Func: echo}); err == nil {
		t.Error("duplicate accepted")
	}
}

// A call that arrives from another process joins the stack of the frame it
// names: re-entering that frame's tool is refused as a cycle.
func TestWithParentAndFrameLookup(t *testing.T) {
	rt := reach.New(nil)
	entered := make(chan *reach.Frame)
	release := make(chan struct{})
	rt.MustRegister(reach.Tool{Name: "remote_tool", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		f, _ := reach.FrameFrom(ctx)
		entered <- f
		<-release
		return json.RawMessage(`1`), nil
	}})
	ctx, req := begin(t, rt, nil)
	sctx, sub, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "w"})
	go rt.Call(sctx, &reach.Call{ID: "c1", Tool: "remote_tool", Arguments: json.RawMessage(`{"a":1}`)})
	f := <-entered
	defer close(release)
	got, ok := req.Frame(f.ID)
	if !ok || got != f || sub.Root() != req || req.Root() != req {
		t.Fatalf("Frame(%s) = %v, %v; roots %v %v", f.ID, got, ok, sub.Root(), req.Root())
	}
	// The "other process" only knows the id.
	res := rt.Call(reach.WithParent(sub.Context(), got), &reach.Call{ID: "c2", Tool: "remote_tool", Arguments: json.RawMessage(`{"a":1}`)})
	if res.Error == nil || res.Error.Code != "cycle" {
		t.Fatalf("re-entry through WithParent: %+v", res.Error)
	}
	if _, ok := req.Frame(12345); ok {
		t.Error("found a frame that does not exist")
	}
	rt.Unregister("remote_tool")
	if res := rt.Call(ctx, &reach.Call{ID: "c3", Tool: "remote_tool"}); res.Error == nil || res.Error.Code != "unknown_tool" {
		t.Errorf("after Unregister: %+v", res.Error)
	}
}

// Priority requests get the global capacity kept for them.
func TestRateLimitPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerSecond: 10, Burst: 10, Reserved: 0.3}})
		rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
		bulk, _ := begin(t, rt, &reach.RequestOptions{Budget: &reach.Budget{}})
		urgent, _ := begin(t, rt, &reach.RequestOptions{Priority: 1, Budget: &reach.Budget{}})
		n := 0
		for ; n < 20; n++ {
			if res := call(rt, bulk, "ping", fmt.Sprintf(`{"n":%d}`, n)); res.IsError() {
				if !strings.Contains(res.Error.Message, "reserved for priority") {
					t.Fatalf("bulk refusal: %s", res.ModelText())
				}
				break
			}
		}
		if n != 7 {
			t.Fatalf("bulk got %d calls, want 7 (3 of 10 kept)", n)
		}
		for i := range 3 {
			if res := call(rt, urgent, "ping", fmt.Sprintf(`{"u":%d}`, i)); res.IsError() {
				t.Fatalf("urgent call %d refused: %s", i, res.ModelText())
			}
		}
	})
}

// A call whose caller gives up while the tool runs is cancelled by the
// execute stage (not refused at admission), with the caller's cause.
func TestCancelledWhileRunningNamesExecute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		started := make(chan struct{})
		rt.MustRegister(reach.Tool{Name: "wait", Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		rctx, _ := begin(t, rt, nil)
		ctx, cancel := context.WithCancelCause(rctx)
		go func() {
			<-started
			cancel(errors.New("the client went away"))
		}()
		res := call(rt, ctx, "wait", `{}`)
		if res.Error == nil || res.Error.Guard != "execute" || res.Error.Code != "cancelled" || !strings.Contains(res.Error.Message, "the client went away") {
			t.Fatalf("cancelled while running = %+v", res.Error)
		}
		// Cancelled before it starts: refused at admission.
		res = call(rt, ctx, "wait", `{}`)
		if res.Error == nil || res.Error.Guard != "admit" {
			t.Fatalf("called with an ended context = %+v", res.Error)
		}
	})
}

// TestToolPanicFailsTheCall: a tool whose implementation panics fails its
// call with a clear error, in a batch too, and the process lives on.
func TestToolPanicFailsTheCall(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "boom", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		panic("nil map")
	}})
	ctx, _ := begin(t, rt, nil)
	res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "boom", Arguments: json.RawMessage(`{}`)})
	if res.Status != reach.StatusError || res.Error == nil || !strings.Contains(res.Error.Message, "panicked: nil map") {
		t.Errorf("a panicking tool = %s %+v, want an error saying it panicked", res.Status, res.Error)
	}
	env, _ := reach.DecodeEnvelope([]byte(`{"tool_calls":[{"call_id":"a","tool":"boom","arguments":{}},{"call_id":"b","tool":"boom","arguments":{"x":1}}]}`))
	for _, r := range rt.Batch(ctx, env).Results {
		if r.Status != reach.StatusError {
			t.Errorf("batch %s = %s, want error", r.CallID, r.Status)
		}
	}
}

// TestIdempotencyKeysArePerPrincipal: the same idempotency key from two
// principals runs twice; neither gets the other's recorded result.
func TestIdempotencyKeysArePerPrincipal(t *testing.T) {
	rt := reach.New(nil)
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"run":%d}`, runs.Add(1))), nil
	}})
	for i, who := range []string{"alice", "bob", "alice"} {
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "same-id", Principal: who})
		if err != nil {
			t.Fatal(err)
		}
		res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{}`), IdempotencyKey: "k1"})
		req.End()
		if want := i == 2; res.Replayed != want {
			t.Errorf("%s's call %d: replayed %v, want %v (data %s)", who, i, res.Replayed, want, res.Data)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("pay ran %d times, want 2 (once per principal)", n)
	}
}

// TestModelUsageCannotRefundTheBudget: negative, overflowing, infinite or
// NaN usage reports neither refund a token or cost budget nor wrap it
// around; a report too big to count spends it all.
func TestModelUsageCannotRefundTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		use   reach.TokenUsage
		spent bool // the request is stopped by its budget after it
	}{
		{"negative tokens", reach.TokenUsage{Input: -999_999, Output: 100}, false},
		{"overflowing tokens", reach.TokenUsage{Input: math.MaxInt64, Output: math.MaxInt64}, true},
		{"negative cost", reach.TokenUsage{Input: 10, Cost: -5}, false},
		{"NaN cost", reach.TokenUsage{Input: 10, Cost: math.NaN()}, false},
		{"infinite cost", reach.TokenUsage{Input: 10, Cost: math.Inf(1)}, true},
		{"huge cost", reach.TokenUsage{Input: 10, Cost: 1e12}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := reach.New(nil)
			ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{Tokens: 1000, Cost: 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer req.End()
			_, f, err := rt.BeginModel(ctx, "m")
			if err != nil {
				t.Fatal(err)
			}
			f.EndModel(tc.use)
			u := req.Usage()
			if u.Tokens < 0 || u.Cost < 0 || math.IsNaN(u.Cost) {
				t.Errorf("usage after %+v: %+v, want nothing negative", tc.use, u)
			}
			if stopped := req.StopCause() != nil; stopped != tc.spent {
				t.Errorf("stopped by the budget: %v, want %v (usage %+v)", stopped, tc.spent, u)
			}
			if !tc.spent {
				// The budget is still whole: 900 more tokens fit, 1,100 do not.
				_, f, _ := rt.BeginModel(ctx, "m")
				f.EndModel(reach.TokenUsage{Input: 1100})
				if req.StopCause() == nil {
					t.Errorf("1,100 tokens after %+v did not exhaust a 1,000-token budget (usage %+v)", tc.use, req.Usage())
				}
			}
		})
	}
}

// TestRateLimitNotResetByOthers: a throttled principal stays throttled when
// others fill the table of principals, and a global refusal does not spend
// the principal's own token.
func TestRateLimitNotResetByOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerPrincipal: 0.01, PerPrincipalBurst: 1, MaxPrincipalsKnown: 3}})
		rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
		ctxOf := func(who string) context.Context {
			ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: who, Budget: &reach.Budget{}})
			return ctx
		}
		alice := ctxOf("alice")
		if res := call(rt, alice, "ping", `{"i":0}`); res.IsError() {
			t.Fatal(res.ModelText())
		}
		through := 0
		for i := range 10 {
			call(rt, ctxOf(fmt.Sprintf("throwaway-%d", i)), "ping", `{}`)
			if res := call(rt, alice, "ping", fmt.Sprintf(`{"i":%d}`, i+1)); !res.IsError() {
				through++
			}
		}
		if through > 0 {
			t.Errorf("alice (0.01 calls/s, burst 1) got %d more calls through while others filled the table", through)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A partly used bucket is not forgiven by others filling the table:
		// a, with burst 5, gets 5 calls in all.
		rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerPrincipal: 0.01, PerPrincipalBurst: 5, MaxPrincipalsKnown: 2}})
		rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
		ctxOf := func(who string) context.Context {
			ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: who, Budget: &reach.Budget{}})
			return ctx
		}
		a, b := ctxOf("a"), ctxOf("b")
		okCalls := 0
		for i := range 3 {
			if !call(rt, a, "ping", fmt.Sprintf(`{"i":%d}`, i)).IsError() {
				okCalls++
			}
		}
		for i := range 4 {
			call(rt, b, "ping", fmt.Sprintf(`{"i":%d}`, i))
		}
		call(rt, ctxOf("c"), "ping", `{}`)
		for i := range 5 {
			if !call(rt, a, "ping", fmt.Sprintf(`{"j":%d}`, i)).IsError() {
				okCalls++
			}
		}
		if okCalls != 5 {
			t.Errorf("a (burst 5, 0.01 calls/s) made %d calls while another principal filled the table, want 5", okCalls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A full table of principals that still have tokens does not keep a
		// new principal out.
		rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerPrincipal: 1, PerPrincipalBurst: 5, MaxPrincipalsKnown: 3}})
		rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
		for i := range 4 {
			ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: fmt.Sprintf("p%d", i), Budget: &reach.Budget{}})
			if res := call(rt, ctx, "ping", `{}`); res.IsError() {
				t.Errorf("principal p%d's first call: %s", i, res.ModelText())
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(&reach.Options{RateLimit: &reach.RateLimit{PerSecond: 1, Burst: 1, PerPrincipal: 1, PerPrincipalBurst: 3}})
		rt.MustRegister(reach.Tool{Name: "ping", Reentrancy: reach.Reentrant, Func: echo})
		ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: "alice", Budget: &reach.Budget{}})
		var got []string
		for i := range 4 {
			res := call(rt, ctx, "ping", fmt.Sprintf(`{"i":%d}`, i))
			if res.Error != nil {
				got = append(got, res.Error.Message)
			} else {
				got = append(got, "ok")
			}
		}
		for i, g := range got[1:] {
			if strings.Contains(g, "per-principal") {
				t.Errorf("call %d: %q — global refusals spent alice's own tokens (%q)", i+2, g, got)
			}
		}
	})
}

// TestTruncateStaysWithinMax: a result cut to text stays within MaxBytes
// whatever its escaping costs (quotes, HTML, control characters, invalid
// UTF-8), is valid JSON, and the note says how much was kept.
func TestTruncateStaysWithinMax(t *testing.T) {
	big := `{"html":"` + strings.Repeat(`<a href=\"x\">&amp;</a>\n`, 400) + `","bad":"` + strings.Repeat("é", 100) + "\xff\xfe" + `"}`
	for _, data := range []string{big, `"` + strings.Repeat(`\"`, 3000) + `"`, strings.Repeat("\x01", 5000)} {
		rt := reach.New(nil)
		rt.MustRegister(reach.Tool{Name: "dump", Shape: &reach.Shape{MaxBytes: 1000}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(data), nil
		}})
		ctx, _ := begin(t, rt, nil)
		res := call(rt, ctx, "dump", `{}`)
		if len(res.Data) > 1000 || !json.Valid(res.Data) {
			t.Errorf("a %d-byte result cut to %d bytes (valid JSON: %v), want at most 1000", len(data), len(res.Data), json.Valid(res.Data))
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "only the first") || strings.Contains(res.Notes[0], "only the first 0 ") {
			t.Errorf("notes %v, want how much was kept", res.Notes)
		}
	}
}

// TestBatchOrdersWritesToOneEntity: two different write tools that write
// the same entity run one after the other in envelope order; a write to
// another entity does not wait for them; a forward $ref between two entity
// writes orders them by the data, not into a false cycle.
func TestBatchOrdersWritesToOneEntity(t *testing.T) {
	rt := reach.New(nil)
	cancelStarted, holdStarted := make(chan struct{}), make(chan struct{})
	var overlapped, sawHold atomic.Bool
	rt.MustRegister(
		reach.Tool{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			// Wait a while for the other calls: the write to order O2 must
			// start meanwhile, the one to O1 must not.
			timeout := time.After(300 * time.Millisecond)
			for done := false; !done; {
				select {
				case <-cancelStarted:
					overlapped.Store(true)
					cancelStarted = nil
				case <-holdStarted:
					sawHold.Store(true)
					holdStarted = nil
				case <-timeout:
					done = true
				}
			}
			return json.RawMessage(`{"id":"O9"}`), nil
		}},
		reach.Tool{Name: "cancel", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			close(cancelStarted)
			return json.RawMessage(`"ok"`), nil
		}},
		reach.Tool{Name: "hold", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(a), "O2") {
				close(holdStarted)
			}
			return json.RawMessage(`"ok"`), nil
		}},
	)
	ctx, _ := begin(t, rt, nil)
	runBatchOK(t, rt, ctx, "", `{"tool_calls":[
		{"call_id":"w1","tool":"refund","arguments":{"id":"O1"}},
		{"call_id":"w2","tool":"cancel","arguments":{"id":"O1"}},
		{"call_id":"w3","tool":"hold","arguments":{"id":"O2"}}]}`)
	if overlapped.Load() {
		t.Error("two writes to order O1 ran at once")
	}
	if !sawHold.Load() {
		t.Error("the write to order O2 waited for the writes to order O1")
	}
	// A forward reference: the first write needs the second's result.
	runBatchOK(t, rt, ctx, "forward $ref, ", `{"tool_calls":[
		{"call_id":"a","tool":"hold","arguments":{"id":{"$ref":"b.id"}}},
		{"call_id":"b","tool":"refund","arguments":{"id":"O5"}}]}`)
}

// TestBatchSkippedOrderKeepsEntityWritesApart: when a $ref orders two
// entity writes against the envelope, a later write to the entity still
// waits for both of them.
func TestBatchSkippedOrderKeepsEntityWritesApart(t *testing.T) {
	rt := reach.New(nil)
	lastStarted := make(chan struct{})
	var overlapped atomic.Bool
	write := func(name string, f reach.ToolFunc) reach.Tool {
		return reach.Tool{Name: name, Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: f}
	}
	ok := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"id":"O1"}`), nil
	}
	rt.MustRegister(
		write("hold", ok),
		write("set1", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			select { // the last write to O1 must not start meanwhile
			case <-lastStarted:
				overlapped.Store(true)
			case <-time.After(300 * time.Millisecond):
			}
			return json.RawMessage(`"ok"`), nil
		}),
		write("set2", ok),
		write("set3", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			close(lastStarted)
			return json.RawMessage(`"ok"`), nil
		}),
	)
	ctx, _ := begin(t, rt, nil)
	runBatchOK(t, rt, ctx, "", `{"tool_calls":[
		{"call_id":"a","tool":"hold","arguments":{"id":{"$ref":"c.id"}}},
		{"call_id":"b","tool":"set1","arguments":{"id":"O1"}},
		{"call_id":"c","tool":"set2","arguments":{"id":"O1"}},
		{"call_id":"d","tool":"set3","arguments":{"id":"O1"}}]}`)
	if overlapped.Load() {
		t.Error("two writes to order O1 ran at once")
	}
}

// runBatchOK runs the envelope and reports every call that did not succeed.
func runBatchOK(t *testing.T, rt *reach.Runtime, ctx context.Context, label, envelope string) {
	t.Helper()
	env, err := reach.DecodeEnvelope([]byte(envelope))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rt.Batch(ctx, env).Results {
		if r.IsError() {
			t.Errorf("%s%s: %s", label, r.CallID, r.ModelText())
		}
	}
}

// TestNumberSpellingIsTheSameCall: the loop guard sees the same call
// however the model spells a number: the third lookup of order 7, spelled
// 7, 7.0 and 7e0, is refused as a repeat.
func TestNumberSpellingIsTheSameCall(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "get_order", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"status":"SHIPPED"}`), nil
	}})
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	var last *reach.Result
	for i, id := range []string{`7`, `7.0`, `7e0`} {
		mctx, m, err := rt.BeginModel(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		last = rt.Call(mctx, &reach.Call{ID: fmt.Sprint(i), Tool: "get_order", Arguments: json.RawMessage(`{"id":` + id + `}`)})
		m.EndModel(reach.TokenUsage{Input: 10})
	}
	if last.Status != reach.StatusRefused || last.Error.Code != "loop_repeat" {
		t.Errorf("the third lookup of order 7 = %s %+v, want refused as loop_repeat", last.Status, last.Error)
	}
}

// TestLongIntegerReachesTheTool: an integer longer than any machine word
// (a 256-bit amount) reaches its tool as the integer it is.
func TestLongIntegerReachesTheTool(t *testing.T) {
	const amount = "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	rt := reach.New(nil)
	var got string
	rt.MustRegister(reach.Tool{Name: "transfer", Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		var in struct{ Amount *big.Int }
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		got = in.Amount.String()
		return json.RawMessage(`{"ok":true}`), nil
	}})
	ctx, req := begin(t, rt, nil)
	defer req.End()
	if res := rt.Call(ctx, &reach.Call{ID: "c", Tool: "transfer", Arguments: json.RawMessage(`{"amount":` + amount + `}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if got != amount {
		t.Errorf("the tool got amount %s, want %s", got, amount)
	}
}

// TestRequestState: a request's state names where it is in its life, and
// Stopped tells every stopped state from the others.
func TestRequestState(t *testing.T) {
	rt := reach.New(nil)
	_, a, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	_, b, _ := rt.Begin(context.Background(), &reach.RequestOptions{ID: "b"})
	if a.State() != reach.RequestRunning || a.State().Stopped() {
		t.Errorf("a new request is %s", a.State())
	}
	a.Stop(reach.Isolate, "op", "test")
	if a.State() != reach.RequestStoppedIsolate || !a.State().Stopped() {
		t.Errorf("an isolated request is %s (stopped %v)", a.State(), a.State().Stopped())
	}
	b.End()
	if b.State() != reach.RequestCompleted || b.State().Stopped() {
		t.Errorf("an ended request is %s", b.State())
	}
}

// TestOptionsContradictions: reach.New refuses options that contradict
// each other or are out of range, naming the option, and takes the rest.
func TestOptionsContradictions(t *testing.T) {
	for _, tc := range []struct {
		o    reach.Options
		says string
	}{
		{reach.Options{ApprovalKey: func(*reach.Call) string { return "" }}, "ApprovalKey"},
		{reach.Options{CheckpointReads: true}, "CheckpointReads"},
		{reach.Options{IdempotencyTTL: time.Hour, Idempotency: reach.NewMemoryIdempotency(time.Minute)}, "IdempotencyTTL"},
		{reach.Options{Loops: &reach.LoopOptions{}, DisableLoopGuard: true}, "DisableLoopGuard"},
		{reach.Options{MaxFrames: -1}, "negative"},
		{reach.Options{LowContext: 1.5}, "LowContext"},
		{reach.Options{Breaker: &reach.BreakerPolicy{Failures: -1}}, "Options.Breaker"},
		{reach.Options{UpstreamBreakers: map[string]*reach.BreakerPolicy{"kb": {Rate: 3}}}, "UpstreamBreakers[kb]"},
	} {
		err := tc.o.Check()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Check(%+v) = %v, want an error naming %s", tc.o, err, tc.says)
		}
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), tc.says) {
					t.Errorf("New(%+v) did not panic naming %s: %v", tc.o, tc.says, p)
				}
			}()
			reach.New(&tc.o)
		}()
	}
	for _, o := range []*reach.Options{nil, {}, {IdempotencyTTL: time.Hour}, {Loops: &reach.LoopOptions{}}, {LowContext: 1}} {
		if err := o.Check(); err != nil {
			t.Errorf("Check(%+v) = %v, want nil", o, err)
		}
	}
}

// TestCatalogReadOnly: what a catalog shows the parts around the runtime
// is read-only (Tools, Tool, Has); registering, replacing and taking it
// over are the runtime's alone.
func TestCatalogReadOnly(t *testing.T) {
	typ := reflect.TypeOf(reach.NewCatalog())
	var got []string
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	if want := []string{"Has", "Tool", "Tools"}; !slices.Equal(got, want) {
		t.Errorf("reach.Catalog's methods are %v; want %v only", got, want)
	}
}

// TestCatalogBeforeRuntime: a catalog made before its runtime shows the
// parts built with it (here a recorder) the tools the runtime registers
// later; a catalog serves one runtime.
func TestCatalogBeforeRuntime(t *testing.T) {
	cat := reach.NewCatalog()
	var known []bool
	rec := recorderFunc(func(_ context.Context, e *reach.Event) { known = append(known, cat.Has(e.Name)) })
	rt := reach.New(&reach.Options{Catalog: cat, Recorder: rec})
	rt.MustRegister(reach.Tool{Name: "echo", Reentrancy: reach.Reentrant, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	if _, ok := cat.Tool("echo"); !ok || len(cat.Tools()) != 1 {
		t.Fatalf("the catalog does not show the registered tool: %v", cat.Tools())
	}
	ctx, req, _ := rt.Begin(context.Background(), nil)
	rt.Call(ctx, &reach.Call{ID: "c", Tool: "echo", Arguments: json.RawMessage(`{}`)})
	req.End()
	if len(known) == 0 || !known[0] {
		t.Errorf("the recorder built before the runtime saw the tool as unknown: %v", known)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "Catalog") {
			t.Errorf("a second runtime on the same catalog: %v, want a panic naming the Catalog", p)
		}
	}()
	reach.New(&reach.Options{Catalog: cat})
}

type recorderFunc func(context.Context, *reach.Event)

func (f recorderFunc) Record(ctx context.Context, e *reach.Event) { f(ctx, e) }

// TestArgumentsCaseTwinsRefused: arguments that name one member twice in
// different cases ("path" and "PATH", or "kind" with the Kelvin sign) are
// refused before any check reads them. The checks and policies read the
// name as written, a tool that binds its arguments with encoding/json
// (a Go server decoding them into a struct) reads both as one field, the
// last winning: a policy that allowed the "path" it read let the tool run
// the "PATH" it did not.
func TestArgumentsCaseTwinsRefused(t *testing.T) {
	rt := reach.New(nil)
	var ran atomic.Int32
	rt.MustRegister(reach.Tool{Name: "read_file", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`"ok"`), nil
	}})
	ctx, _ := begin(t, rt, nil)
	for _, args := range []string{`{"path":"/tmp/ok","PATH":"/etc/shadow"}`, `{"opts":{"kind":"read","\u212aind":"write"}}`} {
		res := call(rt, ctx, "read_file", args)
		if res.Error == nil || res.Error.Type != reach.TypeInvalidArgs || !strings.Contains(res.Error.Suggestion, "once") {
			t.Errorf("%s: %+v, want invalid arguments", args, res.Error)
		}
	}
	if ran.Load() != 0 {
		t.Errorf("the tool ran %d times", ran.Load())
	}
	if res := call(rt, ctx, "read_file", `{"path":"/tmp/ok","pathId":1,"Mode":"r"}`); res.IsError() {
		t.Errorf("distinct names refused: %s", res.ModelText())
	}
}
