package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// TestStopAboveKilledWhileSubEndWaits: sub-request s of p books two legs;
// p is stopped (cancel), which stops s and runs s's undos; s is ended at
// once (as an A2A hand-off's is as the stop reaches it), its end waiting
// for them. The kill comes as s's compensation begins. The
// restart finds s stopped and not ended, runs each leg's undo once, and
// stores s stopped and ended; a second restart finds nothing.
func TestStopAboveKilledWhileSubEndWaits(t *testing.T) {
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
	fz := &frozen{Store: st, request: func(r *store.Request) bool { return strings.HasPrefix(r.ID, "s/compensate/") }, hit: make(chan struct{})}
	old := newRuntime(fz)
	pctx, p, err := old.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, s, err := old.Delegate(pctx, &reach.Delegation{Agent: "sub", Task: "book", ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"r1", "r2"} {
		if res := old.Call(sctx, &reach.Call{ID: ref, Tool: "book", IdempotencyKey: ref, Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	p.Stop(reach.Cancel, "api", "enough")
	go s.End()
	select {
	case <-fz.hit:
	case <-time.After(time.Minute):
		t.Fatal("the compensation's begin was not reached within a minute")
	}
	if rec, err := st.GetRequest(ctx, "s"); err != nil || rec.State != "stopped" || !rec.Ended.IsZero() {
		t.Fatalf("s at the kill: %s (%v); want stopped, its end not stored", stateEnded(rec), err)
	}
	rep, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(undone)
	mu.Unlock()
	if want := map[string]int{"r1": 1, "r2": 1}; !maps.Equal(got, want) {
		t.Errorf("undone %v after the restart (report %+v); want %v", got, rep, want)
	}
	if rec, err := st.GetRequest(ctx, "s"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
		t.Errorf("s after the restart: %s (%v); want stopped and ended", stateEnded(rec), err)
	}
	if ds, err := st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
		t.Errorf("dead letters after the restart: %d (%v); want none", len(ds), err)
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
}

// stateEnded says a stored request's state and whether its end is stored.
func stateEnded(r *store.Request) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%s, ended %t", r.State, !r.Ended.IsZero())
}
