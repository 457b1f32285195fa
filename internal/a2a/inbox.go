package a2a

import (
	"context"
	"fmt"
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
// apply is busy finds it here (keepSent has it applied, with what the
// stream brings up to the agent's own end, before reach cancels).
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
	// finalAt is the index of the first event read that ends the task
	// at the agent (a terminal state: its answer to a cancel, or its own
	// end), or -1.
	finalAt int
	// stopping, while a stop waits for the agent's terminal state: that
	// state is not applied before the stop settled the task (keepSent).
	stopping bool
	// holdAt, >= 0 while a stop waits for the first holdAt items to be
	// applied: the ones after it (the agent's end, or what came after
	// the stop's wait) wait for it.
	holdAt int
}

type inboxItem struct {
	ev  a2a.Event
	err error
}

func newInbox(b *readBudget) *inbox {
	return &inbox{changed: make(chan struct{}), holdAt: -1, finalAt: -1, budget: b}
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
	if in.finalAt < 0 && endsTask(it.ev) {
		in.finalAt = in.read
	}
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
	for len(in.items) == 0 && !in.ended || len(in.items) > 0 && in.held() {
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

// held reports whether the next item waits for a stop (in.mu held): it
// is past the stop's hold, or it is the agent's terminal state while a
// stop waits for it (stopping).
func (in *inbox) held() bool {
	return in.holdAt >= 0 && in.applied >= in.holdAt || in.stopping && in.finalAt >= 0 && in.applied >= in.finalAt
}

// done marks the item taken last as applied.
func (in *inbox) done() {
	in.mu.Lock()
	in.applied++
	in.wakeLocked()
	in.mu.Unlock()
}

// endsTask reports whether ev is a terminal state of a task.
func endsTask(ev a2a.Event) bool {
	switch e := ev.(type) {
	case *a2a.Task:
		return e != nil && e.Status.State.Terminal()
	case *a2a.TaskStatusUpdateEvent:
		return e != nil && e.Status.State.Terminal()
	}
	return false
}

// mark is where a stop found the inbox: the events read, and applied;
// from now on the agent's terminal state waits for the stop.
func (in *inbox) mark() (read, applied int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stopping = true
	return in.read, in.applied
}

// awaitFinal waits until the stream brought a terminal state or ended,
// or until expired or gone is closed; it returns where the events the
// stop keeps end: before that terminal state, or all that were read.
func (in *inbox) awaitFinal(expired, gone <-chan struct{}) (n int, final, ended bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for in.finalAt < 0 && !in.ended {
		ch := in.changed
		in.mu.Unlock()
		select {
		case <-ch:
		case <-expired:
			in.mu.Lock()
			return in.read, false, false
		case <-gone:
			in.mu.Lock()
			return in.read, false, false
		}
		in.mu.Lock()
	}
	if in.finalAt >= 0 {
		return in.finalAt, true, false
	}
	return in.read, false, true
}

// beforeFinal is n, or fewer: the items before the terminal state, if
// the stream brought one.
func (in *inbox) beforeFinal(n int) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.finalAt >= 0 {
		return min(n, in.finalAt)
	}
	return n
}

// hold makes the first n items the last to be applied until release.
func (in *inbox) hold(n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.holdAt = n
	in.wakeLocked()
}

// release lets the items after the hold be applied.
func (in *inbox) release() {
	in.mu.Lock()
	in.holdAt = -1
	in.stopping = false
	in.wakeLocked()
	in.mu.Unlock()
}

// awaitApplied waits until n items are applied, or the stream ended with
// fewer taken, or until expired is closed; it returns how many are.
func (in *inbox) awaitApplied(n int, expired, gone <-chan struct{}) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	for in.applied < n && !(in.ended && len(in.items) == 0 && in.applied == in.read) {
		ch := in.changed
		in.mu.Unlock()
		select {
		case <-ch:
		case <-expired:
			in.mu.Lock()
			return in.applied
		case <-gone:
			in.mu.Lock()
			return in.applied
		}
		in.mu.Lock()
	}
	return in.applied
}

