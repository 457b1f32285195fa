package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
)

// joinPair is two instances on one store, not started: their first
// heartbeats (New) keep them alive for the TTL, a minute.
func joinPair(t *testing.T) (a, b *Cluster, rtA, rtB *reach.Runtime) {
	t.Helper()
	_, a, b = twoInstances(t, time.Minute)
	rtA = reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil))})
	rtB = reach.New(&reach.Options{Requests: b.Recorder(durable.New(b.st, nil, nil))})
	return a, b, rtA, rtB
}

// landedLate makes c's joins answer as if their bound fired just as the
// store committed them: the join is written, its caller refused.
func landedLate(c *Cluster) {
	c.afterJoin = func(err error) error {
		if err == nil {
			return context.DeadlineExceeded
		}
		return err
	}
}

// A join of a request that another instance runs commits just as its
// bound (the TTL) fires: the call is refused, but its part was written.
// After a's next heartbeat the part is left, so that the request ends when
// b, its last part, ends it; before, it stayed running until a's life
// ended (a's part held it).
func TestJoinCommittedAsBoundFires(t *testing.T) {
	ctx := context.Background()
	a, b, rtA, rtB := joinPair(t)
	_, qb, err := rtB.Begin(ctx, &reach.RequestOptions{ID: "req-j"})
	if err != nil {
		t.Fatal(err)
	}
	landedLate(a)
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-j"}); err == nil {
		t.Fatal("a's join whose bound fired was not refused")
	}
	a.afterJoin = nil
	on, err := b.st.RunningOn(ctx, []string{"req-j"}, b.owner)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(on["req-j"], "a") {
		t.Fatalf("the parts of req-j besides b's: %v; want a's, which the join wrote (the case this test is for)", on)
	}
	if err := a.beat(ctx); err != nil {
		t.Fatal(err)
	}
	a.leaveStrays(ctx) // as the heartbeat loop does after a heartbeat
	qb.End()
	got, err := a.st.GetRequest(ctx, "req-j")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "ended" {
		t.Fatalf("req-j after its last running part (b's) ended: %s; want ended (a's refused join holds no part)", got.State)
	}
}

// A join that begins a new request commits as its bound fires: once left,
// the request is stored ended (nothing ran in it), not running with a
// part of a live life, and its id begins again on the other instance.
func TestBeginCommittedAsBoundFires(t *testing.T) {
	ctx := context.Background()
	a, _, rtA, rtB := joinPair(t)
	landedLate(a)
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-new"}); err == nil {
		t.Fatal("a's begin whose bound fired was not refused")
	}
	a.afterJoin = nil
	a.leaveStrays(ctx)
	got, err := a.st.GetRequest(ctx, "req-new")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "ended" {
		t.Fatalf("req-new, begun by a refused join and left: %s; want ended", got.State)
	}
	_, q, err := rtB.Begin(ctx, &reach.RequestOptions{ID: "req-new"})
	if err != nil {
		t.Fatalf("b begins req-new again: %v", err)
	}
	q.End()
}

// A refused join of a request whose part runs on this instance (a second
// Begin of its id, say) leaves nothing: that part is the running one's.
func TestRefusedJoinKeepsRunningPart(t *testing.T) {
	ctx := context.Background()
	a, _, rtA, rtB := joinPair(t)
	_, qb, err := rtB.Begin(ctx, &reach.RequestOptions{ID: "req-k"})
	if err != nil {
		t.Fatal(err)
	}
	_, qa, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-k"})
	if err != nil {
		t.Fatal(err)
	}
	landedLate(a)
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-k"}); err == nil {
		t.Fatal("a's second join whose bound fired was not refused")
	}
	a.afterJoin = nil
	a.leaveStrays(ctx)
	qb.End()
	got, err := a.st.GetRequest(ctx, "req-k")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "running" {
		t.Fatalf("req-k while a's part still runs: %s; want running", got.State)
	}
	qa.End()
	if got, err = a.st.GetRequest(ctx, "req-k"); err != nil || got.State != "ended" {
		t.Fatalf("req-k after a's part ended: %v %v; want ended", got, err)
	}
}
