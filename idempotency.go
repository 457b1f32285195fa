package reach

import (
	"context"
	"errors"
	"time"

	"github.com/agentreach/reach/internal/idempotency"
)

// IdempotencyStore records call results by idempotency key (R7). The
// runtime claims a key before a call runs and completes it after.
type IdempotencyStore interface {
	// Claim returns the recorded result for c.Key (claimed false), or
	// claims the key for the call c describes (claimed true). While another
	// caller holds the claim, Claim waits for it to complete or for ctx to
	// end (then err). A key recorded or held for other arguments (both
	// Args set, and different) is an error matching ErrIdempotencyKeyReused,
	// at once.
	Claim(ctx context.Context, c *IdemClaim) (rec *Result, claimed bool, err error)
	// Complete records res for a claimed key; a nil res releases the claim
	// so that a later call runs again.
	Complete(key string, res *Result)
}

// IdemClaim describes the call that claims an idempotency key.
type IdemClaim struct {
	Key string // the record's key
	// Args identifies what the call does: a digest of its normalized
	// arguments (the tool is part of Key).
	Args string
	// Request and Frame name the call's checkpoint (Checkpoint.Request and
	// Checkpoint.Frame) when the call is checkpointed, and are zero when it
	// is not. A durable store settles a claim left by a crash by what that
	// checkpoint says: none, and the call never started.
	Request string
	Frame   FrameID
	// Checkpoint is the call's "executing" record when it is checkpointed
	// (what the runtime would give Checkpointer.Executing next). A store
	// that keeps the checkpoints too may make it durable with the claim,
	// in one commit, and then sets Checkpointed: the runtime does not
	// write it again.
	Checkpoint   *Checkpoint
	Checkpointed bool
	// Lease is the longest the call can hold the key: its attempts with
	// their timeouts and backoffs, and a margin. A durable store shared by
	// several instances settles the claim of another instance once its
	// lease has ended.
	Lease time.Duration
}

// ErrIdempotencyKeyReused is returned by IdempotencyStore.Claim for a key
// that was used for a call with other arguments.
var ErrIdempotencyKeyReused = errors.New("idempotency key used for other arguments")

// MemoryIdempotency is an in-memory IdempotencyStore whose records expire
// after a TTL. Safe for concurrent use.
type MemoryIdempotency struct {
	m *idempotency.Memory[*Result]
}

// NewMemoryIdempotency returns a store keeping results for ttl.
func NewMemoryIdempotency(ttl time.Duration) *MemoryIdempotency {
	return &MemoryIdempotency{m: idempotency.NewMemory[*Result](ttl)}
}

// Claim implements IdempotencyStore.
func (s *MemoryIdempotency) Claim(ctx context.Context, c *IdemClaim) (*Result, bool, error) {
	rec, recorded, err := s.m.Claim(ctx, c.Key, c.Args)
	if errors.Is(err, idempotency.ErrReused) {
		return nil, false, ErrIdempotencyKeyReused
	}
	return rec, !recorded && err == nil, err
}

// Complete implements IdempotencyStore.
func (s *MemoryIdempotency) Complete(key string, res *Result) {
	if res == nil {
		s.m.Release(key)
		return
	}
	s.m.Complete(key, res)
}
