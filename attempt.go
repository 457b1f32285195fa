package reach

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// attempt is the context a tool's Func runs in for one attempt: the call's
// context (parent) with the tool call's frame, its idempotency key (key,
// nil when it has none) and the attempt's deadline, in one allocation
// where context.WithValue twice and context.WithTimeoutCause took seven
// (with the timer, and the Done channel and children map the parent makes
// for it).
//
// It reports what context.WithTimeoutCause(parent, timeout,
// errAttemptTimeout) would, but makes that context, and its timer, only
// when something waits for it to end (Done, a context derived from it,
// context.AfterFunc): until then Err reads the deadline from the clock,
// and a caller that enforces Deadline itself (the wire client, on its
// connection) waits for the parent's end alone (AfterCancel). A Func that
// never waits (most answer at once, or block on a socket) costs no timer.
type attempt struct {
	parent   context.Context
	frame    *Frame
	key      *string
	deadline time.Time
	// sooner is the parent's deadline when it comes before deadline (else
	// zero), read once: a context's deadline never moves, and asking the
	// parent each time walked every attempt above it, at every level, on
	// every Err (quadratic in the call's depth).
	sooner time.Time

	made atomic.Value // the context.Context made for it (make), once made

	ended atomic.Uint32 // an attemptEnd: how it ended, if it ended before it was made

	mu     sync.Mutex         // makes it, and ends it
	cancel context.CancelFunc // made's
}

// attemptEnd is how an attempt ended (end) before its context was made:
// what that context reports once made (make).
type attemptEnd uint8

const (
	running    attemptEnd = iota
	endParent             // its parent had ended: it ended with the parent's error and cause
	endTimeout            // its deadline had passed: DeadlineExceeded, errAttemptTimeout
	endCancel             // the Func returned: Canceled
)

func newAttempt(parent context.Context, f *Frame, key *string, timeout time.Duration) *attempt {
	return newAttemptAt(parent, f, key, time.Now(), timeout)
}

// newAttemptAt is newAttempt begun at now, a clock read the caller has
// just made (execute's, as its first attempt starts): one read, not two.
func newAttemptAt(parent context.Context, f *Frame, key *string, now time.Time, timeout time.Duration) *attempt {
	a := &attempt{parent: parent, frame: f, key: key, deadline: now.Add(timeout)}
	if d, ok := parent.Deadline(); ok && d.Before(a.deadline) {
		a.sooner = d
	}
	return a
}

// Deadline is the attempt's deadline, or the parent's when it is sooner,
// as context.WithDeadline reports it.
func (a *attempt) Deadline() (time.Time, bool) {
	if !a.sooner.IsZero() {
		return a.sooner, true
	}
	return a.deadline, true
}

// Done makes the attempt's context: something waits for it to end.
func (a *attempt) Done() <-chan struct{} { return a.make().Done() }

func (a *attempt) Err() error { return a.errAt(time.Time{}) }

// errAt is Err at now, read once for the whole chain of attempts above
// (zero: not read yet): one clock read, not one per level.
func (a *attempt) errAt(now time.Time) error {
	if m, ok := a.made.Load().(context.Context); ok {
		err := m.Err()
		if err != nil {
			return err
		}
		if now.IsZero() {
			now = time.Now()
		}
		if d, _ := a.Deadline(); !now.Before(d) {
			// Its timer, or its parent's (the sooner deadline), is due:
			// it runs within moments. A caller that enforced the
			// deadline on a socket saw it pass first, and reads what the
			// timer would have cut it with.
			<-m.Done()
			err = m.Err()
		}
		return err
	}
	switch attemptEnd(a.ended.Load()) {
	case running:
		if now.IsZero() {
			now = time.Now()
		}
		var err error
		if p, ok := a.parent.(*attempt); ok {
			err = p.errAt(now)
		} else {
			err = a.parent.Err()
		}
		if err != nil {
			return err // context.Cause finds the parent's cause, as it would its copy in a child
		}
		if d := a.sooner; !d.IsZero() && !now.Before(d) {
			// The parent's deadline, the sooner, passed (a caller that
			// enforced it on a socket saw it first): its timer is due.
			<-a.parent.Done()
			return a.parent.Err()
		}
		if now.Before(a.deadline) {
			return nil
		}
	case endParent:
		return a.parent.Err()
	}
	// Timed out, or ended by its end: made, so that context.Cause finds
	// its own cause (errAttemptTimeout, or Canceled) and not one the
	// parent may get later.
	return a.make().Err()
}

func (a *attempt) Value(key any) any {
	switch key.(type) {
	case posKey:
		return a.frame
	case idemKey:
		if a.key != nil {
			return a.key
		}
	}
	if m, ok := a.made.Load().(context.Context); ok {
		return m.Value(key)
	}
	return a.parent.Value(key)
}

func (a *attempt) String() string { return "reach.attempt" }

// AfterCancel is context.AfterFunc for a caller that enforces the
// attempt's Deadline itself: f runs when the attempt's parent ends (or,
// once the attempt's context was made, when that does), not when the
// attempt's own deadline passes. The caller is done with the attempt
// before its Func returns (end does not run f).
func (a *attempt) AfterCancel(f func()) (stop func() bool) {
	if m, ok := a.made.Load().(context.Context); ok {
		return context.AfterFunc(m, f)
	}
	return context.AfterFunc(a.parent, f)
}

// make returns the attempt's context, made at the first call: the
// parent's with the deadline and cause, or, once the attempt ended, one
// that ended as it did.
func (a *attempt) make() context.Context {
	if m, ok := a.made.Load().(context.Context); ok {
		return m
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if m, ok := a.made.Load().(context.Context); ok {
		return m
	}
	var m context.Context
	switch attemptEnd(a.ended.Load()) {
	case running:
		m, a.cancel = context.WithDeadlineCause(a.parent, a.deadline, errAttemptTimeout)
	case endParent:
		m, a.cancel = context.WithCancel(a.parent) // ends with the parent's error and cause at once
	case endTimeout:
		m, a.cancel = context.WithDeadlineCause(context.WithoutCancel(a.parent), a.deadline, errAttemptTimeout)
	default:
		m, a.cancel = context.WithCancel(context.WithoutCancel(a.parent))
		a.cancel()
	}
	a.made.Store(m)
	return m
}

// end ends the attempt once its Func returned, as the cancel of
// context.WithTimeoutCause does: its context, if made, is cancelled (and
// its timer stopped); else what it would have reported is kept for a
// context made later.
func (a *attempt) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil {
		a.cancel()
		return
	}
	// One clock read for its deadline and the chain of attempts above.
	now := time.Now()
	var perr error
	if p, ok := a.parent.(*attempt); ok {
		perr = p.errAt(now)
	} else {
		perr = a.parent.Err()
	}
	switch {
	case perr != nil:
		a.ended.Store(uint32(endParent))
	case !now.Before(a.deadline):
		a.ended.Store(uint32(endTimeout))
	default:
		a.ended.Store(uint32(endCancel))
	}
}

// detached is ctx's values without its cancellation and deadline, as
// context.WithoutCancel gives them, kept in a struct already made (a
// Call's), so that it costs no allocation of its own.
type detached struct{ ctx context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }
func (d *detached) Value(key any) any         { return d.ctx.Value(key) }
func (d *detached) String() string            { return "reach.detached" }
