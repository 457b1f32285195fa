package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// A recovery of a dead instance's work (which runs the undos of the calls
// it finds cut off, on their upstreams) does not hold the recovering
// instance's heartbeats: they go on while it runs. Before, it ran on the
// heartbeat's goroutine, for up to 5 minutes, and a slow undo made the
// others take the recovering instance for dead in turn.
func TestRecoveryHoldsNoHeartbeat(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	var cs [2]*Cluster
	for i, name := range []string{"a", "dead"} {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	a := cs[0]
	defer a.Close()
	// "dead" heartbeated once (New) and never again: after the TTL it is
	// dead, and a recovers its work, which takes until release.
	called, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	if err := a.Start(nil, nil, func(ctx context.Context) error {
		select {
		case called <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The deadline only ends a test that would otherwise hang.
	deadline := time.After(30 * time.Second)
	select {
	case <-called:
	case <-deadline:
		t.Fatal("no recovery began for the dead instance")
	}
	sent := a.lastSent.Load()
	for a.lastSent.Load() == sent {
		select {
		case <-deadline:
			t.Fatal("no heartbeat went through while the recovery ran; want heartbeats to go on")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
