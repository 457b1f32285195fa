package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// failingUndo is a booking write whose undo fails until fixed.
type failingUndo struct {
	fixed  bool
	runs   int        // runs of the undo, failed or not
	traces [][16]byte // the trace of each run
}

func (u *failingUndo) tools() []reach.Tool {
	return []reach.Tool{
		{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil },
			Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
		{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				u.runs++
				r, _ := reach.RequestFrom(ctx)
				u.traces = append(u.traces, r.Trace())
				if !u.fixed {
					return nil, &reach.ToolError{Type: "conflict", Message: "the booking system refused"}
				}
				return json.RawMessage(`"ok"`), nil
			}},
	}
}

// bookAndFail begins request id, books refs and compensates: every undo
// fails and is dead-lettered. The request is left running.
func bookAndFail(t *testing.T, rt *reach.Runtime, id string, refs ...string) *reach.Request {
	t.Helper()
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: id, Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs {
		if res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint("b", i), Tool: "book", Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	for _, c := range req.Compensate(ctx, "a later write failed") {
		if c.OK {
			t.Fatalf("the undo of %s succeeded, want it dead-lettered", c.Undoes)
		}
	}
	return req
}

// storedDeadLetters lists the store's dead letters as "tool state attempts note".
func storedDeadLetters(t *testing.T, st store.DeadLetters) string {
	t.Helper()
	ds, err := st.ListDeadLetters(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s %s %d %q", d.Tool, d.State, d.Attempts, d.Note))
	}
	return strings.Join(out, "; ")
}

// TestDeadLetterRetryAndDismissAreStored: a library user's retry or
// dismissal of a dead letter (Runtime.RetryDeadLetter,
// Runtime.DismissDeadLetter) is recorded on the stored dead letter, which
// otherwise stays open for ever.
func TestDeadLetterRetryAndDismissAreStored(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	u := &failingUndo{}
	rt := durableRuntime(st, u.tools()...)
	bookAndFail(t, rt, "r1", "x", "y")
	dls := openDeadLetters(t, rt) // oldest first: the undo of y, then of x
	if len(dls) != 2 {
		t.Fatalf("open dead letters: %+v, want 2", dls)
	}
	steps := []struct {
		name string
		do   func() error
		want string
	}{{
		name: "added",
		do:   func() error { return nil },
		want: `unbook open 1 ""; unbook open 1 ""`,
	}, {
		name: "a retry that fails again",
		do: func() error {
			_, _, err := rt.RetryDeadLetter(ctx, dls[0].ID, "ops")
			return err
		},
		want: `unbook open 2 ""; unbook open 1 ""`,
	}, {
		name: "a retry that succeeds",
		do: func() error {
			u.fixed = true
			res, _, err := rt.RetryDeadLetter(ctx, dls[0].ID, "ops")
			if err == nil && res.IsError() {
				err = res.Err()
			}
			return err
		},
		want: `unbook retried 3 "retried by ops"; unbook open 1 ""`,
	}, {
		name: "a dismissal",
		do: func() error {
			_, err := rt.DismissDeadLetter(ctx, dls[1].ID, "ops", "released by hand")
			return err
		},
		want: `unbook retried 3 "retried by ops"; unbook resolved 1 "dismissed by ops: released by hand"`,
	}}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := storedDeadLetters(t, st); got != s.want {
			t.Errorf("after %s, stored dead letters:\n got %s\nwant %s", s.name, got, s.want)
		}
	}
	if n := len(openDeadLetters(t, rt)); n != 0 {
		t.Errorf("%d dead letters left open, want none", n)
	}
}

// openDeadLetters returns the runtime's open dead letters.
func openDeadLetters(t *testing.T, rt *reach.Runtime) []reach.DeadLetter {
	t.Helper()
	dls, err := rt.DeadLetters(context.Background(), reach.DeadLetterOpen)
	if err != nil {
		t.Fatal(err)
	}
	return dls
}

