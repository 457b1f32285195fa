// Package deadletter is the queue of dead letters (S1): the undos that
// failed after their retries, waiting for an operator to retry or dismiss
// them. It declares the queue (Queue: Add, List, Take, Settle), what it
// holds (Letter) and the one dismissal (Dismiss), and keeps the queue in
// memory (NewMemory); internal/durable keeps one in a store. Package reach
// re-exports them and adds to the queue; the HTTP API and the CLI settle
// through the same Take and Settle.
package deadletter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/fault"
)

// Queue keeps the dead letters: the compensations (undos) that
// failed after their retries, waiting for an operator to retry or dismiss
// them (S1). It is one queue: the runtime adds an undo that failed to it,
// and operators' actions take from and settle it through the runtime
// (reach.Runtime.RetryDeadLetter, reach.Runtime.DismissDeadLetter), whatever asks: the
// HTTP API or the CLI. The runtime's default keeps it in
// memory; internal/durable keeps it in a store, across restarts.
// Implementations must be safe for concurrent use.
type Queue interface {
	// Add queues d, open, and sets its ID, State and Updated.
	Add(ctx context.Context, d *Letter) error
	// List returns the dead letters in state (all if ""), oldest first.
	// The open ones include those taken.
	List(ctx context.Context, state State) ([]Letter, error)
	// Take claims the open dead letter id for one operator's action and
	// returns it: it stays in the queue, taken, until Settle. Another Take
	// of it meanwhile fails with ErrBusy; an id of no open dead
	// letter fails with ErrNone, one the queue never gives out
	// with ErrID.
	Take(ctx context.Context, id string) (*Letter, error)
	// Settle ends the action on the taken dead letter d with d's State
	// (open again, retried or resolved), Note, Attempts and Error.
	Settle(ctx context.Context, d *Letter) error
}

// State is where a dead letter is.
type State string

// The states of a dead letter.
const (
	Open     State = "open"     // waiting for an operator
	Taken    State = "taken"    // an operator's action holds it
	Retried  State = "retried"  // its undo ran again and succeeded
	Resolved State = "resolved" // an operator settled it by hand
)

// Errors of a Queue's Take.
var (
	ErrBusy = errors.New("the dead letter is being retried or dismissed")
	ErrNone = errors.New("no open dead letter of that id")
	ErrID   = errors.New("not a dead letter id of this queue")
)

// NewMemory returns a queue in memory: the runtime's default.
// It keeps the open and taken dead letters; settled ones leave it.
func NewMemory() Queue { return &memory{} }

type memory struct {
	mu    sync.Mutex
	items []*Letter
}

func (q *memory) Add(_ context.Context, d *Letter) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if d.ID == "" {
		d.ID = newID()
	}
	d.State, d.Updated = Open, time.Now()
	c := *d
	q.items = append(q.items, &c)
	return nil
}

func (q *memory) List(_ context.Context, state State) ([]Letter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := []Letter{}
	for _, d := range q.items {
		if state == "" || d.State == state || state == Open && d.State == Taken {
			out = append(out, *d)
		}
	}
	return out, nil
}

func (q *memory) Take(_ context.Context, id string) (*Letter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range q.items {
		if d.ID != id {
			continue
		}
		if d.State == Taken {
			return nil, fmt.Errorf("dead letter %s: %w", id, ErrBusy)
		}
		d.State, d.Updated = Taken, time.Now()
		c := *d
		return &c, nil
	}
	return nil, fmt.Errorf("dead letter %s: %w", id, ErrNone)
}

func (q *memory) Settle(_ context.Context, d *Letter) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.items, func(x *Letter) bool { return x.ID == d.ID && x.State == Taken })
	if i < 0 {
		return fmt.Errorf("dead letter %s is not taken", d.ID)
	}
	d.Updated = time.Now()
	if d.State == Open {
		c := *d
		q.items[i] = &c
		return nil
	}
	q.items = slices.Delete(q.items, i, i+1) // settled: it leaves
	return nil
}

// Letter is a compensation that failed after its retries: it waits for
// an operator to retry or dismiss it.
type Letter struct {
	ID       string          `json:"id"`
	Request  string          `json:"request"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"arguments"`
	Undoes   string          `json:"undoes"` // the call it would undo
	Error    *fault.Error    `json:"error"`
	At       time.Time       `json:"at"`
	Attempts int             `json:"attempts"`
	// Key is the undo's idempotency key ("undo:<frame id>"): a retry runs
	// under it, so the undo takes effect at most once.
	Key string `json:"key"`
	// Trace is the W3C trace id of the request whose write it undoes: a
	// retry's frames are in that trace. Zero when unknown (a dead letter
	// restored from a store that keeps none); a retry then starts a trace.
	Trace [16]byte `json:"-"`
	// State is where it is: open (waiting), taken (an operator's action
	// holds it), retried (its undo ran again and succeeded) or resolved
	// (an operator dismissed it).
	State State `json:"state"`
	// Note says how it was settled ("retried by ...", "dismissed by ...: ...").
	Note    string    `json:"note,omitempty"`
	Updated time.Time `json:"updated"`
	// Principal and Tenant are the owner of the root of the request whose
	// write it undoes, set when it is added: an operator of that tenant
	// sees and acts on it, after its request is gone too (a later request
	// of another tenant may take the id). Both "" for one a store kept
	// before it kept them (its request, if that began before it, says
	// whose it is then), or of a request of no owner.
	Principal string `json:"principal,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
}

// Attempts is how many attempts the undo that failed with e made: what
// its Retry says ("3/3"), else one.
func Attempts(e *fault.Error) int {
	n := 1
	if e != nil && e.Retry != "" {
		fmt.Sscanf(e.Retry, "%d/", &n)
	}
	return n
}

// Retried records how an operator's retry (by) of d's undo went: d is
// retried if ok, else open again with the retry's error e; it made one
// attempt more either way.
func (d *Letter) Retried(by string, ok bool, e *fault.Error) {
	d.Attempts++
	if !ok {
		d.State, d.Error = Open, e
		return
	}
	d.State, d.Note = Retried, "retried by "+by
}

// Dismiss resolves the dead letter id of q, as
// reach.Runtime.DismissDeadLetter does, for when no runtime runs (the CLI on a
// data folder).
func Dismiss(ctx context.Context, q Queue, id, by, note string) (*Letter, error) {
	dl, err := q.Take(ctx, id)
	if err != nil {
		return nil, err
	}
	dl.State, dl.Note = Resolved, "dismissed by "+by+": "+note
	if err := q.Settle(context.WithoutCancel(ctx), dl); err != nil {
		return nil, fmt.Errorf("dead letter %s was dismissed, but settling it failed: %w", id, err)
	}
	return dl, nil
}

// newID returns a new random dead letter id.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return "dl_" + hex.EncodeToString(b[:])
}
