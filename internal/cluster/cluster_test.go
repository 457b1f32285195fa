package cluster

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Instance a loses the connection that holds its name; a second process
// named a starts meanwhile and is let in. The second does not take the
// first's life for dead while it heartbeats (a fence); the first finds its
// name taken, stops heartbeating and admitting work, and only then, a TTL
// later, is dead to the others (issue 17 review, defect 4).
func TestNameLostToASecondProcess(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	st1, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st1.Close()
	c1, err := New(ctx, &Options{Store: st1, Instance: "a", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The connection that holds a's advisory lock drops (a network blip).
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminating the lock's backend: %d %v", n, err)
	}
	st2, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	c2, err := New(ctx, &Options{Store: st2, Instance: "a", TTL: 2 * time.Second})
	if err != nil {
		t.Skipf("the first a took its name again before the second asked: %v", err)
	}
	defer c2.Close()
	claimed := time.Now().Add(-time.Minute)
	// Before the first finds out, it heartbeats: the second must not
	// take it for dead.
	if err := c1.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c2.beat(ctx); err != nil {
		t.Fatal(err)
	}
	dead, _ := c2.Dead(ctx)
	if !c2.Alive(c1.Owner(), claimed) || slices.Contains(dead, c1.Owner()) {
		t.Fatalf("%s heartbeats, and %s takes it for dead (dead: %v)", c1.Owner(), c2.Owner(), dead)
	}
	// The first tries to take its name again, finds it taken, and stops.
	if err := c1.Start(nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c1.Lost():
	case <-time.After(15 * time.Second):
		t.Fatal("the first a did not find its name taken")
	}
	for deadline := time.Now().Add(5 * time.Second); !c1.lost.Load() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if err := c1.beat(ctx); !errors.Is(err, errLost) {
		t.Fatalf("the first a heartbeats on after losing its name: %v", err)
	}
	if _, _, err := c1.AdmitTurn(ctx, nil); err == nil {
		t.Fatal("the first a admits a model turn after losing its name")
	}
	// A TTL after its last heartbeat, the second takes it for dead.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := c2.beat(ctx); err != nil {
			t.Fatal(err)
		}
		if !c2.Alive(c1.Owner(), claimed) {
			return
		}
	}
	t.Fatalf("%s stopped heartbeating, and %s still takes it for alive", c1.Owner(), c2.Owner())
}

// A request running on b is ended by its client through a while b does
// not listen yet (or is cut off): the wake-up is lost, yet b ends its part
// once it listens, and the request is stored ended. (Missing that, a
// request that a client ended through another instance just after b
// started ran on; issue 17, TestInstancesEndAcross.)
func TestEndMissedBeforeListening(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	open := func(name string) (*postgres.Store, *Cluster) {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return st, c
	}
	stA, a := open("a")
	stB, b := open("b")
	rt := reach.New(&reach.Options{Requests: b.Recorder(durable.New(stB, nil, nil))})
	_, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "r-far"})
	if err != nil {
		t.Fatal(err)
	}
	if found, err := a.End(ctx, "r-far", nil); err != nil || !found {
		t.Fatalf("End through a = %v, %v", found, err)
	}
	if ids, err := stB.Settled(ctx, b.Owner()); err != nil || !slices.Equal(ids, []string{"r-far"}) {
		t.Fatalf("Settled(%s) = %v, %v; want r-far", b.Owner(), ids, err)
	}
	if err := b.Start(rt, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-req.Context().Done():
	case <-time.After(20 * time.Second):
		t.Fatal("b never ended its part of r-far, which its client ended through a before b listened")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := stA.GetRequest(ctx, "r-far")
		if err != nil {
			t.Fatal(err)
		}
		if r.State == "ended" && !r.Ended.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("r-far is stored %s (ended %v), want ended", r.State, r.Ended)
		}
	}
	if ids, err := stB.Settled(ctx, b.Owner()); err != nil || len(ids) != 0 {
		t.Fatalf("Settled(%s) = %v, %v after b left r-far; want none", b.Owner(), ids, err)
	}
}
