package reach

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/callgraph"
)

// Frame is one node of a request's call graph (G1): a tool call, a model
// call or a delegation, with its parent. The stack of a frame is its chain of
// parents, across sub-requests. Exported fields are set when the frame is
// made and never change; the rest is read through methods. Safe for
// concurrent use.
type Frame struct {
	ID      FrameID
	Kind    FrameKind
	Name    string          // tool name, model name, or receiving agent
	Args    json.RawMessage // tool calls: canonical arguments; delegations: the task as a JSON string; unmasked: views show ShownArgs
	CallID  string          // the caller's id for the call, if any
	Agent   string
	Parent  *Frame
	Request *Request
	Depth   int // tool calls on the stack including this one
	Started time.Time

	mark callgraph.Mark // the graph check's hashes of the call and of its stack

	state atomic.Int32
	turn  atomic.Bool // a model frame BeginModel counted in flight, until it ends (turnOver): Runtime.Drain waits for it
	// counted is set on a model frame whose turn BeginModel counted on the
	// turns budget, until Unanswered gives it back.
	counted atomic.Bool
	idem    string // the idempotency key it runs under; set before it runs
	step    any    // the loop guard's record of a model frame or delegation

	mu      sync.Mutex
	ended   time.Time
	err     *Error
	tokens  int64
	usage   TokenUsage // model frames: as reported (Text left out), with the cost charged
	why     string
	summary string
	text    string          // model frames: what the model said
	result  json.RawMessage // tool frames: the data returned to the model
	warn    []string
	cycleTo *Frame  // the ancestor a refused cycle or re-entry would have re-entered
	remote  [8]byte // a top frame's parent span in another process (WithRemoteParent)
	route   string  // model frames: the HTTP route it was served at (WithRoute)

	sub atomic.Pointer[Request] // delegate frames: the sub-request they started

	upstream string      // tool frames: the upstream of the tool the call was dispatched to (Tool.Upstream)
	recorded atomic.Bool // a tool frame whose last event is stored (the Recorder kept it, or took it if it is no Keeper): Options.StoredFrames
	lost     atomic.Bool // an event of the frame the Recorder (a Keeper) did not keep: the frame stays in memory
	replayed atomic.Bool // a tool frame answered from the idempotency record of an earlier run: its tool did not run again (Event.Replayed)
}

// keptEvent and keptLast are a frame as the Recorder (a Keeper) tells it
// whether it kept one of its events (Runtime.record), keptLast its last:
// the frame itself, so that no closure is made for each event.
type (
	keptEvent Frame
	keptLast  Frame
)

func (k *keptEvent) Kept(ok bool) { (*Frame)(k).kept(ok, false) }
func (k *keptLast) Kept(ok bool)  { (*Frame)(k).kept(ok, true) }

// kept notes whether an event of f was kept (last: its last event): a
// frame with an event lost stays in memory, and its request counts the
// loss; one whose last event was kept, with none lost, may be let go.
func (f *Frame) kept(ok, last bool) {
	switch {
	case !ok:
		f.lost.Store(true)
		f.Request.auditLost.Add(1)
	case last && !f.lost.Load():
		f.recorded.Store(true)
	}
}

// AuditLost reports whether an event of the frame was lost: the Recorder
// (a Keeper, such as the audit log) dropped it (its queue was full) or
// failed to store it. The frame is then never let go from memory
// (Options.StoredFrames): views show it from memory, though the log lacks
// its event.
func (f *Frame) AuditLost() bool { return f.lost.Load() }

// SubRequest returns the sub-request a delegate frame started, or nil (a
// tool or model frame, or a refused hand-off).
func (f *Frame) SubRequest() *Request { return f.sub.Load() }

// State returns the frame's state.
func (f *Frame) State() State { return State(f.state.Load()) }

func (f *Frame) setState(s State) { f.state.Store(int32(s)) }

// Ended returns when the frame ended, or the zero time.
func (f *Frame) Ended() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.ended }

// Err returns the frame's refusal or failure, its texts masked, or nil.
func (f *Frame) Err() *Error { f.mu.Lock(); defer f.mu.Unlock(); return f.err }

