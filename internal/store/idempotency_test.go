package store

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// Concurrent claims of one key run the work once, and leave no waiter
// behind once everyone returned.
func TestIdempotencyWaitersLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewIdempotency(NewMemory(), nil)
		var runs atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				rec, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k"})
				if err != nil {
					t.Error(err)
					return
				}
				if !claimed {
					if rec == nil || string(rec.Data) != "1" {
						t.Errorf("a waiter got %+v", rec)
					}
					return
				}
				runs.Add(1)
				time.Sleep(time.Second) // others arrive while it runs
				s.Complete("k", &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("16 concurrent claims ran the work %d times, want 1", n)
		}
		if n := len(s.waits); n != 0 {
			t.Errorf("%d keys still have waiters after everyone returned", n)
		}
	})
}
