package idempotency

import (
	"errors"
	"testing"
	"time"
)

// TestMemoryStore: a claim is claimed once; a completed key returns its
// record; a nil result releases the claim; other arguments are ErrReused.
func TestMemoryStore(t *testing.T) {
	s := NewMemoryStore[*string](time.Hour)
	ctx := t.Context()
	if rec, claimed, err := s.Claim(ctx, &Claim{Key: "k", Args: "a"}); !claimed || rec != nil || err != nil {
		t.Fatalf("first claim = %v, %v, %v", rec, claimed, err)
	}
	s.Complete("k", nil) // released
	if _, claimed, _ := s.Claim(ctx, &Claim{Key: "k", Args: "a"}); !claimed {
		t.Fatal("a released key was not claimed again")
	}
	res := "done"
	s.Complete("k", &res)
	if rec, claimed, err := s.Claim(ctx, &Claim{Key: "k", Args: "a"}); claimed || rec == nil || *rec != "done" || err != nil {
		t.Fatalf("a completed key = %v, %v, %v; want its record", rec, claimed, err)
	}
	if _, claimed, err := s.Claim(ctx, &Claim{Key: "k", Args: "b"}); claimed || !errors.Is(err, ErrReused) {
		t.Fatalf("other arguments = %v, %v; want ErrReused", claimed, err)
	}
}
