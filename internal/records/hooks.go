package records

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/fault"
)

// What the runtime tells the parts that keep its records, as interfaces
// generic over its request R (*reach.Request): package reach names them
// (reach.Recorder, reach.RequestRecorder, ...).

// Recorder receives an Event for every frame that ends, and stops. It must
// be safe for concurrent use and fast (queue, don't block).
type Recorder interface {
	Record(ctx context.Context, e *Event)
}

// Keeper is an optional interface of a Recorder that keeps events
// durably (an audit log): Keep records e as Record does, and tells kept
// once, true once e is durably stored, or false once it never will be
// (dropped because its queue was full or it was closed, or lost to a
// failed write). kept must be fast and must not block: it may be told
// from Keep itself or from the keeper's writer.
type Keeper interface {
	Keep(ctx context.Context, e *Event, kept Receipt)
}

// Receipt is told whether a Keeper kept an event. It is an interface, not
// a func, so that the runtime tells a frame itself, with no closure made
// for each event.
type Receipt interface {
	Kept(ok bool)
}

// ReceiptFunc is a func as a Receipt.
type ReceiptFunc func(ok bool)

// Kept calls f.
func (f ReceiptFunc) Kept(ok bool) { f(ok) }

// Observer is an optional interface of a Recorder: it is told when a
// request (or a sub-request) begins and when it ends, for spans or gauges
// of requests. Its methods must be fast and must not call back into the
// runtime's request methods that block.
type Observer[R any] interface {
	RequestBegan(ctx context.Context, r R)
	RequestEnded(ctx context.Context, r R)
}

// Fan returns a Recorder that fans events out to rs, in order, and the
// news of requests to those of them that are Observers.
func Fan[R any](rs ...Recorder) Recorder { return fan[R](rs) }

type fan[R any] []Recorder

func (m fan[R]) Record(ctx context.Context, e *Event) {
	for _, r := range m {
		r.Record(ctx, e)
	}
}

// Keep records e to every Recorder of m, and tells kept once every Keeper
// among them reported: true when each kept e (and at once when none of
// them is a Keeper), false when one did not. With one Keeper (the audit
// log, as served), that one tells kept itself: nothing is made for e.
func (m fan[R]) Keep(ctx context.Context, e *Event, kept Receipt) {
	n := 0
	for _, r := range m {
		if _, ok := r.(Keeper); ok {
			n++
		}
	}
	one := kept
	switch n {
	case 0:
		m.Record(ctx, e)
		kept.Kept(true)
		return
	case 1:
	default:
		j := &keptByAll{kept: kept}
		j.left.Store(int32(n))
		one = j
	}
	for _, r := range m {
		if k, ok := r.(Keeper); ok {
			k.Keep(ctx, e, one)
		} else {
			r.Record(ctx, e)
		}
	}
}

// keptByAll tells kept, once each of left Keepers told it, whether all of
// them kept the event.
type keptByAll struct {
	left atomic.Int32
	lost atomic.Bool
	kept Receipt
}

func (j *keptByAll) Kept(ok bool) {
	if !ok {
		j.lost.Store(true)
	}
	if j.left.Add(-1) == 0 {
		j.kept.Kept(!j.lost.Load())
	}
}

func (m fan[R]) RequestBegan(ctx context.Context, r R) {
	for _, rec := range m {
		if o, ok := rec.(Observer[R]); ok {
			o.RequestBegan(ctx, r)
		}
	}
}

func (m fan[R]) RequestEnded(ctx context.Context, r R) {
	for _, rec := range m {
		if o, ok := rec.(Observer[R]); ok {
			o.RequestEnded(ctx, r)
		}
	}
}

// Checkpointer makes the call path durable. Executing is called before a
// call runs and must return only once the record is durable; an error
// refuses the call (nothing runs). Ended is called when it ends.
type Checkpointer interface {
	Executing(ctx context.Context, c *Checkpoint) error
	Ended(ctx context.Context, c *Checkpoint)
}

// RequestRecorder is told when a request begins, is stopped and ends, so
// that a restart knows which requests were still running and which were
// stopped. RequestBegan may refuse the request: Begin (or Delegate) then
// fails with its error, and an *InterruptedError or a *StopError becomes a
// structured refusal. A store refuses the id of a request that a restart
// interrupted, or that was stopped, so that no new work runs under it.
// RequestStopped is called once the stop is in force (Request.Stop returns
// after it): a store makes the stop durable there.
type RequestRecorder[R any] interface {
	RequestBegan(ctx context.Context, r R) error
	RequestStopped(ctx context.Context, r R, c fault.Cause)
	RequestEnded(ctx context.Context, r R)
}

// RequestJoiner is a RequestRecorder whose requests other runtimes may run
// too. Begin asks it, for a root request, before the request is made:
// JoinRequest records the request as begun, or, when another runtime runs
// a request of that id, sets o to that request as it was begun (its
// principal, tenant, roles, attributes, agent, scene, budget and trace) and
// returns when it began, so that both count one budget and one wall clock.
// An error refuses the Begin, as RequestBegan's does (an *InterruptedError
// or a *StopError for an id that starts no new work). RequestBegan is still
// called once the request is made.
type RequestJoiner interface {
	JoinRequest(ctx context.Context, o *RequestOptions) (began time.Time, err error)
}

// JoinAbandoner is a RequestJoiner told when Begin refuses a request after
// JoinRequest took it (a request of that id is running here, or one of an
// earlier run stays stopped): RequestBegan is then not called, and what
// the join wrote is its to undo.
type JoinAbandoner interface {
	JoinAbandoned(id string)
}

// RequestOptions describe a new request. Every zero field has a default.
type RequestOptions struct {
	ID        string         // if empty, a new random id
	Principal string         // who the request acts for; if empty, "anonymous"
	Scene     string         // the conversation's scene (e.g. "chitchat"), for policies
	Agent     string         // the agent making the calls (control and format characters dropped, at most 128 bytes); if empty, "main"
	Budget    *budget.Budget // if nil, the runtime's DefaultBudget
	// Roles, Tenant and Attributes describe the principal for policies.
	Roles      []string
	Tenant     string
	Attributes map[string]string
	// Priority above 0 may use the rate limit's reserved capacity (R8).
	Priority int
	// Trace is the W3C trace id of a root request that continues a
	// caller's trace (its traceparent's); if zero, a random one. A
	// sub-request is in its root's trace.
	Trace [16]byte
	// Carried is set by a RequestJoiner that joins a run another runtime
	// began of a request named again: what its earlier runs spent, its
	// wall clock too, as the shared store keeps it. The part begun here
	// counts on from it, as the runtime that began the run counts on from
	// the earlier runs it looked up. Callers leave it nil.
	Carried *budget.Usage
}
