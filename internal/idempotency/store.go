package idempotency

import (
	"context"
	"time"

	"github.com/agentreach/reach/internal/frames"
	"github.com/agentreach/reach/internal/records"
)

// Store records call results R by idempotency key (R7): the runtime's
// interface (reach.IdempotencyStore), which a durable store implements
// too. The runtime claims a key before a call runs and completes it after.
type Store[R any] interface {
	// Claim returns the recorded result for c.Key (claimed false), or
	// claims the key for the call c describes (claimed true). While another
	// caller holds the claim, Claim waits for it to complete or for ctx to
	// end (then err). A key recorded or held for other arguments (both
	// Args set, and different) is an error matching ErrReused
	// (reach.ErrIdempotencyKeyReused), at once.
	Claim(ctx context.Context, c *Claim) (rec R, claimed bool, err error)
	// Complete records res for a claimed key; a nil res releases the claim
	// so that a later call runs again.
	Complete(key string, res R)
}

// Claim describes the call that claims an idempotency key.
type Claim struct {
	Key string // the record's key
	// Args identifies what the call does: a digest of its normalized
	// arguments (the tool is part of Key).
	Args string
	// Request and Frame name the call's checkpoint (Checkpoint.Request and
	// Checkpoint.Frame) when the call is checkpointed, and are zero when it
	// is not. A durable store settles a claim left by a crash by what that
	// checkpoint says: none, and the call never started.
	Request string
	Frame   frames.ID
	// Checkpoint is the call's "executing" record when it is checkpointed
	// (what the runtime would give Checkpointer.Executing next). A store
	// that keeps the checkpoints too may make it durable with the claim,
	// in one commit, and then sets Checkpointed: the runtime does not
	// write it again.
	Checkpoint   *records.Checkpoint
	Checkpointed bool
	// Lease is the longest the call can hold the key: its attempts with
	// their timeouts and backoffs, and a margin. A durable store shared by
	// several instances settles the claim of another instance once its
	// lease has ended.
	Lease time.Duration
	// CutOff, if not "", is the key of a write cut off before its answer
	// was delivered that this call may be the retry of, in the runtime's
	// shared cut-off store (reach.CutOffStore). A store that keeps both
	// may look for it in the claim's own statement: it then sets
	// CutOffRead, and CutOffLive if a write of that key was unexpired at
	// the claim. Set only when the claim is taken.
	CutOff                 string
	CutOffRead, CutOffLive bool
	// Root is the call's root request, kept with CutOff while the claim is
	// held where the store can. InFlight says that, when the claim was
	// taken, an identical write (CutOff) held another claim on a live
	// instance: of the root request InFlightRoot, claimed at InFlightAt,
	// request InFlightRequest's call. Set only when the claim is taken.
	Root                          string
	InFlight                      bool
	InFlightRoot, InFlightRequest string
	InFlightAt                    time.Time
}

// MemoryStore is the Store in memory (a Memory), whose records expire
// after a TTL: the runtime's default (reach.MemoryIdempotency). R is a
// pointer: its nil releases a claim. Safe for concurrent use.
type MemoryStore[R comparable] struct {
	m *Memory[R]
}

// NewMemoryStore returns a store keeping results for ttl.
func NewMemoryStore[R comparable](ttl time.Duration) *MemoryStore[R] {
	return &MemoryStore[R]{m: NewMemory[R](ttl)}
}

// Claim implements Store.
func (s *MemoryStore[R]) Claim(ctx context.Context, c *Claim) (R, bool, error) {
	rec, recorded, err := s.m.Claim(ctx, c.Key, c.Args)
	return rec, !recorded && err == nil, err
}

// Complete implements Store.
func (s *MemoryStore[R]) Complete(key string, res R) {
	var none R
	if res == none {
		s.m.Release(key)
		return
	}
	s.m.Complete(key, res)
}
