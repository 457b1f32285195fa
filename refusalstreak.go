package reach

import (
	"context"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
)

// DefaultRefusedInARow is how many refusals in a row of one agent's tool
// calls in one request, with none of its calls let through in between,
// stop the request when Options.RefusedInARow is zero. An agent that reads
// reach's refusals changes course after one or two (the loop guard's
// refusal comes at the third identical call; a denial names what to do
// instead); eight leaves room for an agent that tries several ways round
// one denial, and ends one that ignores them within a few seconds, not at
// its framework's step limit.
const DefaultRefusedInARow = 8

// refusedInARow is the limit in force: 0 when the rule is off.
func (rt *Runtime) refusedInARow() int32 {
	switch n := rt.opts.RefusedInARow; {
	case n < 0:
		return 0
	case n == 0:
		return DefaultRefusedInARow
	default:
		return int32(min(n, 1<<30))
	}
}

// actionable reports whether e, a tool call's refusal, is one its agent
// can act on by changing course: a loop, a policy's denial (or an
// approval that cannot be given here), a spent budget, a broken
// reentrancy contract, a cycle. Not an approval that is pending (the
// agent may retry while a human decides), a rate limit, a stopped or
// ended request, or a transient failure of a store or an upstream: those
// are not the agent's to mend, and neither count nor let anything through.
func actionable(e *Error) bool {
	if e == nil {
		return false
	}
	switch e.Type {
	case TypeLoop, TypePermission, TypeCycle, TypeReentrancy, TypeBudget:
		return true
	case TypeApproval:
		return e.Code != "approval_pending"
	}
	return false
}

// RefusalCounter keeps each request's count of refusals in a row where
// every runtime that runs a part of the request, and the next life of one
// that restarts, counts on it (Options.RefusalCounter; the gateway's
// store, internal/store's Refusals). A runtime asks it on a refusal only:
// a call let through is noted in memory, and the next refusal counted
// here says so (reset). A store several runtimes share sets the count
// back itself when one of them lets a tool call through (the PostgreSQL
// store, in the admission's debit; Options.RefusalsShared): a runtime's
// own note of such a call would be stale, another may have counted
// refusals since. What no admission sees (a hand-off, a call answered
// from its record) sets the shared count back at once (letThrough,
// RefusalResetter).
type RefusalCounter interface {
	// NoteRefused adds one to request's count, after setting it back to
	// zero when reset is true, and returns the count after.
	NoteRefused(ctx context.Context, request string, reset bool) (int64, error)
}

// RefusalResetter is a RefusalCounter that sets a request's count back on
// its own: a runtime whose counter is shared (Options.RefusalsShared) asks
// it when it lets through a step the counter's admission did not debit (a
// hand-off, a call answered from its idempotency record).
type RefusalResetter interface {
	// ResetRefused sets request's count back to zero, if it is not.
	ResetRefused(ctx context.Context, request string) error
}

// noteRefusals keeps the count of c's agent's refusals in a row in c's
// request: a call let through to its tool (or answered from its record)
// sets it back to zero, an actionable refusal adds one, and the refusal
// that makes it reach the limit stops the request (cancel, with its
// subtree), as a spent wall clock does: its next model turn, tool call and
// hand-off are refused with the stop's text. It returns the stop's note
// for the call that made it, or "".
func (rt *Runtime) noteRefusals(c *Call, st State, e *Error) string {
	r := c.req
	switch {
	case c.ran || st == Completed:
		rt.letThrough(&c.detached, r, c.ran)
		return ""
	case st != Refused || !actionable(e):
		return ""
	}
	if stop := rt.countRefusal(&c.detached, r); stop != nil {
		return stop.Message
	}
	return ""
}

