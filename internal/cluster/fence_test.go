package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store/postgres"
)

// fenceFleet is two instances on one store: a heartbeats by hand (its
// judgment is not held back by a break), b stands for a process that
// was paused: it began a request, then heartbeats no more until told.
type fenceFleet struct {
	st   *postgres.Store
	a, b *Cluster
	req  *reach.Request // running on b
}

func newFenceFleet(t *testing.T) *fenceFleet {
	t.Helper()
	ctx := context.Background()
	f := &fenceFleet{}
	_, f.a, f.b = twoInstances(t, time.Second)
	f.st = f.a.st
	rtB := reach.New(&reach.Options{Requests: f.b.Recorder(durable.New(f.b.st, nil, nil))})
	_, req, err := rtB.Begin(ctx, &reach.RequestOptions{ID: "req-fenced"})
	if err != nil {
		t.Fatal(err)
	}
	f.req = req
	// b is paused: wait until the store finds it unseen for a TTL, and a's
	// view says so.
	for {
		if err := f.a.beat(ctx); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(f.a.view.Load().dead, f.b.owner) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.a.healthy.Store(time.Now().Add(-time.Hour).UnixNano()) // a heartbeated without a break for long
	return f
}

// wantFenced checks that b, resumed, finds itself given up: its heartbeat
// fails, it admits nothing, and its part of the request is stopped with a
// cause that says why.
func (f *fenceFleet) wantFenced(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := f.b.beat(ctx); !errors.Is(err, errFenced) {
		t.Fatalf("b's heartbeat after it was taken for dead: %v, want errFenced", err)
	}
	if !f.b.Fenced() {
		t.Fatal("b is not fenced")
	}
	var re *reach.Error
	if err := f.b.Leased(ctx); !errors.As(err, &re) || re.Code != "instance_stopping" {
		t.Fatalf("b's lease once fenced: %v, want instance_stopping", err)
	}
	cs := f.req.StopCause()
	if cs == nil {
		t.Fatal("b's part of the request runs on after b was taken for dead")
	}
	if cs.Mode != reach.Isolate || cs.By != "instance b" {
		t.Errorf("b's part stopped with %+v, want isolate by instance b", *cs)
	}
	if err := f.b.beat(ctx); !errors.Is(err, errFenced) {
		t.Fatalf("b's second heartbeat once fenced: %v, want errFenced", err)
	}
	lives, err := f.st.Lives(ctx, f.a.ttl)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lives {
		if l.Owner == f.b.owner && l.Alive {
			t.Fatalf("b's heartbeats made it alive again after it was taken for dead: %+v", l)
		}
	}
}

// TestFencedOnceJudged: a judged b (its work being recovered, not yet
// forgotten) that resumes does not come back alive.
func TestFencedOnceJudged(t *testing.T) {
	f := newFenceFleet(t)
	ctx := context.Background()
	// b's lease lapsed while it was paused: a call it was about to
	// dispatch waits for a heartbeat, here not at all.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var re *reach.Error
	if err := f.b.Leased(cctx); !errors.As(err, &re) || re.Code != "store_unavailable" {
		t.Fatalf("b's lapsed lease: %v, want store_unavailable", err)
	}
	dead, err := f.a.Dead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dead, f.b.owner) {
		t.Fatalf("a judges %v dead, want b's life %s among them", dead, f.b.owner)
	}
	f.wantFenced(t)
	// The recoverer forgets b once done.
	if err := f.a.Forget(ctx, f.b.owner); err != nil {
		t.Fatal(err)
	}
	lives, _ := f.st.Lives(ctx, f.a.ttl)
	if slices.ContainsFunc(lives, func(l postgres.Life) bool { return l.Owner == f.b.owner }) {
		t.Fatal("b's row is not forgotten")
	}
}

// TestFencedOnceForgotten: b resumes after it was recovered and forgotten
// (by a recoverer that did not judge it first): its heartbeat does not
// re-create it.
func TestFencedOnceForgotten(t *testing.T) {
	f := newFenceFleet(t)
	ctx := context.Background()
	if err := f.a.Forget(ctx, f.b.owner); err != nil {
		t.Fatal(err)
	}
	f.wantFenced(t)
	lives, _ := f.st.Lives(ctx, f.a.ttl)
	if slices.ContainsFunc(lives, func(l postgres.Life) bool { return l.Owner == f.b.owner }) {
		t.Fatal("b's heartbeat re-created its forgotten row")
	}
}

// TestNotJudgedIfBackFirst: a view that found b dead is stale once b's
// heartbeat came back: b is not judged, and goes on.
func TestNotJudgedIfBackFirst(t *testing.T) {
	f := newFenceFleet(t)
	ctx := context.Background()
	if err := f.b.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Leased(ctx); err != nil {
		t.Fatalf("b's lease after its heartbeat: %v", err)
	}
	dead, err := f.a.Dead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(dead, f.b.owner) {
		t.Fatalf("a judged b dead after b's heartbeat came back: %v", dead)
	}
	if err := f.b.beat(ctx); err != nil {
		t.Fatalf("b's heartbeat: %v", err)
	}
	if f.req.StopCause() != nil {
		t.Fatal("b's request was stopped")
	}
}

// BenchmarkLeased is the lease's check on the call path, held: what
// Admission adds before each dispatch.
func BenchmarkLeased(b *testing.B) {
	c := &Cluster{ttl: time.Minute, base: time.Now()}
	c.renew(0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Leased(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