// markSent, with the keepSent it returns, is a stop's wait for what the
// agent's streams bring before the agent ends the task on its own word.
// The A2A JS SDK, like the protocol's model, has an agent take a cancel
// on the task's own stream of events: what it sent before it had the
// cancel comes first, in order, then its answer (TASK_STATE_CANCELED),
// and the task is the agent's until then.
// So a stop keeps what each stream brings until its terminal state (or
// its end), applied before reach settles the task canceled, and holds
// back what comes after, which the caller then releases (a terminal state
// after reach's is recorded as late, nothing else is kept). When wait is
// false (an isolating stop) it keeps only what was read before it. All of
// it within Options.CancelTimeout: an agent that does not answer, or a
// store that hangs, delays a stop no longer. It says what it kept, for the
// audit (said), once the stop settled the task.
//
// markSent begins it: the streams are marked (what was read before the
// stop, and from then on the agent's terminal state waits for it) before
// the agent is told of the stop, so that its answer is never applied
// ahead of reach's.
func (t *task) markSent() (keepSent func(wait bool) (release func(), said func() string)) {
	t.mu.Lock()
	ins := slices.Clone(t.inboxes)
	t.mu.Unlock()
	if len(ins) == 0 {
		return func(bool) (func(), func() string) { return func() {}, func() string { return "" } }
	}
	readAt, appliedAt := make([]int, len(ins)), make([]int, len(ins))
	for i, in := range ins {
		readAt[i], appliedAt[i] = in.mark()
	}
	return func(wait bool) (func(), func() string) { return t.keepSent(wait, ins, readAt, appliedAt) }
}

// keepSent is markSent's wait, for the streams ins, marked at readAt
// events read and appliedAt applied.
func (t *task) keepSent(wait bool, ins []*inbox, readAt, appliedAt []int) (release func(), said func() string) {
	// Closed, not sent on: every wait below ends on it.
	expiredC := make(chan struct{})
	timer := time.AfterFunc(t.g.opts.CancelTimeout, func() { close(expiredC) })
	defer timer.Stop()
	ns := slices.Clone(readAt)
	var final, ended, expired int
	for i, in := range ins {
		if !wait {
			// What was read before the stop, short of the agent's terminal
			// state if it was among it: that one is held (stopping), and
			// waited for here it would keep the stop CancelTimeout long.
			ns[i] = in.beforeFinal(readAt[i])
			continue
		}
		n, f, e := in.awaitFinal(expiredC, t.g.base.Done())
		ns[i] = n
		switch {
		case f:
			final++
		case e:
			ended++
		default:
			expired++
		}
	}
	for i, in := range ins {
		in.hold(ns[i])
	}
	before, after, short := 0, 0, 0
	for i, in := range ins {
		got := min(in.awaitApplied(ns[i], expiredC, t.g.base.Done()), ns[i])
		before += max(0, min(got, readAt[i])-appliedAt[i])
		after += max(0, got-readAt[i])
		short += max(0, ns[i]-got)
	}
	release = func() {
		for _, in := range ins {
			in.release()
		}
	}
	said = func() string {
		var why string
		switch {
		case !wait:
			why = "it did not wait for the agent (its subtree isolated)"
		case expired > 0:
			why = fmt.Sprintf("the agent had not ended the task within %s; what it sends after is not kept", t.g.opts.CancelTimeout)
		case final > 0:
			why = "up to the agent's own end of the task (its answer to the cancel), which came after: the agent sent them before it had the cancel, or with its answer"
		default:
			why = "up to the end of the agent's stream"
		}
		s := fmt.Sprintf("the stop applied %d event(s) of the agent read before it and %d that arrived after it, %s", before, after, why)
		if short > 0 {
			s += fmt.Sprintf("; %d read in time were not applied within %s (the store was slow) and are not kept", short, t.g.opts.CancelTimeout)
		}
		return s
	}
	return release, said
}