// TestRecoverLeavesDeadLettersToTheOperator: an undo that was
// dead-lettered before the gateway stopped (its request still running) is
// not run again by recovery, and not dead-lettered a second time.
func TestRecoverLeavesDeadLettersToTheOperator(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	u := &failingUndo{}
	bookAndFail(t, durableRuntime(st, u.tools()...), "r1", "x")
	// The gateway dies here, r1 still running; the new one recovers.
	rep, err := Recover(ctx, st, durableRuntime(st, u.tools()...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := storedDeadLetters(t, st), `unbook open 1 ""`; got != want {
		t.Errorf("stored dead letters after recovery:\n got %s\nwant %s", got, want)
	}
	if u.runs != 1 || len(rep.Compensated["r1"]) != 0 {
		t.Errorf("the undo ran %d times (recovery ran %+v), want once, before the stop", u.runs, rep.Compensated["r1"])
	}
	if len(rep.Interrupted) != 1 {
		t.Errorf("interrupted = %v, want r1", rep.Interrupted)
	}
}

// TestDeadLettersOutliveARestart: after a restart, the runtime's queue is
// the store's: the open dead letters stored before it are listed (once,
// beside those recovery adds), a library user's Runtime.RetryDeadLetter
// and Runtime.DismissDeadLetter settle them in the store, in the trace of
// their request; settled ones are not listed as open. A dead letter that a
// crash left taken is open again after recovery.
func TestDeadLettersOutliveARestart(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	u := &failingUndo{}
	old := durableRuntime(st, u.tools()...)
	r1 := bookAndFail(t, old, "r1", "x", "y")
	for _, d := range openDeadLetters(t, old) {
		if strings.Contains(d.Undoes, `"x"`) {
			if _, err := old.DismissDeadLetter(ctx, d.ID, "ops", "released by hand"); err != nil {
				t.Fatal(err)
			}
		}
	}
	rctx, r2, err := old.Begin(ctx, &reach.RequestOptions{ID: "r2", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := old.Call(rctx, &reach.Call{ID: "b", Tool: "book", Arguments: json.RawMessage(`{"ref":"z"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// An operator's action takes the undo of y, and the gateway dies there,
	// r1 and r2 running; the new one recovers, and the undo of z fails again.
	if ds, _ := st.ListDeadLetters(ctx, store.DeadOpen); len(ds) == 1 {
		if _, err := st.TakeDeadLetter(ctx, ds[0].ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	rt := durableRuntime(st, u.tools()...)
	for range 2 { // a second recovery restores nothing twice
		if _, err := Recover(ctx, st, rt, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(u.traces) == 0 || u.traces[len(u.traces)-1] != r2.Trace() {
		t.Errorf("recovery's undo of z ran in traces %x, the last one want r2's %x", u.traces, r2.Trace())
	}
	var got []string
	byUndone := map[string]string{}
	for _, d := range openDeadLetters(t, rt) {
		got = append(got, fmt.Sprintf("%s %s %s %s", d.Request, d.Tool, d.Undoes, d.State))
		byUndone[d.Undoes] = d.ID
	}
	if g, want := strings.Join(got, "; "), `r1 unbook book {"ref":"y"} open; r2 unbook book {"ref":"z"} open`; g != want {
		t.Fatalf("open dead letters after recovery:\n got %s\nwant %s", g, want)
	}
	u.fixed = true
	if res, _, err := rt.RetryDeadLetter(ctx, byUndone[`book {"ref":"y"}`], "ops"); err != nil || res.IsError() {
		t.Fatalf("retrying the restored dead letter: %v %+v", err, res)
	}
	if last := u.traces[len(u.traces)-1]; last != r1.Trace() {
		t.Errorf("the retry of r1's restored dead letter ran in trace %x, want r1's %x", last, r1.Trace())
	}
	if _, err := rt.DismissDeadLetter(ctx, byUndone[`book {"ref":"z"}`], "ops", "done by hand"); err != nil {
		t.Fatal(err)
	}
	// Oldest first: the undo of y (dead-lettered first, newest first), of x, of z.
	want := `unbook retried 2 "retried by ops"; unbook resolved 1 "dismissed by ops: released by hand"; unbook resolved 1 "dismissed by ops: done by hand"`
	if got := storedDeadLetters(t, st); got != want {
		t.Errorf("stored dead letters:\n got %s\nwant %s", got, want)
	}
	if n := len(openDeadLetters(t, rt)); n != 0 {
		t.Errorf("%d dead letters left open, want none", n)
	}
}
