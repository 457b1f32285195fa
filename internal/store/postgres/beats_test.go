package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestBeatWhilePoolBusy: a heartbeat, and the read of who is alive, go
// through while every connection of the store's pool is held by reads (a
// client's requests in flight keep it busy). On the pool, they waited behind
// them: clients that kept it busy past instance_ttl made the other
// instances take a live one for dead and recover its work.
func TestBeatWhilePoolBusy(t *testing.T) {
	s, err := Open(context.Background(), pgtest.Database(t), &Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held []*pgxpool.Conn
	for range 2 {
		c, err := s.pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	// The deadline only ends a test that would otherwise hang.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	started := time.Now()
	if err := s.Heartbeat(ctx, "i1/life", "i1", started); err != nil {
		t.Fatalf("a heartbeat while the pool is busy: %v", err)
	}
	lives, err := s.Lives(ctx, time.Minute)
	if err != nil || len(lives) != 1 || lives[0].Owner != "i1/life" || !lives[0].Alive {
		t.Fatalf("who is alive while the pool is busy: %+v, %v; want i1/life alive", lives, err)
	}
}
