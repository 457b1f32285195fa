package durable

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	reach "github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// A hand-off under a delegate frame that another runtime runs, on a store
// both share: the delegate frame's row (written when its sub-request
// begins) keeps its stack, and the runtime that adopts it checks the
// hand-off against it as against its own: one level deeper, the same task
// handed to a reentrant agent on that stack a cycle, and the depth budget
// counted through both. Before, only a tool call's checkpoint kept its
// stack: a delegate frame had no row, and a hand-off under it began at
// the top of the request it joined.
func TestAdopt37HandOffUnderAnotherRuntimesDelegateFrame(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	runtime := func(life string) *reach.Runtime {
		cp := New(st, nil, nil)
		cp.Share(life)
		return reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DefaultBudget: &reach.Budget{Depth: 4}})
	}
	one, two := runtime("one/1"), runtime("two/1")

	ctx1, root, err := one.Begin(ctx, &reach.RequestOptions{Agent: "root"})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	ctx1, planner, err := one.Delegate(ctx1, &reach.Delegation{Agent: "planner", Task: "Plan the trip", Reentrancy: reach.Reentrant})
	if err != nil {
		t.Fatal(err)
	}
	defer planner.End()
	_, executor, err := one.Delegate(ctx1, &reach.Delegation{Agent: "executor", Task: "book it", Reentrancy: reach.Reentrant})
	if err != nil {
		t.Fatal(err)
	}
	defer executor.End()
	d := executor.DelegateFrame()

	// What instance two reads (cluster.Cluster.Frame, by the frame's id).
	rows, err := st.RequestFrames(ctx, executor.ID())
	if err != nil {
		t.Fatal(err)
	}
	var row *store.Frame
	for _, f := range rows {
		if f.Frame == d.ID.String() {
			row = f
		}
	}
	if row == nil || len(row.Stack) == 0 {
		t.Fatalf("no row with a stack for the delegate frame %s in %s: %+v", d.ID, executor.ID(), rows)
	}
	if row.Kind != "delegate" || row.Owner != "one/1" || row.Request != executor.ID() {
		t.Errorf("row %+v: want kind delegate, owned by the life that made it (its recovery settles it), in the sub-request", row)
	}
	var stack []reach.Ancestor
	if err := json.Unmarshal(row.Stack, &stack); err != nil {
		t.Fatal(err)
	}

	under := func(t *testing.T) context.Context {
		ctx2, joined, err := two.Begin(ctx, &reach.RequestOptions{Agent: "executor"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(joined.End)
		top, err := two.AdoptAncestry(joined, stack)
		if err != nil {
			t.Fatal(err)
		}
		return reach.WithParent(ctx2, top)
	}
	t.Run("the planner's own task again is a cycle", func(t *testing.T) {
		_, sub, err := two.Delegate(under(t), &reach.Delegation{Agent: "planner", Task: "plan  the trip.", Reentrancy: reach.Reentrant})
		if sub != nil {
			sub.End()
		}
		if codeOf(err) != "delegation_cycle" {
			t.Fatalf("A (one) -> B (one) -> A (two), the same task: %v, want delegation_cycle", err)
		}
	})
	t.Run("another task nests one level below, within the depth budget", func(t *testing.T) {
		c, sub, err := two.Delegate(under(t), &reach.Delegation{Agent: "planner", Task: "book the hotel", Reentrancy: reach.Reentrant})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.End()
		if got, want := sub.DelegateFrame().Depth, d.Depth+1; got != want {
			t.Errorf("depth %d, want %d (one below the adopted delegate frame)", got, want)
		}
		// Depth 4 is the budget's: the next hand-off (5) is refused.
		_, sub2, err := two.Delegate(c, &reach.Delegation{Agent: "executor", Task: "pay the hotel", Reentrancy: reach.Reentrant})
		if err != nil {
			t.Fatal(err)
		}
		defer sub2.End()
		_, sub3, err := two.Delegate(sub2.Context(), &reach.Delegation{Agent: "planner", Task: "find a taxi", Reentrancy: reach.Reentrant})
		if sub3 != nil {
			sub3.End()
		}
		if codeOf(err) != "budget_depth" {
			t.Fatalf("a 5th hand-off on the stack: %v, want budget_depth", err)
		}
	})
	// Once the hand-off ended, its sub-request's stored graph (as views
	// of an earlier run show it) lists no frame for the row: the delegate
	// frame is its parent request's.
	executor.End()
	p, ok := NewHistory(st, nil).Past(executor.ID())
	if !ok {
		t.Fatalf("no stored request %s", executor.ID())
	}
	frames, _ := p.Load()
	for _, f := range frames {
		if f.ID == d.ID {
			t.Errorf("the sub-request's stored graph lists its delegate frame's row as a frame of its own: %+v", f)
		}
	}
}

func codeOf(err error) string {
	if e, ok := errors.AsType[*reach.Error](err); ok {
		return e.Code
	}
	return ""
}
