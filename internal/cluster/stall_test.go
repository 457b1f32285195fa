package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestStalledStoreJudgesNoOne: the store stalls (a lock held on the
// heartbeats' table for most of a TTL) without failing a heartbeat: this
// instance's beat waits, then goes through before the other life's, which
// the stall held back as long. The view it reads then finds the other
// unseen for more than a TTL; it must not take it for dead (settle its
// claims, recover its requests) for a TTL, as after a failed heartbeat.
func TestStalledStoreJudgesNoOne(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const ttl = 2 * time.Second
	c, err := New(ctx, &Options{Store: st, Instance: "a", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Another life, b/1, heartbeats; then its next heartbeat is held back
	// by the stall, and comes after a's.
	if err := st.Heartbeat(ctx, "b/1", "b", time.Now()); err != nil {
		t.Fatal(err)
	}
	claimed := time.Now() // b/1 was seen before this
	// Steady heartbeats of a, for longer than a TTL, then one more.
	c.healthy.Store(time.Now().Add(-time.Hour).UnixNano())
	time.Sleep(ttl / 5)
	if err := c.beat(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE instances IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	beat := make(chan error, 1)
	go func() { beat <- c.beat(ctx) }()
	// The stall ends once b's last heartbeat is older than the TTL, but a
	// heartbeat waited less than a TTL (it would have timed out).
	time.Sleep(time.Until(claimed.Add(ttl + ttl/10)))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-beat; err != nil {
		t.Fatalf("a's heartbeat through the stall: %v", err)
	}
	dead, _ := c.Dead(ctx)
	if !slices.Contains(dead, "b/1") {
		t.Skipf("b/1 was not unseen for a TTL when a's view was read (dead: %v): the stall was too short to tell", dead)
	}
	if !c.Alive("b/1", claimed) {
		t.Errorf("a takes b/1 for dead in the view read as the stalled store came back: b's heartbeat, held as long, comes after it")
	}
	if c.judges(time.Now()) {
		t.Errorf("a judges lives a moment after its heartbeats stalled for most of a TTL")
	}
}