// letThrough sets r's count back: a tool call or a hand-off of its agent
// was let through; admitted says the call was admitted (its Middleware
// ran: on a shared counter, the admission's debit set the shared count
// back). On the path of every call let through: two atomic loads when
// nothing was refused, but for the step below. On a shared counter
// (Options.RefusalsShared), a step no admission debited (a hand-off, a call answered from its
// idempotency record) sets the shared count back itself: the runtime
// cannot know whether it is zero (another runtime may have counted
// refusals), so it asks the counter to set it back if it is not
// (RefusalResetter; one statement that writes nothing when it is zero: a
// store round trip on the path of such a step). Deferring it to this
// runtime's next refusal, as an unshared counter does, would let another
// runtime's refusals meanwhile count on the run before the step and stop
// the request early; it is deferred so only when the counter cannot set
// it back (no RefusalResetter, or the store failed).
func (rt *Runtime) letThrough(ctx context.Context, r *Request, admitted bool) {
	if r.refusedInARow.Load() != 0 {
		r.refusedInARow.Store(0)
	}
	ctr := rt.opts.RefusalCounter
	switch {
	case ctr == nil:
	case !rt.opts.RefusalsShared:
		if !r.letThrough.Load() {
			r.letThrough.Store(true)
		}
	case !admitted:
		rs, ok := ctr.(RefusalResetter)
		if ok {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err := rs.ResetRefused(cctx, r.id)
			cancel()
			if err == nil {
				return
			}
			rt.log.Warn("refusals in a row: the shared count could not be set back; it is at this runtime's next refusal", "request", r.id, "err", err)
		}
		// A counter that cannot set the count back on its own (or failed
		// to) sets it back at this runtime's next refusal (NoteRefused's
		// reset), as an unshared one does: late, but the step is not lost.
		if !r.letThrough.Load() {
			r.letThrough.Store(true)
		}
	}
}

// settleRefusals sets r's count on the counter back as r ends, if a step
// let through since its last refusal counted there is known to this
// runtime alone (letThrough: an unshared counter's, or a shared one's that
// could not set it back). The request begun again by its id (after a
// restart, on the store that kept the count) would otherwise count on
// from the run that step ended, and be stopped short of its limit. Asked
// only where the store may hold a count: this runtime counted a refusal of
// r there, or a client named r's id (an earlier life may have); never with
// the rule off, which counts nothing.
func (rt *Runtime) settleRefusals(r *Request) {
	if !r.letThrough.Load() || r.fresh && !r.counted.Load() || rt.refusedInARow() == 0 {
		return
	}
	rs, ok := rt.opts.RefusalCounter.(RefusalResetter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rs.ResetRefused(ctx, r.id); err != nil {
		rt.log.Warn("refusals in a row: the count could not be set back as the request ended; begun again by its id, it counts on", "request", r.id, "err", err)
		return
	}
	r.letThrough.Store(false)
}

// countRefusal adds an actionable refusal to r's count, on the counter if
// there is one (its count is the request's, across runtimes and lives; if
// it fails, this runtime's own count stands in), and stops r when the
// count reaches the limit: it returns the stop's refusal then, nil
// otherwise.
func (rt *Runtime) countRefusal(ctx context.Context, r *Request) *Error {
	limit := rt.refusedInARow()
	if limit == 0 {
		return nil
	}
	n := r.refusedInARow.Add(1)
	if ctr := rt.opts.RefusalCounter; ctr != nil {
		reset := r.letThrough.Swap(false)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		m, err := ctr.NoteRefused(cctx, r.id, reset)
		cancel()
		if err == nil {
			crashpoint.Reached("refused.noted") // a kill here: the refusal counted in the store, its caller not answered
			n = int32(min(m, 1<<30))
			if !r.counted.Load() {
				r.counted.Store(true)
			}
		} else {
			rt.log.Warn("refusals in a row: the shared count could not be kept; this process's stands in", "request", r.id, "err", err)
			if reset {
				r.letThrough.Store(true)
			}
		}
	}
	if n < limit {
		return nil
	}
	reason := fmt.Sprintf("the agent was refused %d times in a row and went on calling: the request is stopped; answer the user with what you have", limit)
	r.stop(Cause{Mode: Cancel, By: "reach", Reason: reason, At: time.Now(), Request: r.id})
	return (&StopError{Cause: *r.cause.Load()}).Refusal()
}

// noteFrameRefusal counts the refusal e of f, a model turn or a hand-off
// (refuseFrame), as noteRefusals counts a tool call's: an agent that goes
// on sending a model turn reach refused for a loop, a denial or a spent
// budget, or on handing off a task reach refused, ignores its refusals
// as one that calls a refused tool again. A model turn let through sets
// nothing back (turns come between the refused calls); a hand-off let
// through does (Delegate). It returns the stop's refusal when this one
// stopped the request, nil otherwise.
func (rt *Runtime) noteFrameRefusal(ctx context.Context, f *Frame, e *Error) *Error {
	if f.Request == nil || (f.Kind != ModelFrame && f.Kind != DelegateFrame) || !actionable(e) {
		return nil
	}
	return rt.countRefusal(ctx, f.Request)
}
