package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// endsAfterUndos registers "book" (a write whose undo is "unbook") and
// "unbook", which tells entered of each undo and runs undo for it.
func endsAfterUndos(rt *reach.Runtime, timeout time.Duration, entered chan<- string, undo func(ctx context.Context, ref string) error) {
	rt.MustRegister(
		reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil },
			Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
		reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Timeout: timeout,
			Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Ref string }
				json.Unmarshal(a, &in)
				entered <- in.Ref
				if err := undo(ctx, in.Ref); err != nil {
					return nil, err
				}
				return json.RawMessage(`"ok"`), nil
			}})
}

// waitRecorded waits (a minute at most) until the store was told want.
func waitRecorded(t *testing.T, st *heldStops, want string) []string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		got := st.records()
		if slices.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("recorded %v; want %q within a minute", got, want)
		}
	}
}

// count is how many times s is in got.
func count(got []string, s string) int {
	n := 0
	for _, g := range got {
		if g == s {
			n++
		}
	}
	return n
}

// TestStoppedEndAfterUndoThatFails: a stopped request whose stop's undo
// fails (an error, a panic of the tool, an undo that never answers and
// times out) has its end recorded all the same, once, after the undo was
// dead-lettered: the end waits for the compensation, not for its success,
// and the compensation is bounded by the undo's attempts.
func TestStoppedEndAfterUndoThatFails(t *testing.T) {
	for name, undo := range map[string]func(ctx context.Context, ref string) error{
		"fails": func(context.Context, string) error {
			return &reach.ToolError{Type: "invalid", Message: "no such booking"}
		},
		"panics": func(context.Context, string) error { panic("unbook broke") },
		"hangs":  func(ctx context.Context, _ string) error { <-ctx.Done(); return ctx.Err() },
	} {
		t.Run(name, func(t *testing.T) {
			st := &heldStops{}
			entered := make(chan string, 16)
			rt := reach.New(&reach.Options{Requests: st})
			endsAfterUndos(rt, 20*time.Millisecond, entered, undo)
			ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if res := rt.Call(ctx, &reach.Call{ID: "b", Tool: "book", Arguments: json.RawMessage(`{"ref":"r1"}`)}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			r.Stop(reach.Cancel, "operator", "enough")
			<-entered
			r.End()
			got := waitRecorded(t, st, "end r stopped_cancel")
			if n := count(got, "end r stopped_cancel"); n != 1 {
				t.Errorf("recorded %v; want r's end once", got)
			}
			dls, err := rt.DeadLetters(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(dls) != 1 || dls[0].Request != "r" || dls[0].Tool != "unbook" {
				t.Errorf("dead letters %+v; want the failed unbook of r", dls)
			}
		})
	}
}

// TestStoppedTwiceEndOnce: a request stopped twice (cancel, then isolate
// while the cancel's undo runs), ended in between, has its end recorded
// once, after the undo, with the stronger stop's state; the second stop
// runs no compensation of its own (the first took the undos).
func TestStoppedTwiceEndOnce(t *testing.T) {
	st := &heldStops{}
	entered, release := make(chan string, 16), make(chan struct{})
	rt := reach.New(&reach.Options{Requests: st})
	endsAfterUndos(rt, 0, entered, func(_ context.Context, ref string) error {
		<-release
		st.note("undo " + ref)
		return nil
	})
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"r1", "r2"} {
		if res := rt.Call(ctx, &reach.Call{ID: ref, Tool: "book", Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	r.Stop(reach.Cancel, "operator", "enough")
	<-entered
	r.End()
	r.Stop(reach.Isolate, "operator", "now")
	if got := st.records(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "end r ") }) {
		t.Errorf("recorded %v while the undos ran; want r's end after them", got)
	}
	close(release)
	end := "end r " + string(r.State())
	got := waitRecorded(t, st, end)
	if count(got, end) != 1 || slices.Index(got, end) < slices.Index(got, "undo r1") || !slices.Contains(got, "undo r2") {
		t.Errorf("recorded %v; want both undos, then r's end once", got)
	}
	if n := len(entered); n != 1 { // r2's undo entered too (first: newest first), nothing more
		t.Errorf("%d undos entered after the first; want 1 (each undo once)", n)
	}
}

// TestManyStoppedSubRequestsEndAfterTheirUndos: a stop above stops many
// sub-requests, each with a write to undo, each ended (from its own
// goroutine) while its undo runs: each end is recorded once, after its own
// undo, and none before. Run with -race: the count of compensations owed
// is written by each stop's goroutine and read by each end.
func TestManyStoppedSubRequestsEndAfterTheirUndos(t *testing.T) {
	const n = 24
	st := &heldStops{}
	entered, release := make(chan string, n), make(chan struct{})
	rt := reach.New(&reach.Options{Requests: st})
	endsAfterUndos(rt, 0, entered, func(_ context.Context, ref string) error {
		<-release
		st.note("undo " + ref)
		return nil
	})
	pctx, p, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	subs := make([]*reach.Request, n)
	for i := range subs {
		sctx, s, err := rt.Delegate(pctx, &reach.Delegation{Agent: "sub", Task: fmt.Sprintf("book u%d", i), ID: fmt.Sprintf("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if res := rt.Call(sctx, &reach.Call{ID: fmt.Sprintf("b%d", i), Tool: "book", Arguments: json.RawMessage(fmt.Sprintf(`{"ref":"u%d"}`, i))}); res.IsError() {
			t.Fatal(res.ModelText())
		}
		subs[i] = s
	}
	p.Stop(reach.Cancel, "operator", "enough")
	for range n {
		select {
		case <-entered:
		case <-time.After(time.Minute):
			t.Fatal("the stop's undos did not all begin within a minute")
		}
	}
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(s.End)
	}
	wg.Wait()
	if got := st.records(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "end s") }) {
		t.Errorf("recorded %v while their undos ran; want each end after its undo", got)
	}
	close(release)
	for i, s := range subs {
		end := "end " + s.ID() + " " + string(s.State())
		got := waitRecorded(t, st, end)
		if u, e := slices.Index(got, fmt.Sprintf("undo u%d", i)), slices.Index(got, end); u < 0 || e < u || count(got, end) != 1 {
			t.Errorf("recorded %v; want %q once, after its undo", got, end)
		}
	}
}

// TestCompensationsInFlightThenEnd: many compensations of one stopped
// request at once (its client's Compensate, from many goroutines, while
// the stop's runs), the request ended among them: the end is recorded
// once, after the undo, whatever the order in which they finish; and a
// later stopped request with nothing owed ends at once (the count came
// back to zero: none left over, none under).
func TestCompensationsInFlightThenEnd(t *testing.T) {
	st := &heldStops{}
	entered, release := make(chan string, 16), make(chan struct{})
	rt := reach.New(&reach.Options{Requests: st})
	endsAfterUndos(rt, 0, entered, func(_ context.Context, ref string) error {
		<-release
		st.note("undo " + ref)
		return nil
	})
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if res := rt.Call(ctx, &reach.Call{ID: "b", Tool: "book", Arguments: json.RawMessage(`{"ref":"r1"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	r.Stop(reach.Cancel, "operator", "enough")
	<-entered
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() { r.Compensate(context.Background(), "again") })
	}
	wg.Go(r.End)
	wg.Wait()
	if got := st.records(); slices.Contains(got, "end r stopped_cancel") {
		t.Errorf("recorded %v while the undo ran; want r's end after it", got)
	}
	close(release)
	got := waitRecorded(t, st, "end r stopped_cancel")
	if count(got, "end r stopped_cancel") != 1 || slices.Index(got, "end r stopped_cancel") < slices.Index(got, "undo r1") {
		t.Errorf("recorded %v; want r's end once, after its undo", got)
	}
	// Its compensations all paid: a compensation now, with nothing to
	// undo, records no second end.
	r.Compensate(context.Background(), "after")
	if got := st.records(); count(got, "end r stopped_cancel") != 1 {
		t.Errorf("recorded %v; want r's end once", got)
	}
}
