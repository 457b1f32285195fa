// Package idempotency keeps call results by idempotency key in memory
// (R7): the runtime's default store. A key is claimed before its call
// runs, and completed with the result (or released) after; a repeat
// returns the recorded result, and a concurrent one waits for the first.
//
//	m := idempotency.NewMemory[*Result](24 * time.Hour)
//	rec, recorded, err := m.Claim(ctx, key, argsDigest)
//	if !recorded { res := run(); m.Complete(key, res) } // or m.Release(key)
package idempotency

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrReused is Claim's error for a key recorded or held for other
// arguments.
var ErrReused = errors.New("idempotency key used for other arguments")

// Memory is an in-memory store of results R by key, whose records expire
// after a TTL. Safe for concurrent use.
type Memory[R any] struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*entry[R]
	n   int // completes since the last sweep
}

type entry[R any] struct {
	done     chan struct{} // closed when completed or released
	args     string
	res      R
	recorded bool // completed with res
	expires  time.Time
}

// NewMemory returns a store keeping results for ttl.
func NewMemory[R any](ttl time.Duration) *Memory[R] {
	return &Memory[R]{ttl: ttl, m: map[string]*entry[R]{}}
}

// Claim returns the result recorded for key (recorded true), or claims the
// key for a call of arguments args (a digest; recorded false). While
// another caller holds the claim, Claim waits for it to complete or for
// ctx to end (then ctx's cause). A key recorded or held for other
// arguments (both args set, and different) is ErrReused, at once.
func (s *Memory[R]) Claim(ctx context.Context, key, args string) (res R, recorded bool, err error) {
	for {
		s.mu.Lock()
		e, ok := s.m[key]
		if ok && e.recorded && time.Now().After(e.expires) {
			delete(s.m, key)
			ok = false
		}
		if !ok {
			s.m[key] = &entry[R]{done: make(chan struct{}), args: args}
			s.mu.Unlock()
			return res, false, nil
		}
		if e.args != "" && args != "" && e.args != args {
			s.mu.Unlock()
			return res, false, ErrReused
		}
		if e.recorded {
			s.mu.Unlock()
			return e.res, true, nil
		}
		s.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return res, false, context.Cause(ctx)
		}
	}
}

// Complete records res for a claimed key, for the TTL.
func (s *Memory[R]) Complete(key string, res R) { s.settle(key, &res) }

// Release gives up the claim of key: a later call runs again.
func (s *Memory[R]) Release(key string) { s.settle(key, nil) }

func (s *Memory[R]) settle(key string, res *R) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return
	}
	if res == nil {
		delete(s.m, key)
	} else {
		e.res, e.recorded = *res, true
		e.expires = time.Now().Add(s.ttl)
	}
	close(e.done)
	if s.n++; s.n >= 1024 {
		s.n = 0
		now := time.Now()
		for k, v := range s.m {
			if v.recorded && now.After(v.expires) {
				delete(s.m, k)
			}
		}
	}
}
