package reach

import (
	"context"

	"github.com/agentreach/reach/internal/deadletter"
)

// DeadLetterQueue keeps the dead letters: the compensations (undos) that
// failed after their retries, waiting for an operator to retry or dismiss
// them (S1). It is one queue (see internal/deadletter): the runtime adds an
// undo that failed to it, and operators' actions take from and settle it
// through the runtime (Runtime.RetryDeadLetter, Runtime.DismissDeadLetter)
// or DismissDeadLetter, whatever asks: the HTTP API or the CLI. The
// runtime's default keeps it in memory; internal/durable keeps it in a
// store, across restarts. Implementations must be safe for concurrent use.
type DeadLetterQueue = deadletter.Queue

// DeadLetter is a compensation that failed after its retries: it waits for
// an operator to retry or dismiss it.
type DeadLetter = deadletter.Letter

// DeadLetterState is where a dead letter is.
type DeadLetterState = deadletter.State

// The states of a dead letter.
const (
	DeadLetterOpen     = deadletter.Open     // waiting for an operator
	DeadLetterTaken    = deadletter.Taken    // an operator's action holds it
	DeadLetterRetried  = deadletter.Retried  // its undo ran again and succeeded
	DeadLetterResolved = deadletter.Resolved // an operator settled it by hand
)

// Errors of a DeadLetterQueue's Take.
var (
	ErrDeadLetterBusy = deadletter.ErrBusy
	ErrNoDeadLetter   = deadletter.ErrNone
	ErrDeadLetterID   = deadletter.ErrID
)

// NewMemoryDeadLetters returns a queue in memory: the runtime's default.
// It keeps the open and taken dead letters; settled ones leave it.
func NewMemoryDeadLetters() DeadLetterQueue { return deadletter.NewMemory() }

// DismissDeadLetter resolves the dead letter id of q, as
// Runtime.DismissDeadLetter does, for when no runtime runs (the CLI on a
// data folder).
func DismissDeadLetter(ctx context.Context, q DeadLetterQueue, id, by, note string) (*DeadLetter, error) {
	return deadletter.Dismiss(ctx, q, id, by, note)
}
