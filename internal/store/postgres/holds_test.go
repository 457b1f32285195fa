package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// Model turns of two instances hold their caps on one request's shared
// ledger: a hold that would pass the token or cost budget with what is
// spent and held is refused (nothing held or debited), one that fits is
// taken with its prompt debited, a hold of a life whose heartbeat is
// older than the TTL counts for nothing (and is deleted), Unhold lets go,
// and Forget deletes a forgotten life's holds.
func TestPostgresHoldTurn(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	for _, s := range []struct {
		st    *Store
		owner string
	}{{a, "A/1"}, {b, "B/1"}} {
		if _, _, err := s.st.Beat(ctx, s.owner, s.owner[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"sub", "root"}
	caps := []store.Spend{{}, {Tokens: 1000, CostNano: 5000}}
	hold := func(s *Store, turn, owner string, d, need, spent store.Spend) Hold {
		t.Helper()
		h, err := s.HoldTurn(ctx, turn, owner, time.Minute, ids, d, need, spent, caps)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := hold(a, "t1", "A/1", store.Spend{Tokens: 600, CostNano: 1000}, store.Spend{Tokens: 600}, store.Spend{Tokens: 30, CostNano: 50}); !h.OK {
		t.Fatalf("the first hold, on an empty ledger: %+v", h)
	}
	held, turns, err := a.Holds(ctx, "root")
	if err != nil || held.Tokens != 570 || held.CostNano != 950 || turns != 1 {
		t.Fatalf("held on root after the first hold: %+v by %d turns (%v), want 570 tokens and 950 nano-units (its prompt debited) by 1", held, turns, err)
	}
	if s, _ := a.Spent(ctx, "sub"); s.Tokens != 30 || s.CostNano != 50 {
		t.Fatalf("the sub-request spent %+v, want the prompt debited: 30 tokens, 50", s)
	}
	h := hold(b, "t2", "B/1", store.Spend{Tokens: 500}, store.Spend{Tokens: 500}, store.Spend{Tokens: 30})
	if h.OK || h.Over != 1 || h.Dim != "tokens" || h.Spent[1].Tokens != 30 || h.Held[1].Tokens != 570 {
		t.Fatalf("a hold of 500 with 30 spent and 570 held of 1,000: %+v, want it refused by root's tokens", h)
	}
	if s, _ := b.Spent(ctx, "root"); s.Tokens != 30 {
		t.Fatalf("a refused hold debited its prompt: root spent %d, want 30", s.Tokens)
	}
	if h := hold(b, "t2", "B/1", store.Spend{Tokens: 100, CostNano: 4001}, store.Spend{Tokens: 100}, store.Spend{}); h.OK || h.Dim != "cost" {
		t.Fatalf("a hold passing the cost budget: %+v, want it refused by cost", h)
	}
	if h := hold(b, "t2", "B/1", store.Spend{Tokens: 400, CostNano: 100}, store.Spend{Tokens: 400}, store.Spend{Tokens: 20}); !h.OK {
		t.Fatalf("a hold of 400 with 30 spent and 570 held of 1,000: %+v, want it taken", h)
	}
	if err := a.Unhold(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if held, turns, _ := a.Holds(ctx, "root"); held.Tokens != 380 || turns != 1 {
		t.Fatalf("held once t1 let go: %d by %d turns, want t2's 380", held.Tokens, turns)
	}
	// B's life dies: its heartbeat older than the TTL, its hold counts for
	// nothing, and the next hold deletes it.
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = seen - 3600000000000 WHERE owner = 'B/1'`); err != nil {
		t.Fatal(err)
	}
	if h := hold(a, "t3", "A/1", store.Spend{Tokens: 900}, store.Spend{Tokens: 900}, store.Spend{}); !h.OK || h.Held[1].Tokens != 0 {
		t.Fatalf("a hold of 900 with 50 spent and only a dead life's 380 held: %+v, want it taken", h)
	}
	if err := a.Unhold(ctx, "t3"); err != nil {
		t.Fatal(err)
	}
	// Nothing held: a hold past the cap is taken for its need alone.
	if h := hold(a, "t4", "A/1", store.Spend{Tokens: 2000}, store.Spend{Tokens: 900}, store.Spend{}); !h.OK {
		t.Fatalf("a hold whose need fits, nothing held: %+v, want it taken", h)
	}
	if h := hold(a, "t5", "A/1", store.Spend{Tokens: 10}, store.Spend{Tokens: 10}, store.Spend{}); h.OK {
		t.Fatalf("a hold past the cap with another held: %+v, want it refused", h)
	}
	// A forgotten life's holds go with it.
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = seen - 3600000000000 WHERE owner = 'A/1'`); err != nil {
		t.Fatal(err)
	}
	if err := a.Forget(ctx, "A/1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if held, turns, _ := a.Holds(ctx, "root"); turns != 0 {
		t.Fatalf("the forgotten life's holds: %d tokens by %d turns, want none", held.Tokens, turns)
	}
}

// A turn's hold let go signals every instance that watches, once per
// request it held on (Signal "unhold"), so that their turns waiting for
// room ask again then instead of polling; a turn that held nothing sends
// none. (Before, nothing was said, and a waiting turn on another instance
// asked again every 100 ms.)
func TestPostgresUnholdSignals(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	if _, _, err := a.Beat(ctx, "A/1", "A", time.Now()); err != nil {
		t.Fatal(err)
	}
	got := make(chan Signal, 10)
	connected := make(chan struct{}, 10)
	if err := b.Watch(func(s Signal) { got <- s }, func(context.Context) { connected <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	<-connected
	// next is the next signal; none for 30 s is none at all.
	next := func() Signal {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-time.After(30 * time.Second):
			t.Fatal("no signal")
			return Signal{}
		}
	}
	ids := []string{"sub", "root"}
	caps := []store.Spend{{}, {Tokens: 1000}}
	if h, err := a.HoldTurn(ctx, "t1", "A/1", time.Minute, ids, store.Spend{Tokens: 600}, store.Spend{Tokens: 600}, store.Spend{}, caps); err != nil || !h.OK {
		t.Fatalf("holding: %+v %v", h, err)
	}
	if err := a.Unhold(ctx, "nothing-held"); err != nil {
		t.Fatal(err)
	}
	if err := a.Unhold(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: the unhold of a turn that held
	// nothing would have come first.
	seen := map[string]bool{}
	for len(seen) < 2 {
		s := next()
		if s.Kind != "unhold" || s.ID != "sub" && s.ID != "root" || seen[s.ID] {
			t.Fatalf("signal %+v, want unhold of sub and of root, once each", s)
		}
		seen[s.ID] = true
	}
	if err := a.Unhold(ctx, "t1"); err != nil { // let go already: nothing to say
		t.Fatal(err)
	}
	if h, err := a.HoldTurn(ctx, "t3", "A/1", time.Minute, []string{"other"}, store.Spend{Tokens: 1}, store.Spend{Tokens: 1}, store.Spend{}, []store.Spend{{Tokens: 10}}); err != nil || !h.OK {
		t.Fatalf("holding: %+v %v", h, err)
	}
	if err := a.Unhold(ctx, "t3"); err != nil {
		t.Fatal(err)
	}
	if s := next(); s != (Signal{Kind: "unhold", ID: "other"}) {
		t.Fatalf("after an unhold that let go of nothing: %+v, want only the unhold that followed it", s)
	}
}
