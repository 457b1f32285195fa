package cluster

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

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
