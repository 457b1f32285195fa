package reach

import (
	"context"
	"sync/atomic"

	"github.com/agentreach/reach/internal/fault"
)

// A gateway that stops gives the calls in flight a grace, then ends its
// requests (their calls cancelled) and closes its store. A call still
// running then (a tool deaf to its cancellation, a handler that goes on
// calling) wrote its end, its audit events and its cut-off record into a
// store that was closing or closed: an error, an event lost, or a write
// whose claim raced the close. Drain orders that: from it on the runtime
// admits no new call from a client and no new model turn (refused
// shutting_down, nothing run: a retry goes to another instance, or to this
// one once it is back), and it waits for the tool calls and the model
// turns in flight to return, so that the store is closed once nothing
// writes to it. A model turn is counted from BeginModel until its end is
// recorded (EndModel, FailModel, RefuseModel), as a call is, on the same
// counter: before, a turn answered while the gateway stopped wrote its end
// into a closing store, and its frame and audit event were lost
// (TestDrainWaitsForModelTurns). An undo (a system call: a stop's
// compensation, which the stop's end waits for) is still let through and
// waited for: refused, it would be dead-lettered, worse than what a kill
// leaves (its recovery runs it).

// calls counts the calls and the model turns in flight for Drain.
type calls struct {
	n       atomic.Int64
	closing atomic.Bool
	idle    chan struct{} // a token when n reached 0 while closing
}

// enter counts a call in; false (and nothing counted) when the runtime
// drains and the call is not a system call.
func (k *calls) enter(sys bool) bool {
	k.n.Add(1)
	if k.closing.Load() && !sys {
		k.exit()
		return false
	}
	return true
}

// exit counts a call out.
func (k *calls) exit() {
	if k.n.Add(-1) == 0 && k.closing.Load() {
		select {
		case k.idle <- struct{}{}:
		default:
		}
	}
}

// Drain makes the runtime refuse every new call from a client and every
// new model turn (shutting_down) and waits, until ctx ends, for the calls
// and the turns in flight to end. It returns how many still run then:
// their ends are not recorded by this life, and the next start finds them
// as a kill leaves them (docs/STATE.md). Drain again waits again; Drain
// with a ctx ended refuses from then on and waits for nothing.
func (rt *Runtime) Drain(ctx context.Context) int {
	k := &rt.calls
	k.closing.Store(true)
	for {
		n := k.n.Load()
		if n <= 0 {
			return 0
		}
		select {
		case <-k.idle:
		case <-ctx.Done():
			return int(k.n.Load())
		}
	}
}

// Draining reports whether Drain was called: new calls are refused.
func (rt *Runtime) Draining() bool { return rt.calls.closing.Load() }

// shuttingDown is the refusal of a call that came once the runtime drains.
func shuttingDown() *Error {
	return &fault.Error{Guard: "admit", Type: fault.TypeTransient, Code: "shutting_down",
		Message:    "The gateway is shutting down and takes no more calls. Nothing ran.",
		Suggestion: "Call again in a moment: through another instance of the gateway, or this one once it is back; the call did not run, so it is safe to repeat."}
}
