package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
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

// A join the store took whose begin the runtime then refused (a second
// Begin of an id running here: "already running") is counted done: a
// later refused join of that id, its part written as its bound fired, is
// still left after a heartbeat. Before, the first join stayed counted in
// flight for the life, and every stray part of that id was held until
// the life ended (the request never ended when its other parts did).
func TestJoinRefusedByRuntimeIsDone(t *testing.T) {
	ctx := context.Background()
	a, _, rtA, rtB := joinPair(t)
	_, qb, err := rtB.Begin(ctx, &reach.RequestOptions{ID: "req-r"})
	if err != nil {
		t.Fatal(err)
	}
	_, qa, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-r"}); err == nil {
		t.Fatal("a second Begin of a request running here was not refused")
	}
	qa.End()
	landedLate(a)
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-r"}); err == nil {
		t.Fatal("a's join whose bound fired was not refused")
	}
	a.afterJoin = nil
	a.leaveStrays(ctx)
	qb.End()
	got, err := a.st.GetRequest(ctx, "req-r")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "ended" {
		t.Fatalf("req-r after b's part ended: %s; want ended (a's refused join holds no part)", got.State)
	}
}

// A leave of a refused join's part that waits (for the request's ledger
// lock, or for a connection of a busy pool) does not hold the heartbeat:
// heartbeats go on while it waits. Before, the leave ran on the heartbeat's
// goroutine, and a wait of up to the TTL made the others take this life
// for dead.
func TestStrayLeaveHoldsNoHeartbeat(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := New(ctx, &Options{Store: st, Instance: "a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rtA := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil))})
	landedLate(a)
	if _, _, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "req-s"}); err == nil {
		t.Fatal("a's begin whose bound fired was not refused")
	}
	a.afterJoin = nil
	// Another transaction holds the request's ledger lock: the leave waits.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT reach_lock_ledgers(ARRAY['req-s']::TEXT[])`); err != nil {
		t.Fatal(err)
	}
	// The leave that waits: its backend and when its statement began.
	waiter := func() string {
		var w string
		if err := tx.QueryRow(ctx, `SELECT coalesce(string_agg(a.pid::text || '@' || a.query_start::text, ','), '')
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted`).Scan(&w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if err := a.Start(rtA, nil, nil); err != nil {
		t.Fatal(err)
	}
	w := waiter()
	for ; w == ""; w = waiter() {
		time.Sleep(10 * time.Millisecond)
	}
	sent := a.lastSent.Load()
	for a.lastSent.Load() == sent {
		time.Sleep(10 * time.Millisecond)
	}
	if now := waiter(); now != w {
		t.Fatalf("the next heartbeat went through only once the leave had stopped waiting (%q, then %q); want heartbeats while it waits", w, now)
	}
}
