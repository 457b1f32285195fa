package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// budget27Runtime is a runtime with the tool "lookup" (a read that
// answers its arguments).
func budget27Runtime(o *reach.Options) *reach.Runtime {
	rt := reach.New(o)
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	return rt
}

// budget27Call makes the tool call id in ctx.
func budget27Call(rt *reach.Runtime, ctx context.Context, id string) *reach.Result {
	return rt.Call(ctx, &reach.Call{ID: id, Tool: "lookup", Arguments: json.RawMessage(`{"q":"` + id + `"}`)})
}

// budget27Turn runs one model turn in ctx that spends tokens; it returns
// BeginModel's refusal.
func budget27Turn(rt *reach.Runtime, ctx context.Context, tokens int64) error {
	_, f, err := rt.BeginModel(ctx, "m")
	if err != nil {
		return err
	}
	f.EndModel(reach.TokenUsage{Input: tokens})
	return nil
}

// budget27Refused asserts that r is a refusal with code, which says that
// the request's earlier runs counted and how to get a budget of one's own.
func budget27Refused(t *testing.T, what string, r *reach.Result, code string) {
	t.Helper()
	if r.Status != reach.StatusRefused || r.Error == nil || r.Error.Code != code {
		t.Fatalf("%s: %s %+v; want refused %s", what, r.Status, r.Error, code)
	}
	budget27Says(t, what, r.Error)
}

func budget27Says(t *testing.T, what string, e *reach.Error) {
	t.Helper()
	if !strings.Contains(e.Message, "earlier runs") || !strings.Contains(e.Suggestion, "new request") {
		t.Errorf("%s: %q / %q; want it to say the earlier runs counted and to begin a new request", what, e.Message, e.Suggestion)
	}
}

// TestBudget27NamedAgainKeepsSpend: a completed request named again by its
// owner goes on with what its earlier runs spent: its tool calls and
// tokens count against its budget over every run, a run begun once they
// are all spent is refused at its first call (with what to do), and a
// sub-request's budget is carved from what the runs left. Before, each
// run had a budget of its own: naming the id again gave a spent request a
// fresh one.
func TestBudget27NamedAgainKeepsSpend(t *testing.T) {
	rt := budget27Runtime(&reach.Options{DisableLoopGuard: true})
	opts := &reach.RequestOptions{ID: "conv", Principal: "alice", Budget: &reach.Budget{ToolCalls: 3, Tokens: 1000}}
	ctx, r1, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "a2"} {
		if res := budget27Call(rt, ctx, id); res.Status != reach.StatusSuccess {
			t.Fatalf("%s: %+v", id, res.Error)
		}
	}
	if err := budget27Turn(rt, ctx, 600); err != nil {
		t.Fatal(err)
	}
	r1.End()

	ctx, r2, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if u := r2.Usage(); u.ToolCalls != 2 || u.Tokens != 600 || u.Turns != 1 {
		t.Fatalf("the request named again has spent %+v; want its first run's 2 tool calls, 600 tokens, 1 turn", u)
	}
	if left := r2.Remaining(); left.ToolCalls != 1 || left.Tokens != 400 {
		t.Errorf("it has %+v left, want 1 tool call and 400 tokens", left)
	}
	if res := budget27Call(rt, ctx, "b1"); res.Status != reach.StatusSuccess {
		t.Fatalf("the third tool call of 3: %+v", res.Error)
	}
	budget27Refused(t, "the fourth tool call of 3", budget27Call(rt, ctx, "b2"), "budget_tool_calls")
	if err := budget27Turn(rt, ctx, 400); err != nil {
		t.Fatal(err)
	}
	r2.End()

	// Its earlier runs spent all of it: the run begun again is refused at
	// its first call, its first turn too, with the usual budget error.
	ctx, r3, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	budget27Refused(t, "the first call of the third run", budget27Call(rt, ctx, "c1"), "budget_tokens")
	_, _, err = rt.BeginModel(ctx, "m")
	if e, ok := err.(*reach.Error); !ok || e.Code != "budget_tokens" {
		t.Fatalf("the first turn of the third run: %v; want refused budget_tokens", err)
	} else {
		budget27Says(t, "the first turn of the third run", e)
	}
	r3.End()

	// A sub-request's budget is carved from what the runs left.
	opts = &reach.RequestOptions{ID: "tree", Principal: "alice", Budget: &reach.Budget{ToolCalls: 10}}
	ctx, t1, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if res := budget27Call(rt, ctx, fmt.Sprint("t", i)); res.Status != reach.StatusSuccess {
			t.Fatalf("t%d: %+v", i, res.Error)
		}
	}
	t1.End()
	ctx, t2, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer t2.End()
	_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "help"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.End()
	if b := sub.Budget(); b.ToolCalls != 4 {
		t.Errorf("the sub-request of the run named again has a budget of %d tool calls, want the 4 its earlier run left", b.ToolCalls)
	}

	// Another owner's request of that id begins afresh, with nothing spent.
	_, other, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "conv", Principal: "bob", Budget: opts.Budget})
	if err != nil {
		t.Fatal(err)
	}
	defer other.End()
	if u := other.Usage(); u.ToolCalls != 0 || u.Tokens != 0 {
		t.Errorf("the id named by another principal has spent %+v, want nothing", u)
	}
}

