package durable

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// frozen is a store whose requests' writes that match request never reach
// it, and whose frames' writes that match frame are the last to: the first
// such write signals hit and waits forever, as a process killed there
// would. What was written before stays; a recovery reads the store
// underneath.
type frozen struct {
	*sqlite.Store
	request func(*store.Request) bool
	frame   func(*store.Frame) bool
	once    sync.Once
	hit     chan struct{}
}

func (f *frozen) stop() {
	f.once.Do(func() { close(f.hit) })
	select {} // killed: nothing after this write runs
}

func (f *frozen) PutRequest(ctx context.Context, r *store.Request) error {
	if f.request != nil && f.request(r) {
		f.stop()
	}
	return f.Store.PutRequest(ctx, r)
}

func (f *frozen) PutFrame(ctx context.Context, fr *store.Frame) error {
	err := f.Store.PutFrame(ctx, fr)
	if f.frame != nil && f.frame(fr) {
		f.stop()
	}
	return err
}

// TestStoppedEndStoredAfterItsUndos: request r books two legs and is
// stopped by a stop of its own; its end comes at once (a client's end, an
// A2A hand-off's as its stop reaches it) while the stop's undos run. The
// store is frozen (a kill) at each point between the stop and the last
// undo:
//
//   - "before the first undo": the compensation's request not begun.
//     Before, r's end was stored then (stopped and ended): no recovery
//     found it, and both legs stayed booked;
//   - "between the undos": the newer leg's undo ended (durable), the
//     older one's not begun;
//   - "after the last undo": both ran, r's end not written.
//
// After the restart each leg is undone once, none dead-lettered, r is
// stopped and ended, and a second restart finds nothing.
func TestStoppedEndStoredAfterItsUndos(t *testing.T) {
	compensation := func(id string) bool { return strings.Contains(id, "/compensate/") }
	points := []struct {
		name    string
		request func(*store.Request) bool
		frame   func(*store.Frame) bool
	}{
		{name: "before the first undo", request: func(r *store.Request) bool { return compensation(r.ID) }},
		{name: "between the undos", frame: func(f *store.Frame) bool { return compensation(f.Request) && f.State == "completed" }},
		{name: "after the last undo", request: func(r *store.Request) bool { return r.ID == "r" && !r.Ended.IsZero() }},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			var mu sync.Mutex
			undone := map[string]int{}
			newRuntime := func(s Store) *reach.Runtime {
				cp := New(s, nil, nil)
				rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil),
					DefaultBudget: &reach.Budget{}})
				rt.MustRegister(bookTools(func(ref string) { mu.Lock(); undone[ref]++; mu.Unlock() })...)
				return rt
			}
			fz := &frozen{Store: st, request: p.request, frame: p.frame, hit: make(chan struct{})}
			old := newRuntime(fz)
			rctx, r, err := old.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			for _, ref := range []string{"r1", "r2"} {
				if res := old.Call(rctx, &reach.Call{ID: ref, Tool: "book", IdempotencyKey: ref, Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
					t.Fatal(res.ModelText())
				}
			}
			r.Stop(reach.Cancel, "api", "enough")
			go r.End() // returns at once, or (before) waits for its write
			select {
			case <-fz.hit:
			case <-time.After(time.Minute):
				t.Fatal("the frozen point was not reached within a minute")
			}
			rep, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			got := maps.Clone(undone)
			mu.Unlock()
			if want := map[string]int{"r1": 1, "r2": 1}; !maps.Equal(got, want) {
				t.Errorf("undone %v after the restart; want %v (each leg of the stopped request once)", got, want)
			}
			if rec, err := st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
				t.Errorf("r after the restart: %+v (%v); want stopped and ended", rec, err)
			}
			if ds, err := st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
				t.Errorf("dead letters after the restart: %d (%v); want none: every undo ran once", len(ds), err)
			}
			rep, err = Recover(ctx, st, newRuntime(st), &RecoverOptions{})
			if err != nil || len(rep.Stopped)+len(rep.Interrupted) != 0 {
				t.Errorf("a second restart found %v stopped, %v interrupted (%v); want nothing", rep.Stopped, rep.Interrupted, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := map[string]int{"r1": 1, "r2": 1}; !maps.Equal(undone, want) {
				t.Errorf("undone %v after a second restart; want each once", undone)
			}
		})
	}
}

// TestInterruptedCompensationNotRunAgain: request r books two legs, then
// a write of it fails, which compensates r: its undos run, newest first,
// and the kill comes after the first one's end (durable), before its key's
// completion. r was not stopped: the restart interrupts it and runs the
// undos of its completed writes, each once: the one its compensation ran
// is read from that compensation's request (undosRan) and not asked
// again. Before, a request interrupted while its compensation ran counted
// on its undos' keys alone: that undo was asked again under its key, which
// the recovery had settled by its checkpoint (completed, its result lost),
// and it was dead-lettered for an operator though it had run; with the
// key's record gone (a restart later than the idempotency TTL), it ran
// again.
func TestInterruptedCompensationNotRunAgain(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Nanosecond} {
		t.Run("ttl="+ttl.String(), func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			var mu sync.Mutex
			undone := map[string]int{}
			newRuntime := func(s Store) *reach.Runtime {
				cp := New(s, nil, nil)
				rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp,
					Idempotency: store.NewIdempotency(st, &store.IdempotencyOptions{TTL: ttl}), DefaultBudget: &reach.Budget{}})
				rt.MustRegister(bookTools(func(ref string) { mu.Lock(); undone[ref]++; mu.Unlock() })...)
				rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
					Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
						return nil, errors.New("the card was declined")
					}})
				return rt
			}
			fz := &frozen{Store: st, hit: make(chan struct{}),
				frame: func(f *store.Frame) bool {
					return strings.Contains(f.Request, "/compensate/") && f.State == "completed"
				}}
			old := newRuntime(fz)
			rctx, _, err := old.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			for _, ref := range []string{"r1", "r2"} {
				if res := old.Call(rctx, &reach.Call{ID: ref, Tool: "book", IdempotencyKey: ref, Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
					t.Fatal(res.ModelText())
				}
			}
			go old.Call(rctx, &reach.Call{ID: "pay", Tool: "pay", Arguments: json.RawMessage(`{}`)})
			select {
			case <-fz.hit:
			case <-time.After(time.Minute):
				t.Fatal("the first undo's end was not written within a minute")
			}
			rep, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := map[string]int{"r1": 1, "r2": 1}; !maps.Equal(undone, want) {
				t.Errorf("undone %v after the restart; want %v (the compensation's undo not run again)", undone, want)
			}
			if ds, err := st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
				t.Errorf("dead letters after the restart: %d (%v); want none: the undo the compensation ran is not asked again", len(ds), err)
			}
			if rec, err := st.GetRequest(ctx, "r"); err != nil || rec.State != "interrupted" || !slices.Contains(rep.Interrupted, "r") {
				t.Errorf("r after the restart: %+v (%v), reported interrupted %v; want interrupted", rec, err, rep.Interrupted)
			}
		})
	}
}
