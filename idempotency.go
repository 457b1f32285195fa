package reach

import (
	"time"

	"github.com/agentreach/reach/internal/idempotency"
)

// NewMemoryIdempotency returns a store keeping results for ttl.
func NewMemoryIdempotency(ttl time.Duration) *MemoryIdempotency {
	return idempotency.NewMemoryStore[*Result](ttl)
}
