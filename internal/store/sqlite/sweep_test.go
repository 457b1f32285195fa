package sqlite

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// The sweep that a completion queues (store.Idempotency, every
// SweepEvery-th) deletes the results that expired, with the batch after
// it: a write waited for after it finds them gone.
func TestQueuedSweepDeletesExpired(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idem := store.NewIdempotency(s, &store.IdempotencyOptions{SweepEvery: 2, TTL: time.Millisecond})
	complete := func(key string) {
		if _, claimed, err := idem.Claim(t.Context(), &reach.IdemClaim{Key: key}); err != nil || !claimed {
			t.Fatal(key, claimed, err)
		}
		idem.Complete(key, &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
	}
	complete("a")
	time.Sleep(5 * time.Millisecond) // a's result (1 ms) has expired when b's completion sweeps
	complete("b")
	if err := flush(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM idempotency WHERE key = 'a'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a's expired result is still recorded after the queued sweep")
	}
	// The key is free again, and claimed as a new row, above the claims' mark.
	if _, claimed, err := idem.Claim(t.Context(), &reach.IdemClaim{Key: "a"}); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	claims, err := s.ClaimedKeys(t.Context())
	if err != nil || len(claims) != 1 || claims[0].Key != "a" {
		t.Errorf("claims after the sweep: %v, %v; want a's", claims, err)
	}
}
