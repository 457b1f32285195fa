package reach

import (
	"context"

	"github.com/agentreach/reach/internal/deadletter"
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
