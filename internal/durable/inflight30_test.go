package durable

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// TestWriteInFlightUndoneAfterAKill: a write of request r is running when
// r is stopped (its tool does not stop when cancelled), and r is ended at
// once (a client's end, an A2A hand-off's). The write completes after, and
// the store is frozen (a kill) right after its end's checkpoint (durable,
// with its undo), before its compensation's request is begun (before, at
// that request: the write's end came after its undo). After the
// restart the write is undone once and r is stopped and ended. Before,
// r's end was stored at once (nothing was owed yet), so r was stopped and
// ended when the kill came: no recovery found it, and the write stayed
// done.
func TestWriteInFlightUndoneAfterAKill(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	var mu sync.Mutex
	undone := map[string]int{}
	entered, release := make(chan struct{}), make(chan struct{})
	newRuntime := func(s Store) *reach.Runtime {
		cp := New(s, nil, nil)
		rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil),
			DefaultBudget: &reach.Budget{}})
		tools := bookTools(func(ref string) { mu.Lock(); undone[ref]++; mu.Unlock() })
		tools[0].Func = func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(a), `"w"`) {
				close(entered)
				<-release // its cancellation ignored
			}
			return a, nil
		}
		rt.MustRegister(tools...)
		return rt
	}
	// Frozen at the write's end (its undo with it) or, before (its undo
	// ran before its end was recorded), at its compensation's request.
	fz := &frozen{Store: st, hit: make(chan struct{}),
		frame: func(f *store.Frame) bool {
			return f.Request == "r" && f.Name == "book" && f.State == "completed" && len(f.Undo) > 0
		},
		request: func(r *store.Request) bool { return strings.Contains(r.ID, "/compensate/") }}
	old := newRuntime(fz)
	rctx, r, err := old.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	go old.Call(rctx, &reach.Call{ID: "w", Tool: "book", IdempotencyKey: "w", Arguments: json.RawMessage(`{"ref":"w"}`)})
	<-entered
	r.Stop(reach.Cancel, "api", "enough")
	r.End()
	close(release)
	select {
	case <-fz.hit:
	case <-time.After(time.Minute):
		t.Fatal("the write's end was not checkpointed within a minute")
	}
	rep, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(undone)
	mu.Unlock()
	if want := map[string]int{"w": 1}; !maps.Equal(got, want) {
		t.Errorf("undone %v after the restart (stopped %v); want %v: the write that completed after the stop undone once", got, rep.Stopped, want)
	}
	if rec, err := st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
		t.Errorf("r after the restart: %+v (%v); want stopped and ended", rec, err)
	}
	if ds, err := st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
		t.Errorf("dead letters after the restart: %d (%v); want none", len(ds), err)
	}
}

// TestRecoveryUndoThatIgnoresItsContext: the restart's undo of a stopped
// request's write ignores its cancellation and never answers. The recovery
// waits for it its tool's time only (its timeout, attempts and backoffs):
// it is dead-lettered as "may have run", the request is stored stopped and
// ended, and the recovery returns (the gateway serves). Before, the
// recovery waited for it for good, and the gateway never started.
func TestRecoveryUndoThatIgnoresItsContext(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	newRuntime := func(s Store, undo reach.ToolFunc) *reach.Runtime {
		cp := New(s, nil, nil)
		rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil),
			DefaultBudget: &reach.Budget{}})
		tools := bookTools(func(string) {})
		tools[1].Timeout, tools[1].Retry = 10*time.Millisecond, &reach.RetryPolicy{Attempts: 2, Base: time.Millisecond}
		if undo != nil {
			tools[1].Func = undo
		}
		rt.MustRegister(tools...)
		return rt
	}
	// The stop is stored, the kill comes before its undo's request begins.
	fz := &frozen{Store: st, hit: make(chan struct{}), request: func(r *store.Request) bool { return strings.Contains(r.ID, "/compensate/") }}
	old := newRuntime(fz, nil)
	rctx, r, err := old.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := old.Call(rctx, &reach.Call{ID: "b", Tool: "book", IdempotencyKey: "b", Arguments: json.RawMessage(`{"ref":"b"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	r.Stop(reach.Cancel, "api", "enough")
	<-fz.hit
	rep, err := Recover(ctx, st, newRuntime(st, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		<-hang // its cancellation ignored
		return nil, nil
	}), &RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if comps := rep.Compensated["r"]; len(comps) != 1 || comps[0].OK || comps[0].DeadLetter == "" {
		t.Errorf("compensated %+v; want the undo that did not answer dead-lettered", comps)
	}
	ds, err := st.ListDeadLetters(ctx, "")
	if err != nil || len(ds) != 1 || !strings.Contains(ds[0].Error, "may have run") {
		t.Errorf("dead letters %+v (%v); want the undo that did not answer, as may have run", ds, err)
	}
	if rec, err := st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
		t.Errorf("r after the restart: %+v (%v); want stopped and ended", rec, err)
	}
}

// TestLateWriteUndoneAfterAKill: a write of request r is running when r is
// stopped and ended, and its tool ignores the stop past its time: r's end
// is stored without it (stopped and ended). The write completes after,
// and the store is frozen (a kill) right after its end's checkpoint, with
// its undo. After the restart the write is undone once: its compensation's
// request was begun before its end was recorded, and the restart, finding
// that compensation cut off, runs the stopped request's undos. Before, the
// compensation's request came after the write's end: the kill left r
// stopped and ended, which no recovery found, and the write stayed done.
func TestLateWriteUndoneAfterAKill(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	var mu sync.Mutex
	undone := map[string]int{}
	entered, release, endStored := make(chan struct{}), make(chan struct{}), make(chan struct{})
	newRuntime := func(s Store) *reach.Runtime {
		cp := New(s, nil, nil)
		rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil),
			DefaultBudget: &reach.Budget{}})
		tools := bookTools(func(ref string) { mu.Lock(); undone[ref]++; mu.Unlock() })
		tools[0].Timeout, tools[0].Retry = 10*time.Millisecond, &reach.RetryPolicy{Attempts: 1}
		tools[0].Func = func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(a), `"w"`) {
				close(entered)
				<-release // its cancellation ignored, past its time
			}
			return a, nil
		}
		rt.MustRegister(tools...)
		return rt
	}
	var once sync.Once
	fz := &frozen{Store: st, hit: make(chan struct{}),
		frame: func(f *store.Frame) bool {
			return f.Request == "r" && f.Name == "book" && f.State == "completed" && len(f.Undo) > 0
		},
		request: func(r *store.Request) bool {
			if r.ID == "r" && !r.Ended.IsZero() {
				once.Do(func() { close(endStored) })
			}
			return false
		}}
	old := newRuntime(fz)
	rctx, r, err := old.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	go old.Call(rctx, &reach.Call{ID: "w", Tool: "book", IdempotencyKey: "w", Arguments: json.RawMessage(`{"ref":"w"}`)})
	<-entered
	r.Stop(reach.Cancel, "api", "enough")
	r.End()
	<-endStored // past the write's time: r's end stored without it
	close(release)
	<-fz.hit
	rep, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(undone)
	mu.Unlock()
	if want := map[string]int{"w": 1}; !maps.Equal(got, want) {
		t.Errorf("undone %v after the restart (stopped %v); want %v: the write that completed after its request's end undone once", got, rep.Stopped, want)
	}
	if rec, err := st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
		t.Errorf("r after the restart: %+v (%v); want stopped and ended", rec, err)
	}
	if ds, err := st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
		t.Errorf("dead letters after the restart: %d (%v); want none", len(ds), err)
	}
}
