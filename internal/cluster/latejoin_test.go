package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// A join whose caller gave up before its statement reached the server
// (held on its way: sendJoin answers for it and keeps the statement), a's
// part then left (leaveStrays, after the heartbeat), and only then the
// statement arrives: the store refuses it (JoinLeft), and no part of a is
// written, so the request ends when b's part, its last, ends. It used to
// write a's part again, held until a's life ended (the request stayed
// running). A join a begins after the leave joins as before.
func TestJoinArrivingAfterItsLeave(t *testing.T) {
	ctx := context.Background()
	a, b, rtA, rtB := joinPair(t)
	_, qb, err := rtB.Begin(ctx, &reach.RequestOptions{ID: "req-l"})
	if err != nil {
		t.Fatal(err)
	}
	var held *store.Request
	var heldSeq int64
	a.sendJoin = func(ctx context.Context, rec *store.Request, seq int64) (*store.Request, postgres.JoinOutcome, error) {
		held, heldSeq = rec, seq // on its way; its caller's bound fires
		return nil, "", context.DeadlineExceeded
	}
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-l"}); err == nil {
		t.Fatal("a's join whose bound fired was not refused")
	}
	a.sendJoin = nil
	if err := a.beat(ctx); err != nil {
		t.Fatal(err)
	}
	a.leaveStrays(ctx) // nothing held yet: the leave is recorded
	_, outcome, err := a.st.JoinRequestAfter(ctx, held, a.owner, a.ttl, heldSeq)
	if err != nil {
		t.Fatal(err)
	}
	if outcome != postgres.JoinLeft {
		t.Errorf("the join that reached the store after its leave: %s; want %s, nothing written", outcome, postgres.JoinLeft)
	}
	on, err := b.st.RunningOn(ctx, []string{"req-l"}, b.owner)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(on["req-l"], "a") {
		t.Fatalf("the parts of req-l besides b's after the late join: %v; want none of a", on)
	}

	// A join begun after the leave is a new one: it joins.
	_, qa, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-l"})
	if err != nil {
		t.Fatalf("a joins req-l after the leave: %v", err)
	}
	qa.End()
	qb.End()
	got, err := a.st.GetRequest(ctx, "req-l")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "ended" {
		t.Fatalf("req-l after both parts ended: %s; want ended", got.State)
	}
}
