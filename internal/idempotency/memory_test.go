package idempotency

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory[string](time.Hour)
		ctx := t.Context()
		if _, recorded, err := m.Claim(ctx, "k", "a1"); recorded || err != nil {
			t.Fatalf("first claim: recorded %v, %v", recorded, err)
		}
		// A repeat while the claim is held waits for it.
		got := make(chan string, 1)
		go func() {
			res, recorded, err := m.Claim(ctx, "k", "a1")
			if !recorded || err != nil {
				t.Errorf("a repeat after the first completed: recorded %v, %v", recorded, err)
			}
			got <- res
		}()
		synctest.Wait()
		if _, _, err := m.Claim(ctx, "k", "a2"); !errors.Is(err, ErrReused) {
			t.Errorf("a claim for other arguments: %v, want ErrReused", err)
		}
		m.Complete("k", "result")
		if res := <-got; res != "result" {
			t.Errorf("the waiting repeat got %q", res)
		}
		// The record expires after the TTL: the key runs again.
		time.Sleep(time.Hour + time.Second)
		if _, recorded, err := m.Claim(ctx, "k", "a2"); recorded || err != nil {
			t.Errorf("a claim after the TTL: recorded %v, %v; want claimed", recorded, err)
		}
		// A released claim lets the next call run.
		m.Release("k")
		if _, recorded, _ := m.Claim(ctx, "k", "a3"); recorded {
			t.Error("a claim after a release found a record")
		}
		// A wait ends with ctx, with its cause.
		cctx, cancel := context.WithCancelCause(ctx)
		cause := errors.New("gone")
		time.AfterFunc(time.Second, func() { cancel(cause) })
		if _, _, err := m.Claim(cctx, "k", "a3"); err != cause {
			t.Errorf("a wait whose ctx ended: %v, want its cause", err)
		}
	})
}
