package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/modelproxy"
)

// A model turn on b waits for room that a turn on a holds on their
// request's shared ledger: b watches the holds (WatchHolds) before it asks,
// is refused, and is woken when a lets go of its hold, by the store's
// notification through b's listener (not by a poll: nothing here polls),
// and then takes its hold. A sub-request's turn is woken by a hold let go
// on the request above it; the watch it stopped is gone.
func TestHolds25TurnWokenByAnotherInstancesUnhold(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	for i, c := range []*Cluster{a, b} {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
		if err := c.Start(rts[i], nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// begin begins request id on both instances (its budget set on a),
	// and, on b, a sub-request below it.
	begin := func(id string) (onA, onB, sub *reach.Request) {
		t.Helper()
		_, onA, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: id, Principal: "alice", Budget: &reach.Budget{Tokens: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		bctx, onB, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: id, Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		_, sub, err = rts[1].Delegate(bctx, &reach.Delegation{Agent: "one", Task: "t", ID: id + "-sub"})
		if err != nil {
			t.Fatal(err)
		}
		return onA, onB, sub
	}
	hold := func(c *Cluster, req *reach.Request, turn string) bool {
		t.Helper()
		ok, _, err := c.HoldTurn(ctx, req, turn, modelproxy.Spend{Tokens: 600}, modelproxy.Spend{Tokens: 600}, modelproxy.Spend{Tokens: 10})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// woken waits for wake; a wake that never comes fails (30 s).
	woken := func(wake <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no wake after the other instance let go of its hold", what)
		}
	}
	// b's listener is connected once a let-go on a wakes a watch of b
	// (or its connecting does): from then on, only the let-go of a hold
	// on a request's ledger wakes the turns watching it.
	warmA, warmB, _ := begin("warm")
	wake, stop := b.WatchHolds(warmB)
	if !hold(a, warmA, "warm") {
		t.Fatal("a's turn was refused its hold on an empty ledger")
	}
	if err := a.Unhold(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	woken(wake, "b's listener")
	stop()
	pa1, pb1, _ := begin("p1")
	pa2, _, sub2 := begin("p2")
	for _, tc := range []struct {
		what string
		pa   *reach.Request // the request on a
		req  *reach.Request // the turn's on b
	}{{"a turn of the request", pa1, pb1}, {"a turn of a sub-request below it", pa2, sub2}} {
		pa := tc.pa
		if !hold(a, pa, "ta-"+tc.req.ID()) {
			t.Fatalf("%s: a's turn was refused its hold on an empty ledger", tc.what)
		}
		wake, stop := b.WatchHolds(tc.req)
		if hold(b, tc.req, "tb-"+tc.req.ID()) {
			t.Fatalf("%s: b's turn took 600 while a's held 600 of 1,000", tc.what)
		}
		select {
		case <-wake:
			t.Fatalf("%s: woken before any hold was let go", tc.what)
		default:
		}
		if err := a.Unhold(ctx, "ta-"+tc.req.ID()); err != nil {
			t.Fatal(err)
		}
		woken(wake, tc.what)
		stop()
		if n := b.holdWaits.waiting(); n != 0 {
			t.Fatalf("%s: %d watches left after stop", tc.what, n)
		}
		if !hold(b, tc.req, "tb-"+tc.req.ID()) {
			t.Fatalf("%s: b's turn, woken, was refused its hold", tc.what)
		}
		if err := b.Unhold(ctx, "tb-"+tc.req.ID()); err != nil {
			t.Fatal(err)
		}
	}
}

// The listener connecting again wakes every waiting turn (a hold may have
// been let go while it was cut off), and a signal of a request no turn
// waits on wakes none.
func TestHolds25ReconnectWakesEveryWatch(t *testing.T) {
	var c Cluster
	rt := reach.New(nil)
	_, r, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wake, stop := c.WatchHolds(r)
	defer stop()
	c.holdWaits.letGo("other")
	select {
	case <-wake:
		t.Fatal("woken by a hold let go on another request")
	default:
	}
	c.holdWaits.all()
	<-wake
}
