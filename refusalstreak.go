package reach

import (
	"fmt"
	"time"
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
		if r.refusedInARow.Load() != 0 {
			r.refusedInARow.Store(0)
		}
		return ""
	case st != Refused || !actionable(e):
		return ""
	}
	limit := rt.refusedInARow()
	if limit == 0 {
		return ""
	}
	if n := r.refusedInARow.Add(1); n != limit {
		return ""
	}
	reason := fmt.Sprintf("the agent was refused %d times in a row and went on calling: the request is stopped; answer the user with what you have", limit)
	r.stop(Cause{Mode: Cancel, By: "reach", Reason: reason, At: time.Now(), Request: r.id})
	return (&StopError{Cause: *r.cause.Load()}).Refusal().Message
}
