package link

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// A call naming a request id no request has reads the stored history of
// that id once: Owned looks it up (named), finds none, and the runtime's
// Begin, which looks the id up again for the earlier runs a request named
// again goes on from, skips the store while Owned begins it (Unknown), as
// the gateway wires Options.History. Before, every new named request read
// the store twice for the same miss (on PostgreSQL, two round trips before
// its join). A request the history holds is still found and goes on from
// its earlier run.
func TestNamedNewRequestReadsHistoryOnce(t *testing.T) {
	var mu sync.Mutex
	reads := map[string]int{}
	var q *Owned
	past := &reach.PastRequest{ID: "r-old", Principal: LocalPrincipal, State: reach.RequestCompleted,
		Started: time.Now().Add(-time.Hour), Ended: time.Now().Add(-time.Hour + time.Second), Usage: reach.Usage{ToolCalls: 2}}
	rt := reach.New(&reach.Options{History: func(id string) (*reach.PastRequest, bool) {
		if q.Unknown(id) {
			return nil, false
		}
		mu.Lock()
		reads[id]++
		mu.Unlock()
		if id == "r-old" {
			p := *past
			return &p, true
		}
		return nil, false
	}})
	q = NewOwned(t.Context(), rt, time.Hour, Budgets{})
	t.Cleanup(q.EndAll)
	_, r, done, err := q.CallContext(context.Background(), Target{Request: "r-new"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if r.ID() != "r-new" || reads["r-new"] != 1 {
		t.Errorf("beginning r-new read its history %d times; want once", reads["r-new"])
	}
	if q.Unknown("r-new") {
		t.Error("r-new is still unknown once begun")
	}
	_, r, done, err = q.CallContext(context.Background(), Target{Request: "r-old"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if r.ID() != "r-old" || r.Usage().ToolCalls != 2 {
		t.Errorf("r-old named again has spent %+v; want its earlier run's 2 tool calls counted", r.Usage())
	}
}

// TestNamedBeginRefusedLeavesNoUnknownMark: a call naming a new request id
// that is refused before it is begun (its principal has as many requests
// with calls in flight as it may) leaves no mark that the id is unknown.
// Before, the mark stayed for the process's life: one string for every
// id so refused, and a later begin of that id skipped the store's history
// of it (Unknown), which another instance may have written meanwhile.
func TestNamedBeginRefusedLeavesNoUnknownMark(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(t.Context(), rt, time.Hour, Budgets{}).Bound(1)
	t.Cleanup(q.EndAll)
	_, _, done, err := q.CallContext(context.Background(), Target{Request: "busy"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer done() // its call stays in flight: no room for another request
	if _, _, _, err := q.CallContext(context.Background(), Target{Request: "refused"}, nil); err == nil {
		t.Fatal("a second request with the first's call in flight was begun; want it refused (the bound is 1)")
	}
	if q.Unknown("refused") {
		t.Error("the refused id is still marked unknown")
	}
}
