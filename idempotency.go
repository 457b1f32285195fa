package reach

import (
	"time"

	"github.com/agentreach/reach/internal/idempotency"
)

// IdempotencyStore records call results by idempotency key (R7; see
// internal/idempotency). The runtime claims a key before a call runs and
// completes it after.
type IdempotencyStore = idempotency.Store[*Result]

// IdemClaim describes the call that claims an idempotency key.
type IdemClaim = idempotency.Claim

// ErrIdempotencyKeyReused is returned by IdempotencyStore.Claim for a key
// that was used for a call with other arguments.
var ErrIdempotencyKeyReused = idempotency.ErrReused

// MemoryIdempotency is an in-memory IdempotencyStore whose records expire
// after a TTL. Safe for concurrent use.
type MemoryIdempotency = idempotency.MemoryStore[*Result]

// NewMemoryIdempotency returns a store keeping results for ttl.
func NewMemoryIdempotency(ttl time.Duration) *MemoryIdempotency {
	return idempotency.NewMemoryStore[*Result](ttl)
}
