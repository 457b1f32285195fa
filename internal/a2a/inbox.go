package a2a

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// inbox holds the events of one upstream stream that reach has read from
// the connection and not yet applied to the task. The stream is read on a
// goroutine of its own, so that the work apply does after each event (the
// store write, the audit) does not hold the reading back: an event the
// agent sent is reach's as soon as it arrives, and a stop that comes while
// apply is busy finds it here (markCanceled applies what was read before
// the stop, then cancels).
type inbox struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced when anything below changes
	items   []inboxItem
	bytes   int64       // sizeOf the events in items
	ended   bool        // the stream ended: nothing more comes
	read    int         // events and errors read from the stream, in all
	applied int         // of them, taken and applied
	budget  *readBudget // the gateway's, over all its streams
	waiting bool        // the reader waits in put (for the bound or the budget)
	// holdAt, >= 0 while a stop waits for the first holdAt items to be
	// applied: the ones after it, read after the stop, wait for it.
	holdAt int
}

type inboxItem struct {
	ev  a2a.Event
	err error
}

func newInbox(b *readBudget) *inbox {
	return &inbox{changed: make(chan struct{}), holdAt: -1, budget: b}
}

// readBudget bounds the bytes of the events all of a gateway's streams
// read and not yet applied (Options.MaxReadBytes): each stream's own
// bound (MaxTaskBytes) times the streams open would not bound them while
// the store is slow.
type readBudget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	changed chan struct{} // closed and replaced when bytes are given back
}

func newReadBudget(max int64) *readBudget {
	return &readBudget{max: max, changed: make(chan struct{})}
}

// take counts n bytes in if they fit, or if nothing is counted (an event
// larger than the budget alone is read alone), and reports whether it did.
func (b *readBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// wait is closed when bytes are given back.
func (b *readBudget) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// give counts n bytes out.
func (b *readBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// held is the bytes counted in.
func (b *readBudget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// wakeLocked wakes whoever waits on a change (in.mu held).
func (in *inbox) wakeLocked() {
	close(in.changed)
	in.changed = make(chan struct{})
}

// put adds what the stream gave, waiting while the events read and not
// yet applied hold more than max bytes (one is always taken), or while
// all the streams' together would hold more than the gateway's budget
// (b; one is taken when the budget holds none), or until ctx ends (then
// it reports false and the item is dropped). While it waits the stream
// is not read: the agent's connection feels it (its TCP window fills).
func (in *inbox) put(ctx context.Context, it inboxItem, max int64, b *readBudget) bool {
	n := int64(0)
	if it.ev != nil {
		n = sizeOf(it.ev)
	}
	for {
		in.mu.Lock()
		full := len(in.items) > 0 && in.bytes+n > max
		var ch <-chan struct{} = in.changed
		if !full && b.take(n) {
			break // in.mu held
		}
		if !full {
			ch = b.wait()
			if b.take(n) { // given back between the two
				break
			}
		}
		in.waiting = true
		in.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			in.mu.Lock()
			in.waiting = false
			in.mu.Unlock()
			return false
		}
	}
	in.waiting = false
	in.items = append(in.items, it)
	in.bytes += n
	in.read++
	in.wakeLocked()
	in.mu.Unlock()
	return true
}

// end says the stream ended after what was put.
func (in *inbox) end() {
	in.mu.Lock()
	in.ended = true
	in.wakeLocked()
	in.mu.Unlock()
}

// take waits for the next item, in order; ok is false once the stream
// ended and all was taken. Each item taken is marked applied (applied)
// once the caller is done with it.
func (in *inbox) take() (it inboxItem, ok bool) {
	in.mu.Lock()
	for len(in.items) == 0 && !in.ended || len(in.items) > 0 && in.holdAt >= 0 && in.applied >= in.holdAt {
		ch := in.changed
		in.mu.Unlock()
		<-ch
		in.mu.Lock()
	}
	defer in.mu.Unlock()
	if len(in.items) == 0 {
		return inboxItem{}, false
	}
	it = in.items[0]
	in.items[0] = inboxItem{}
	in.items = in.items[1:]
	if it.ev != nil {
		n := sizeOf(it.ev)
		in.bytes -= n
		in.budget.give(n)
	}
	in.wakeLocked()
	return it, true
}

// done marks the item taken last as applied.
func (in *inbox) done() {
	in.mu.Lock()
	in.applied++
	in.wakeLocked()
	in.mu.Unlock()
}

// hold makes the items read so far the last to be applied until release,
// and returns how many that is.
func (in *inbox) hold() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.holdAt = in.read
	in.wakeLocked()
	return in.read
}

// release lets the items read after hold be applied.
func (in *inbox) release() {
	in.mu.Lock()
	in.holdAt = -1
	in.wakeLocked()
	in.mu.Unlock()
}

// awaitApplied waits until n items are applied, or the stream ended with
// fewer taken, or until expired is closed.
func (in *inbox) awaitApplied(n int, expired <-chan time.Time, gone <-chan struct{}) {
	in.mu.Lock()
	for in.applied < n && !(in.ended && len(in.items) == 0 && in.applied == in.read) {
		ch := in.changed
		in.mu.Unlock()
		select {
		case <-ch:
		case <-expired:
			return
		case <-gone:
			return
		}
		in.mu.Lock()
	}
	in.mu.Unlock()
}

// applyRead has the events this task's streams read before now applied
// before it goes on, while it holds what they read after (held, released
// by the caller once the stop is settled): a stop keeps what the agent
// sent before it. It waits at most Options.CancelTimeout: a store that
// hangs delays a stop no longer.
func (t *task) applyRead() (release func()) {
	t.mu.Lock()
	ins := slices.Clone(t.inboxes)
	t.mu.Unlock()
	if len(ins) == 0 {
		return func() {}
	}
	ns := make([]int, len(ins))
	for i, in := range ins {
		ns[i] = in.hold()
	}
	timer := time.NewTimer(t.g.opts.CancelTimeout)
	defer timer.Stop()
	for i, in := range ins {
		in.awaitApplied(ns[i], timer.C, t.g.base.Done())
	}
	return func() {
		for _, in := range ins {
			in.release()
		}
	}
}