// Usage returns what a model frame consumed: input and output tokens (as
// charged), the cost charged, and the model that answered if it said so
// (its Text is left empty).
func (f *Frame) Usage() TokenUsage { f.mu.Lock(); defer f.mu.Unlock(); return f.usage }

// Tokens returns a model frame's tokens.
func (f *Frame) Tokens() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.tokens }

// Why returns the reason the caller gave for the call, masked, if any.
func (f *Frame) Why() string { f.mu.Lock(); defer f.mu.Unlock(); return f.why }

// Summary returns a one-line summary of the frame's result, masked.
func (f *Frame) Summary() string { f.mu.Lock(); defer f.mu.Unlock(); return f.summary }

// SetSummary replaces the frame's one-line summary, masked: what the graph
// and the UI show of it (an A2A hand-off's task and its state, say). Frames
// that end later set their own.
func (f *Frame) SetSummary(s string) {
	if f.Request != nil {
		s = f.Request.rt.opts.Redactor.RedactString(s)
	}
	f.mu.Lock()
	f.summary = oneLine(s, 160)
	f.mu.Unlock()
}

// SetWhy records the reason the frame's caller gives for it, masked: what
// the audit log and the graph show as its why. The model proxy records so
// what it changed in a model turn's prompt (the tool results it folded).
func (f *Frame) SetWhy(s string) {
	if f.Request != nil {
		s = f.Request.rt.opts.Redactor.RedactString(s)
	}
	f.mu.Lock()
	f.why = s
	f.mu.Unlock()
}

// Text returns what the model said, masked, for a model frame that
// recorded it.
func (f *Frame) Text() string { f.mu.Lock(); defer f.mu.Unlock(); return f.text }

// Result returns the data a successful tool call returned to the model.
func (f *Frame) Result() json.RawMessage { f.mu.Lock(); defer f.mu.Unlock(); return f.result }

// Warnings returns violations that were let through in warn mode, masked.
func (f *Frame) Warnings() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.warn...)
}

// CycleTo returns the ancestor that a refused cycle or re-entry targeted.
func (f *Frame) CycleTo() *Frame { f.mu.Lock(); defer f.mu.Unlock(); return f.cycleTo }

// finish ends the frame in state s with the error e, which it keeps
// masked, and the summary, which must be masked already.
func (f *Frame) finish(s State, e *Error, summary string) {
	if e != nil && f.Request != nil {
		e = f.Request.rt.redactError(e)
	}
	f.mu.Lock()
	f.ended = time.Now()
	f.err = e
	if summary != "" {
		f.summary = summary
	}
	f.setState(s) // with its error, as one step against SettleAwaiting
	f.mu.Unlock()
}

// Stack returns the frame's ancestors, nearest first.
func (f *Frame) Stack() []*Frame {
	var s []*Frame
	for a := f.Parent; a != nil; a = a.Parent {
		s = append(s, a)
	}
	return s
}

// isTurn reports whether a model frame with this parent is a turn of its
// request's agent loop (not a model call nested in a tool).
func isTurn(parent *Frame) bool { return parent == nil || parent.Kind == DelegateFrame }

// posKey holds where a new frame goes: a *Frame (its request is
// Frame.Request), or a *Request at its top (under its delegate frame, for a
// sub-request). One key, so the nearest value wins.
type posKey struct{}

// position is what a context says about where a new frame goes.
func position(ctx context.Context) (*Request, *Frame) {
	switch v := ctx.Value(posKey{}).(type) {
	case *Frame:
		return v.Request, v
	case *Request:
		return v, v.delegate
	}
	return nil, nil
}

// FrameFrom returns the frame a context runs in: inside a tool's Func, the
// tool call's frame.
func FrameFrom(ctx context.Context) (*Frame, bool) {
	f, ok := ctx.Value(posKey{}).(*Frame)
	return f, ok
}

// RequestFrom returns the request a context belongs to.
func RequestFrom(ctx context.Context) (*Request, bool) {
	r, _ := position(ctx)
	return r, r != nil
}

