package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestRecoverSettlesInterruptedClaim: a write that was running when the
// gateway stopped leaves its idempotency key claimed by a process that is
// gone; recovery settles it, so that the client's retry with the same key
// is told the call may have run, at once, instead of waiting for ever.
func TestRecoverSettlesInterruptedClaim(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	started, never := make(chan struct{}), make(chan struct{})
	defer close(never)
	newRuntime := func(run reach.ToolFunc) *reach.Runtime {
		return durableRuntime(st, reach.Tool{Name: "pay", Access: reach.Write, Idempotent: true, Func: run})
	}
	call := func(rt *reach.Runtime, ctx context.Context) *reach.Result {
		rctx, req, err := rt.Begin(ctx, &reach.RequestOptions{Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		defer req.End()
		return rt.Call(rctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"order":"42"}`), IdempotencyKey: "pay:order-42"})
	}
	// The old process: its call never finishes (the process dies).
	old := newRuntime(func(context.Context, json.RawMessage) (json.RawMessage, error) {
		close(started)
		<-never
		return nil, nil
	})
	go func() {
		rctx, req, err := old.Begin(context.Background(), &reach.RequestOptions{Principal: "alice"})
		if err != nil {
			return
		}
		defer req.End()
		old.Call(rctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"order":"42"}`), IdempotencyKey: "pay:order-42"})
	}()
	<-started
	// The new process recovers, then the client retries.
	rt := newRuntime(func(context.Context, json.RawMessage) (json.RawMessage, error) {
		t.Error("the retry ran the write again")
		return json.RawMessage(`{}`), nil
	})
	rep, err := Recover(ctx, st, rt, nil)
	if err != nil || len(rep.MayHaveRun) != 1 {
		t.Fatalf("recover: %+v %v, want one call that may have run", rep, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res := call(rt, cctx)
	if res.Error == nil || res.Error.Code != "interrupted" || !strings.Contains(res.Error.Suggestion, "Check whether") {
		t.Errorf("the retry after recovery = %s %+v, want the recorded 'interrupted: may have run' answer", res.Status, res.Error)
	}
}

// TestRecoverUndoesDelegatedWrites: after a crash, the completed writes a
// delegated sub-request made are undone with the rest of its interrupted
// request; the writes of a sub-request whose root had finished are not.
func TestRecoverUndoesDelegatedWrites(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	var undone []string
	newRuntime := func() *reach.Runtime {
		return durableRuntime(st, bookTools(func(ref string) { undone = append(undone, ref) })...)
	}
	old := newRuntime()
	book := func(root string, end bool) {
		rctx, req, err := old.Begin(ctx, &reach.RequestOptions{ID: root, Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		sctx, _, err := old.Delegate(rctx, &reach.Delegation{Agent: "booker", Task: "book it"})
		if err != nil {
			t.Fatal(err)
		}
		if res := old.Call(sctx, &reach.Call{ID: "b1", Tool: "book", Arguments: json.RawMessage(`{"ref":"` + root + `"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
		if end {
			req.End() // the sub-request itself is never ended
		}
	}
	book("finished", true)
	book("crashed", false) // the gateway dies here
	if _, err := Recover(ctx, st, newRuntime(), nil); err != nil {
		t.Fatal(err)
	}
	if len(undone) != 1 || undone[0] != "crashed" {
		t.Errorf("undone after the crash: %q, want the crashed request's delegated booking only", undone)
	}
}

// TestUndoNotRerunAfterRestart: an undo that ran in process (a later write
// of the request failed) is not run again by recovery after a crash: the
// runtime's own idempotency keys are not scoped to a principal.
func TestUndoNotRerunAfterRestart(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	undos := 0
	newRuntime := func() *reach.Runtime {
		return durableRuntime(st, bookTools(func(string) { undos++ })...)
	}
	old := newRuntime()
	rctx, req, err := old.Begin(ctx, &reach.RequestOptions{ID: "r1", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := old.Call(rctx, &reach.Call{ID: "b1", Tool: "book", Arguments: json.RawMessage(`{"ref":"x"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if done := req.Compensate(rctx, "a later write failed"); len(done) != 1 || !done[0].OK {
		t.Fatalf("compensate: %+v", done)
	}
	// The gateway dies here, r1 still running.
	if _, err := Recover(ctx, st, newRuntime(), nil); err != nil {
		t.Fatal(err)
	}
	if undos != 1 {
		t.Errorf("unbook ran %d times for one booking (in process, then again by recovery)", undos)
	}
}

// TestRecoveryCompensatesAsThePrincipal: after a crash, the undos of an
// interrupted request act for its principal, in its tenant, with its roles
// and attributes (so a policy judges them as it judged the writes, and the
// owner sees them), and their frames are in the request's trace.
func TestRecoveryCompensatesAsThePrincipal(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	var undoneBy *reach.Request
	tools := bookTools(func(string) {})
	tools[1].Func = func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		undoneBy, _ = reach.RequestFrom(ctx)
		return a, nil
	}
	old := durableRuntime(st, tools...)
	rctx, req, err := old.Begin(ctx, &reach.RequestOptions{ID: "r1", Principal: "alice", Tenant: "acme",
		Roles: []string{"buyer"}, Attributes: map[string]string{"department": "sales"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := old.Call(rctx, &reach.Call{ID: "b1", Tool: "book", Arguments: json.RawMessage(`{"ref":"x"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// The gateway dies here, r1 still running.
	rep, err := Recover(ctx, st, durableRuntime(st, tools...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if undoneBy == nil {
		t.Fatalf("recovery did not undo the booking: %+v", rep)
	}
	got := fmt.Sprint(undoneBy.Principal(), undoneBy.Tenant(), undoneBy.Roles(), undoneBy.Attributes())
	if want := fmt.Sprint("alice", "acme", []string{"buyer"}, map[string]string{"department": "sales"}); got != want {
		t.Errorf("recovery's undo acts for %s, want %s", got, want)
	}
	if undoneBy.Trace() != req.Trace() {
		t.Errorf("recovery's undo is in trace %x, want the request's %x", undoneBy.Trace(), req.Trace())
	}
}

// durableRuntime is a runtime over st with its checkpoints, dead letters
// and idempotency records there, and tools.
func durableRuntime(st *sqlite.Store, tools ...reach.Tool) *reach.Runtime {
	cp := New(st, nil, nil)
	rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil), DefaultBudget: &reach.Budget{}})
	rt.MustRegister(tools...)
	return rt
}

// bookTools are a booking write and its undo, which calls undone.
func bookTools(undone func(ref string)) []reach.Tool {
	return []reach.Tool{
		{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil },
			Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
		{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Ref string }
				json.Unmarshal(a, &in)
				undone(in.Ref)
				return json.RawMessage(`"ok"`), nil
			}},
	}
}

// tempStore opens a SQLite store in a folder of the test's own; it is
// closed when the test and its cleanups are done.
func tempStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
