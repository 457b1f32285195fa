package durable

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	reach "github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// ownedOpen is a Shared over a Memory store whose dead lives are lives:
// their open checkpoints are the store's, by owner.
type ownedOpen struct {
	deadLives
	st *store.Memory
}

func (o *ownedOpen) OpenFramesOf(ctx context.Context, owners []string) ([]*store.Frame, error) {
	open, err := o.st.OpenFrames(ctx)
	return slices.DeleteFunc(open, func(f *store.Frame) bool { return !slices.Contains(owners, f.Owner) }), err
}

// delegateRowOf returns the row of the delegate frame of sub, as another
// instance reads it (cluster.Cluster.Frame), or nil.
func delegateRowOf(t *testing.T, st *store.Memory, sub *reach.Request) *store.Frame {
	t.Helper()
	rows, err := st.RequestFrames(context.Background(), sub.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rows {
		if f.Frame == sub.DelegateFrame().ID.String() {
			return f
		}
	}
	return nil
}

// The row of a hand-off's delegate frame, on a store that several
// instances share, ends when the hand-off ends, however it ends (answered,
// stopped, stopped from above): its state is the frame's, and its stack
// stays for the instances that read it. Before, it stayed "executing",
// owned by no one, until retention removed its request: a hand-off long
// over stood in the shared store as one that runs.
func TestCore38DelegateRowEndsWithItsHandOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(parent, sub *reach.Request)
		want string
	}{
		{"answered", func(_, sub *reach.Request) { sub.EndWith("done") }, "completed"},
		{"stopped", func(_, sub *reach.Request) { sub.Stop(reach.Cancel, "alice", "not needed") }, "cancelled"},
		{"its caller stopped", func(parent, _ *reach.Request) { parent.Stop(reach.Cancel, "alice", "not needed") }, "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := store.NewMemory()
			cp := New(st, nil, nil)
			cp.Share("one/1")
			rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp})
			ctx, root, err := rt.Begin(ctx, &reach.RequestOptions{Agent: "root"})
			if err != nil {
				t.Fatal(err)
			}
			defer root.End()
			_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "planner", Task: "plan the trip"})
			if err != nil {
				t.Fatal(err)
			}
			if row := delegateRowOf(t, st, sub); row == nil || row.State != "executing" || row.Owner != "one/1" {
				t.Fatalf("the delegate frame's row while its hand-off runs: %+v, want executing, owned by one/1", row)
			}
			tc.end(root, sub)
			sub.End()
			row := delegateRowOf(t, st, sub)
			if row == nil {
				t.Fatal("no row for the delegate frame")
			}
			if row.State != tc.want || row.Kind != "delegate" {
				t.Errorf("the delegate frame's row once its hand-off is over: kind %s, state %s, want delegate, %s", row.Kind, row.State, tc.want)
			}
			var stack []reach.Ancestor
			if err := json.Unmarshal(row.Stack, &stack); err != nil || len(stack) == 0 || stack[0].ID != sub.DelegateFrame().ID {
				t.Errorf("its stack: %s (%v), want the delegate frame innermost", row.Stack, err)
			}
			if open, _ := st.OpenFrames(ctx); len(open) != 0 {
				t.Errorf("open rows left: %+v", open)
			}
		})
	}
}

// A kill of the instance while its hand-off ran left the delegate frame's
// row executing: the recovery of that dead life settles it (cancelled,
// interrupted), as it settles the life's calls, but does not list it
// among the calls that may have run. Before, the row had no owner: no
// recovery found it, and it stood as a running hand-off for good.
func TestCore38DeadLifesDelegateRowSettled(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	cp := New(st, nil, nil)
	cp.Share("one/1")
	one := reach.New(&reach.Options{Checkpoints: cp, Requests: cp})
	ctx1, root, err := one.Begin(ctx, &reach.RequestOptions{Agent: "root"})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := one.Delegate(ctx1, &reach.Delegation{Agent: "planner", Task: "plan the trip"})
	if err != nil {
		t.Fatal(err)
	}
	_ = root // instance one is killed here: neither ends

	cp2 := New(st, nil, nil)
	cp2.Share("two/1")
	two := reach.New(&reach.Options{Checkpoints: cp2, Requests: cp2})
	rep, err := Recover(ctx, st, two, &RecoverOptions{Shared: &ownedOpen{deadLives{[]string{"one/1"}}, st}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.MayHaveRun {
		if f.Kind == "delegate" {
			t.Errorf("the recovery lists a hand-off's row among the calls that may have run: %+v", f)
		}
	}
	row := delegateRowOf(t, st, sub)
	if row == nil || row.State != "cancelled" {
		t.Fatalf("the dead life's delegate frame's row after its recovery: %+v, want cancelled", row)
	}
	var e struct{ Code string }
	if err := json.Unmarshal(row.Error, &e); err != nil || e.Code != "interrupted" {
		t.Errorf("its error: %s (%v), want code interrupted", row.Error, err)
	}
}