// WithParent returns ctx with f as the frame new frames nest under: a call
// made with it becomes f's child. It is how a call that arrives from
// another process (with the frame id in a Reach-Parent header, a W3C
// traceparent or MCP _meta) joins the stack of the call that caused it.
// Under a delegate frame, the new frames belong to the sub-request it
// started (see [Frame.SubRequest]): the delegated agent's work, counted
// against its carved budget. ctx should carry the context of the request
// the frames belong to (or one derived from it), so that stopping the
// request reaches the new call.
func WithParent(ctx context.Context, f *Frame) context.Context {
	if s := f.sub.Load(); s != nil {
		return context.WithValue(ctx, posKey{}, s)
	}
	return withFrame(ctx, f)
}

type remoteKey struct{}

type remoteSpan struct {
	trace [16]byte
	span  [8]byte
}

// WithRemoteParent returns ctx with the W3C trace and span ids of the
// caller's span in another process (another tracer's traceparent, not a
// frame of ours): a frame made with it at the top of its request, when
// the request is in that trace (see RequestOptions.Trace), is that span's
// child in the trace (Event.RemoteParent). A frame with a parent frame, or
// of a request in another trace, ignores it.
func WithRemoteParent(ctx context.Context, trace [16]byte, span [8]byte) context.Context {
	return context.WithValue(ctx, remoteKey{}, remoteSpan{trace, span})
}

type routeKey struct{}

// WithRoute returns ctx naming the HTTP route (such as "/v1/responses")
// that a model frame begun with it was served at: its served span
// (Event.Route) is named by it. Without one, a model frame's route is
// chat completions'.
func WithRoute(ctx context.Context, route string) context.Context {
	return context.WithValue(ctx, routeKey{}, route)
}

// routeFrom returns the route WithRoute put in ctx, or "".
func routeFrom(ctx context.Context) string {
	r, _ := ctx.Value(routeKey{}).(string)
	return r
}

// remoteParent returns the remote parent span that ctx names for a top
// frame of r, or zero.
func remoteParent(ctx context.Context, r *Request) [8]byte {
	if v, ok := ctx.Value(remoteKey{}).(remoteSpan); ok && v.trace == r.root.trace {
		return v.span
	}
	return [8]byte{}
}

func withFrame(ctx context.Context, f *Frame) context.Context {
	return context.WithValue(ctx, posKey{}, f)
}

type idemKey struct{}

// IdempotencyKey returns the idempotency key of the call a tool's Func runs
// for, if it has one (writes always do). Pass it to the system you write to.
func IdempotencyKey(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(idemKey{}).(*string)
	if !ok {
		return "", false
	}
	return *k, true
}

// SettleAwaiting ends the frame id of r (or of one of its sub-requests)
// that was answered pending, still awaiting_approval, in state s with the
// error e and the summary (masked here): what became of its approval once
// it was decided, expired or used by the call repeated. It reports whether
// such a frame was found and ended; a frame in any other state (one that
// went on after its wait, say) is left as it is.
//
// An expiry (s Cancelled) of the approval of a frame whose request, or one
// above it, is stopped ends the frame with the stop's refusal instead, as
// the call's own answer does (stoppedWaiting): the stop expires the
// approvals it leaves, and the frame says it was stopped, whether the
// expiry or the answer of the call still waiting comes first. The frame
// is taken and written as one step under its lock, as finish writes it:
// before, an expiry that took the frame before the call's answer wrote its
// error after the answer's, and the frame said approval_expired.
func (r *Request) SettleAwaiting(id FrameID, s State, e *Error, summary string) bool {
	f, ok := r.Frame(id)
	for q := r; !ok; {
		// A request named again shows the runs before it under its id
		// (Frames): a call answered pending in one of them waits there
		// (those only in the store are read back settled).
		prev := q.earlier.Load()
		if prev == nil || prev.req == nil {
			break
		}
		q = prev.req
		f, ok = q.Frame(id)
	}
	if !ok || !s.Done() || f.State() != AwaitingApproval {
		return false
	}
	if s == Cancelled {
		if stop := stoppedWaiting(f.Request); stop != nil {
			e, summary = stop, "" // the summary as the call's answer leaves it
		}
	}
	if e != nil {
		e = r.rt.redactError(e)
	}
	if summary != "" {
		summary = oneLine(r.rt.opts.Redactor.RedactString(summary), 160)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.state.CompareAndSwap(int32(AwaitingApproval), int32(s)) {
		return false // the call's answer came meanwhile
	}
	f.ended = time.Now()
	f.err = e
	if summary != "" {
		f.summary = summary
	}
	return true
}
