package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// A life between New and Start heartbeats: a gateway connects its
// upstreams and recovers its earlier life's work between the two, which a
// slow upstream or a loaded machine makes longer than the TTL. Before, New
// heartbeated once and the heartbeats began with Start: the others took
// the new life for dead a TTL later, and its first heartbeat after Start
// fenced it (a reach serve restarted under load took 13 s to serve and
// admitted no work: TestInstancesStopShownAcross, 'instance b was taken
// for dead'). The store sees a heartbeat of the life after New's, with no
// Start; Close without Start ends them.
func TestStartingLifeHeartbeats(t *testing.T) {
	earlyBeats = true
	t.Cleanup(func() { earlyBeats = false })
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := New(ctx, &Options{Store: st, Instance: "a", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	seen := func() time.Time {
		lives, err := st.Lives(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lives {
			if l.Owner == c.Owner() {
				return l.Seen
			}
		}
		t.Fatalf("no life %s on the store: %+v", c.Owner(), lives)
		return time.Time{}
	}
	first := seen()
	for deadline := time.Now().Add(time.Minute); !seen().After(first); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a life made by New and not started heartbeated no more than once in a minute (TTL 1s): seen %v", first)
		}
	}
	if c.Fenced() {
		t.Fatal("the starting life is fenced")
	}
	// Start takes the heartbeats over.
	if err := c.Start(nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	started := seen()
	for deadline := time.Now().Add(time.Minute); !seen().After(started); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat in a minute after Start")
		}
	}
	c.Close()
	// A life closed before its Start: Close ends New's heartbeats.
	b, err := New(ctx, &Options{Store: st, Instance: "b", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close of a life not started did not return")
	}
}