// TestBudget27NamedAgainKeepsWallClock: a run's wall clock stops when it
// ends; the request named again has what its earlier runs left of its wall
// clock (their time, not the time since the first began), and once they
// used it all it is refused at its first call. Before, an ended request's
// wall clock ran on, and each run had the whole of it.
func TestBudget27NamedAgainKeepsWallClock(t *testing.T) {
	rt := budget27Runtime(nil)
	opts := &reach.RequestOptions{ID: "w", Principal: "alice", Budget: &reach.Budget{Wall: time.Hour}}
	ctx, r1, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res := budget27Call(rt, ctx, "w1"); res.Status != reach.StatusSuccess {
		t.Fatal(res.Error)
	}
	r1.End()
	w1 := r1.Usage().Wall
	if res := budget27Call(rt, t.Context(), "x"); res.Status == reach.StatusSuccess { // time passes
		t.Fatal("a call outside any request ran")
	}
	if w := r1.Usage().Wall; w != w1 || w1 <= 0 {
		t.Fatalf("the ended run's wall clock went from %v to %v; want it stopped at its end", w1, w)
	}
	ctx, r2, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	dl, ok := ctx.Deadline()
	if want := r2.Started().Add(time.Hour - w1); !ok || !dl.Equal(want) {
		t.Errorf("the run named again ends at %v (set %v), want %v: an hour less its first run's %v", dl, ok, want, w1)
	}
	if u := r2.Usage().Wall; u < w1 {
		t.Errorf("it has used %v of its wall clock, less than its first run's %v", u, w1)
	}
	r2.End()

	// A request whose run used its whole wall clock: named again, its
	// first call is refused by the wall-clock budget.
	opts = &reach.RequestOptions{ID: "w-spent", Principal: "alice", Budget: &reach.Budget{Wall: time.Millisecond}}
	ctx, s1, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	s1.End()
	ctx, s2, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.End()
	res := budget27Call(rt, ctx, "late")
	if res.Status == reach.StatusSuccess || res.Error == nil || res.Error.Type != reach.TypeBudget ||
		!strings.Contains(res.Error.Message, "wall") || !strings.Contains(res.Error.Message, "runs") || !strings.Contains(res.Error.Message, "new request") {
		t.Fatalf("the first call of the run named again once its wall clock was used: %s %+v; want refused by the wall-clock budget over its runs", res.Status, res.Error)
	}
}

// budget27SQLite is a runtime over the SQLite store in dir (its audit log,
// checkpoints and request records, History and StoredFrames as the gateway
// wires them); close closes it.
func budget27SQLite(t *testing.T, dir string) (rt *reach.Runtime, close func()) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	hist := durable.NewHistory(st, slog.New(slog.DiscardHandler))
	cp := durable.New(st, nil, nil)
	rt = budget27Runtime(&reach.Options{Recorder: reach.Recorders(log), Checkpoints: cp, Requests: cp, History: hist.Past,
		DisableLoopGuard: true,
		StoredFrames: func(id string) []reach.PastFrame {
			if err := log.Flush(ctx); err != nil {
				t.Errorf("Flush: %v", err)
			}
			return hist.Frames(id)
		}})
	return rt, func() {
		log.Close()
		st.Close()
	}
}

// TestBudget27NamedAgainOnSQLiteAfterRestart: a request that spent its
// tool calls and most of its tokens, its runtime closed and another opened
// on the same SQLite store: the request named again (by Begin alone, no
// view read it first) has what it spent, read back from the store, and its
// first call is refused. Before, the run after the restart had the whole
// budget again.
func TestBudget27NamedAgainOnSQLiteAfterRestart(t *testing.T) {
	dir := t.TempDir()
	opts := &reach.RequestOptions{ID: "conv", Principal: "alice", Budget: &reach.Budget{ToolCalls: 2, Tokens: 1000}}
	rt, closeRT := budget27SQLite(t, dir)
	ctx, r1, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "a2"} {
		if res := budget27Call(rt, ctx, id); res.Status != reach.StatusSuccess {
			t.Fatalf("%s: %+v", id, res.Error)
		}
	}
	if err := budget27Turn(rt, ctx, 700); err != nil {
		t.Fatal(err)
	}
	r1.End()
	closeRT()

	rt, closeRT = budget27SQLite(t, dir)
	defer closeRT()
	ctx, r2, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.End()
	if u := r2.Usage(); u.ToolCalls != 2 || u.Tokens != 700 || u.Turns != 1 {
		t.Fatalf("named again after the restart it has spent %+v; want the 2 tool calls, 700 tokens and 1 turn of its first run", u)
	}
	budget27Refused(t, "the first call after the restart", budget27Call(rt, ctx, "b1"), "budget_tool_calls")
	if err := budget27Turn(rt, ctx, 300); err != nil {
		t.Fatalf("a turn within the 300 tokens left: %v", err)
	}
	_, _, err = rt.BeginModel(ctx, "m")
	if e, ok := err.(*reach.Error); !ok || e.Code != "budget_tokens" {
		t.Fatalf("a turn once the runs spent 1000 tokens of 1000: %v; want refused budget_tokens", err)
	}
}
