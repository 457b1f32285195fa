package durable

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// TestForgedCompensationNotTakenForUndos: request p of alice (tenant acme)
// books a leg and is stopped; the kill comes before its compensation's
// request is written (as "before the first undo" of
// TestStoppedEndStoredAfterItsUndos). Meanwhile another owner had a
// request of its own named as p's compensation ("p/compensate/zz", its MCP
// client named "reach") with a completed call under the undo's key. The
// recovery reads which of p's undos ran from p's compensations: that
// request is not one (another principal and tenant), so p's leg is undone.
// Before, its completed call counted as p's undo run, and the leg stayed
// booked.
func TestForgedCompensationNotTakenForUndos(t *testing.T) {
	for _, forger := range []struct{ principal, tenant string }{{"mallory", "evil"}, {"mallory", "acme"}, {"alice", "evil"}} {
		t.Run(forger.principal+"@"+forger.tenant, func(t *testing.T) {
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
			fz := &frozen{Store: st, request: func(r *store.Request) bool { return strings.Contains(r.ID, "/compensate/") }, hit: make(chan struct{})}
			old := newRuntime(fz)
			pctx, p, err := old.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Tenant: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			if res := old.Call(pctx, &reach.Call{ID: "p1", Tool: "book", IdempotencyKey: "p1", Arguments: json.RawMessage(`{"ref":"p1"}`)}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			p.Stop(reach.Cancel, "api", "enough")
			select {
			case <-fz.hit:
			case <-time.After(time.Minute):
				t.Fatal("the compensation's request was not begun within a minute")
			}
			// The undo's key, as the booking's checkpoint keeps it.
			frames, err := st.RequestFrames(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			var key string
			for _, f := range frames {
				var u struct{ Tool, Key string }
				if f.Name == "book" && json.Unmarshal(f.Undo, &u) == nil && u.Tool != "" {
					key = u.Tool + ":" + u.Key
				}
			}
			if key == "" {
				t.Fatalf("no undo kept in p's frames %+v", frames)
			}
			now := time.Now()
			forged := &store.Request{ID: "p/compensate/zz", Principal: forger.principal, Tenant: forger.tenant, Agent: "reach",
				State: "running", Started: now}
			if err := st.PutRequest(ctx, forged); err != nil {
				t.Fatal(err)
			}
			if err := st.PutFrame(ctx, &store.Frame{Request: forged.ID, Frame: "00000000000000f1", Kind: "tool", Name: "unbook",
				IdemKey: key, State: "completed", Args: []byte(`{"ref":"p1"}`), Started: now}); err != nil {
				t.Fatal(err)
			}
			forged.State, forged.Ended = "ended", now
			if err := st.PutRequest(ctx, forged); err != nil {
				t.Fatal(err)
			}
			if _, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if undone["p1"] != 1 {
				t.Errorf("p1 undone %d times after the restart; want once (another owner's request named as p's compensation is not one)", undone["p1"])
			}
		})
	}
}
