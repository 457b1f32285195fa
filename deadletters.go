package reach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DeadLetterQueue keeps the dead letters: the compensations (undos) that
// failed after their retries, waiting for an operator to retry or dismiss
// them (S1). It is one queue: the runtime adds an undo that failed to it,
// and operators' actions take from and settle it through the runtime
// (Runtime.RetryDeadLetter, Runtime.DismissDeadLetter), whatever asks: the
// HTTP API or the CLI. The runtime's default keeps it in
// memory; internal/durable keeps it in a store, across restarts.
// Implementations must be safe for concurrent use.
type DeadLetterQueue interface {
	// Add queues d, open, and sets its ID, State and Updated.
	Add(ctx context.Context, d *DeadLetter) error
	// List returns the dead letters in state (all if ""), oldest first.
	// The open ones include those taken.
	List(ctx context.Context, state DeadLetterState) ([]DeadLetter, error)
	// Take claims the open dead letter id for one operator's action and
	// returns it: it stays in the queue, taken, until Settle. Another Take
	// of it meanwhile fails with ErrDeadLetterBusy; an id of no open dead
	// letter fails with ErrNoDeadLetter, one the queue never gives out
	// with ErrDeadLetterID.
	Take(ctx context.Context, id string) (*DeadLetter, error)
	// Settle ends the action on the taken dead letter d with d's State
	// (open again, retried or resolved), Note, Attempts and Error.
	Settle(ctx context.Context, d *DeadLetter) error
}

// DeadLetterState is where a dead letter is.
type DeadLetterState string

// The states of a dead letter.
const (
	DeadLetterOpen     DeadLetterState = "open"     // waiting for an operator
	DeadLetterTaken    DeadLetterState = "taken"    // an operator's action holds it
	DeadLetterRetried  DeadLetterState = "retried"  // its undo ran again and succeeded
	DeadLetterResolved DeadLetterState = "resolved" // an operator settled it by hand
)

// Errors of a DeadLetterQueue's Take.
var (
	ErrDeadLetterBusy = errors.New("the dead letter is being retried or dismissed")
	ErrNoDeadLetter   = errors.New("no open dead letter of that id")
	ErrDeadLetterID   = errors.New("not a dead letter id of this queue")
)

// NewMemoryDeadLetters returns a queue in memory: the runtime's default.
// It keeps the open and taken dead letters; settled ones leave it.
func NewMemoryDeadLetters() DeadLetterQueue { return &memoryDeadLetters{} }

type memoryDeadLetters struct {
	mu    sync.Mutex
	items []*DeadLetter
}

func (q *memoryDeadLetters) Add(_ context.Context, d *DeadLetter) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if d.ID == "" {
		d.ID = "dl_" + newID()[4:]
	}
	d.State, d.Updated = DeadLetterOpen, time.Now()
	c := *d
	q.items = append(q.items, &c)
	return nil
}

func (q *memoryDeadLetters) List(_ context.Context, state DeadLetterState) ([]DeadLetter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := []DeadLetter{}
	for _, d := range q.items {
		if state == "" || d.State == state || state == DeadLetterOpen && d.State == DeadLetterTaken {
			out = append(out, *d)
		}
	}
	return out, nil
}

func (q *memoryDeadLetters) Take(_ context.Context, id string) (*DeadLetter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range q.items {
		if d.ID != id {
			continue
		}
		if d.State == DeadLetterTaken {
			return nil, fmt.Errorf("dead letter %s: %w", id, ErrDeadLetterBusy)
		}
		d.State, d.Updated = DeadLetterTaken, time.Now()
		c := *d
		return &c, nil
	}
	return nil, fmt.Errorf("dead letter %s: %w", id, ErrNoDeadLetter)
}

func (q *memoryDeadLetters) Settle(_ context.Context, d *DeadLetter) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.items, func(x *DeadLetter) bool { return x.ID == d.ID && x.State == DeadLetterTaken })
	if i < 0 {
		return fmt.Errorf("dead letter %s is not taken", d.ID)
	}
	d.Updated = time.Now()
	if d.State == DeadLetterOpen {
		c := *d
		q.items[i] = &c
		return nil
	}
	q.items = slices.Delete(q.items, i, i+1) // settled: it leaves
	return nil
}
