package reach

import (
	"context"
	"sync"
	"time"
)

// IdempotencyStore records call results by idempotency key (R7). The
// runtime claims a key before a call runs and completes it after.
type IdempotencyStore interface {
	// Claim returns the recorded result for key (claimed false), or claims
	// the key for the caller (claimed true). While another caller holds the
	// claim, Claim waits for it to complete or for ctx to end (then err).
	Claim(ctx context.Context, key string) (rec *Result, claimed bool, err error)
	// Complete records res for a claimed key; a nil res releases the claim
	// so that a later call runs again.
	Complete(key string, res *Result)
}

// MemoryIdempotency is an in-memory IdempotencyStore whose records expire
// after a TTL. Safe for concurrent use.
type MemoryIdempotency struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*idemEntry
	n   int // completes since the last sweep
}

type idemEntry struct {
	done    chan struct{} // closed when completed or released
	res     *Result
	expires time.Time
}

// NewMemoryIdempotency returns a store keeping results for ttl.
func NewMemoryIdempotency(ttl time.Duration) *MemoryIdempotency {
	return &MemoryIdempotency{ttl: ttl, m: map[string]*idemEntry{}}
}

// Claim implements IdempotencyStore.
func (s *MemoryIdempotency) Claim(ctx context.Context, key string) (*Result, bool, error) {
	for {
		s.mu.Lock()
		e, ok := s.m[key]
		if ok && e.res != nil && time.Now().After(e.expires) {
			delete(s.m, key)
			ok = false
		}
		if !ok {
			s.m[key] = &idemEntry{done: make(chan struct{})}
			s.mu.Unlock()
			return nil, true, nil
		}
		if e.res != nil {
			s.mu.Unlock()
			return e.res, false, nil
		}
		s.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, false, context.Cause(ctx)
		}
	}
}

// Complete implements IdempotencyStore.
func (s *MemoryIdempotency) Complete(key string, res *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return
	}
	if res == nil {
		delete(s.m, key)
	} else {
		e.res = res
		e.expires = time.Now().Add(s.ttl)
	}
	close(e.done)
	if s.n++; s.n >= 1024 {
		s.n = 0
		now := time.Now()
		for k, v := range s.m {
			if v.res != nil && now.After(v.expires) {
				delete(s.m, k)
			}
		}
	}
}
