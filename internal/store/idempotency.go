package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
)

// IdempotencyOptions configure NewIdempotency. A nil *IdempotencyOptions
// means all defaults.
type IdempotencyOptions struct {
	// TTL is how long a recorded result answers a repeated key; if zero, 24h.
	TTL time.Duration
	// Lease bounds how long a claim that is never completed keeps its key:
	// after it, another caller may claim the key and run the call again.
	// If zero, a claim holds until it is completed or released (a claim
	// left by a process that crashed must then be released by recovery).
	Lease time.Duration
	// Poll is how often a waiting Claim re-reads a key held by a claim it
	// is not told about (another process's); if zero, 50ms. Claims of the
	// same Idempotency wake their waiters at once.
	Poll time.Duration
	// Owner names the claims of this instance; if empty, a random name.
	Owner string
	// SweepEvery is how many completions pass between sweeps of expired
	// records; if zero, 1024.
	SweepEvery int
	// Logger reports records that could not be written (Complete has no
	// error result); if nil, logs are discarded.
	Logger *slog.Logger
}

// Idempotency is a reach.IdempotencyStore over durable records (R7): a
// repeated key returns the recorded result, concurrent claims of one key run
// once, a released key runs again, and records expire after a TTL. Safe for
// concurrent use. Make one with NewIdempotency.
type Idempotency struct {
	recs IdemRecords
	o    IdempotencyOptions
	log  *slog.Logger

	mu    sync.Mutex
	waits map[string]*waiters

	completes atomic.Int64
}

var _ reach.IdempotencyStore = (*Idempotency)(nil)

type waiters struct {
	ch chan struct{} // closed when the key's claim ends here
	n  int
}

// NewIdempotency returns an Idempotency over recs (a Store, or its IdemRecords).
func NewIdempotency(recs IdemRecords, opts *IdempotencyOptions) *Idempotency {
	s := &Idempotency{recs: recs, waits: map[string]*waiters{}}
	if opts != nil {
		s.o = *opts
	}
	if s.o.TTL == 0 {
		s.o.TTL = 24 * time.Hour
	}
	if s.o.Poll == 0 {
		s.o.Poll = 50 * time.Millisecond
	}
	if s.o.Owner == "" {
		var b [8]byte
		rand.Read(b[:])
		s.o.Owner = "idem-" + hex.EncodeToString(b[:])
	}
	if s.o.SweepEvery == 0 {
		s.o.SweepEvery = 1024
	}
	s.log = s.o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Owner returns the name this instance claims keys under.
func (s *Idempotency) Owner() string { return s.o.Owner }

// idemResult is the stored form of a recorded result. It is the package's
// own type so that the records stay readable whatever reach.Result becomes.
type idemResult struct {
	Status  reach.Status    `json:"status"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   *reach.Error    `json:"error,omitempty"`
	Summary string          `json:"summary,omitempty"`
	Notes   []string        `json:"notes,omitempty"`
	CallID  string          `json:"call_id,omitempty"`
}

// Claim implements reach.IdempotencyStore. It returns an error that is not
// the context's only when the records cannot be read.
func (s *Idempotency) Claim(ctx context.Context, key string) (*reach.Result, bool, error) {
	for {
		ch, done := s.subscribe(key)
		now := time.Now()
		var lease time.Time
		if s.o.Lease > 0 {
			lease = now.Add(s.o.Lease)
		}
		rec, claimed, err := s.recs.ClaimKey(ctx, key, s.o.Owner, now, lease)
		if err != nil {
			done()
			if ctx.Err() != nil {
				return nil, false, context.Cause(ctx)
			}
			return nil, false, err
		}
		if claimed {
			done()
			return nil, true, nil
		}
		if rec.State == IdemDone {
			done()
			var r idemResult
			if err := json.Unmarshal(rec.Result, &r); err != nil {
				return nil, false, fmt.Errorf("reading the result recorded for idempotency key %q: %w", key, err)
			}
			return &reach.Result{CallID: r.CallID, Status: r.Status, Data: r.Data, Error: r.Error,
				Summary: r.Summary, Notes: r.Notes}, false, nil
		}
		wait := s.o.Poll
		if !rec.Expires.IsZero() {
			wait = max(0, min(wait, rec.Expires.Sub(now)))
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		done()
		if ctx.Err() != nil {
			return nil, false, context.Cause(ctx)
		}
	}
}

// subscribe returns a channel closed when this instance completes or
// releases key, and a func to call when no longer waiting.
func (s *Idempotency) subscribe(key string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waits[key]
	if w == nil {
		w = &waiters{ch: make(chan struct{})}
		s.waits[key] = w
	}
	w.n++
	return w.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.n--; w.n == 0 && s.waits[key] == w {
			delete(s.waits, key)
		}
	}
}

func (s *Idempotency) notify(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.waits[key]; w != nil {
		close(w.ch)
		delete(s.waits, key)
	}
}

// Complete implements reach.IdempotencyStore. A result that cannot be
// recorded releases the key (the call may run again) and is logged.
func (s *Idempotency) Complete(key string, res *reach.Result) {
	ctx := context.Background()
	defer s.notify(key)
	if res == nil {
		if err := s.recs.ReleaseKey(ctx, key, s.o.Owner); err != nil {
			s.log.Error("idempotency: releasing a key", "key", key, "err", err)
		}
		return
	}
	b, err := json.Marshal(idemResult{Status: res.Status, Data: res.Data, Error: res.Error,
		Summary: res.Summary, Notes: res.Notes, CallID: res.CallID})
	if err == nil {
		err = s.recs.CompleteKey(ctx, key, s.o.Owner, b, time.Now().Add(s.o.TTL))
	}
	if err != nil {
		s.log.Error("idempotency: recording a result; the key is released", "key", key, "err", err)
		if err := s.recs.ReleaseKey(ctx, key, s.o.Owner); err != nil {
			s.log.Error("idempotency: releasing a key", "key", key, "err", err)
		}
		return
	}
	if s.completes.Add(1)%int64(s.o.SweepEvery) == 0 {
		if _, err := s.Sweep(ctx); err != nil {
			s.log.Error("idempotency: sweeping expired records", "err", err)
		}
	}
}

// Sweep deletes the records that have expired and returns how many.
func (s *Idempotency) Sweep(ctx context.Context) (int, error) {
	return s.recs.SweepKeys(ctx, time.Now())
}
