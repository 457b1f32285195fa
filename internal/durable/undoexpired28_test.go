package durable

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// TestLiveUndosNotRunAgainByTheRecovery: p's stop runs p's undo and, as
// it reaches its sub-request c, c's; c ends stopped; the kill comes
// before p's end. The recovery of p (stopped, not ended) runs p's undos
// and, since crash28, those of c (stored stopped and ended, stopEndedBelow)
// "each once under its key": the live stop's ran already and must answer
// from their idempotency records, not run again. Each booking is undone
// once. On a single SQLite store, as the live stop's case of
// TestStoppedEndedSubRequestUndoneAfterAKill (internal/cluster) is on
// PostgreSQL.
//
// With the records expired (a restart later than the idempotency TTL,
// 24h by default), before, both ran again: the recovery counted on the
// keys' records alone. It now reads the undos that completed in the
// compensations' requests (undosRan), which outlive the records.
func TestLiveUndosNotRunAgainByTheRecovery(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Nanosecond} {
		t.Run("ttl="+ttl.String(), func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			var mu sync.Mutex
			undone := map[string]int{}
			count := func(ref string) int { mu.Lock(); defer mu.Unlock(); return undone[ref] }
			newRuntime := func() *reach.Runtime {
				cp := New(st, nil, nil)
				rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp,
					Idempotency: store.NewIdempotency(st, &store.IdempotencyOptions{TTL: ttl}), DefaultBudget: &reach.Budget{}})
				rt.MustRegister(bookTools(func(ref string) { mu.Lock(); undone[ref]++; mu.Unlock() })...)
				return rt
			}
			old := newRuntime()
			book := func(ctx context.Context, ref string) {
				t.Helper()
				if res := old.Call(ctx, &reach.Call{ID: ref, Tool: "book", IdempotencyKey: ref, Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
					t.Fatal(res.ModelText())
				}
			}
			pctx, p, err := old.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			book(pctx, "p1")
			cctx, c, err := old.Delegate(pctx, &reach.Delegation{Agent: "booker", Task: "book", ID: "c"})
			if err != nil {
				t.Fatal(err)
			}
			book(cctx, "c1")
			p.Stop(reach.Cancel, "api", "enough")
			c.End()
			// The live stop's undos ran, their compensations ended, and c's
			// end is stored stopped.
			for deadline := time.Now().Add(30 * time.Second); ; {
				r, err := st.GetRequest(ctx, "c")
				comps, _ := st.ListRequests(ctx, store.RequestFilter{State: "ended", Roots: true, Limit: 100})
				if count("p1") == 1 && count("c1") == 1 && err == nil && r.State == "stopped" && !r.Ended.IsZero() && len(comps) == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("undone %v, c stored %+v (%v), %d compensations ended; want p1 and c1 undone once, c stopped and ended, 2 ended",
						undone, r, err, len(comps))
				}
				time.Sleep(10 * time.Millisecond)
			}
			// The kill: p never ends. A restart recovers it.
			rep, err := Recover(ctx, st, newRuntime(), &RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p1, c1 := count("p1"), count("c1"); p1 != 1 || c1 != 1 {
				t.Errorf("after the restart p1 undone %d times, c1 %d; want each once (the live stop's)", p1, c1)
			}
			if r, err := st.GetRequest(ctx, "p"); err != nil || r.State != "stopped" || r.Ended.IsZero() {
				t.Errorf("p after the restart: %+v (%v), report stopped %v; want stopped and ended", r, err, rep.Stopped)
			}
		})
	}
}
