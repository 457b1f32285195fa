package reach

import (
	"context"
	"time"

	"github.com/agentreach/reach/internal/batch"
	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/deadletter"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
	"github.com/agentreach/reach/internal/idempotency"
	"github.com/agentreach/reach/internal/loops"
	"github.com/agentreach/reach/internal/ratelimit"
	"github.com/agentreach/reach/internal/records"
	"github.com/agentreach/reach/internal/retry"
	"github.com/agentreach/reach/internal/shape"
	"github.com/agentreach/reach/internal/toolspec"
)

// The types that package reach's rooms declare, by the names package reach
// gives them: one type each, documented in its room (see
// docs/ARCHITECTURE.md), named here, in one place.
type (
	// Error is the one shape of every refusal and failure (R10). The model
	// sees it through [Error.ModelText]; programs see its fields. It
	// matches [ErrRefused], [ErrCancelled], [ErrToolFailed],
	// [ErrUnavailable] or [ErrBudget] with errors.Is, according to its
	// Type.
	Error = fault.Error
	// FieldError is one invalid argument: where, what is wrong, how to fix it.
	FieldError = fault.FieldError
	// StopMode is how a request is stopped (C4).
	StopMode = fault.StopMode
	// Cause records why a request was stopped: who, why and when (C3).
	Cause = fault.Cause
	// StopError is the context cause of a stopped request: handlers that see
	// ctx.Done() find it with context.Cause.
	StopError = fault.StopError
	// InterruptedError refuses work under the id of a request that a restart
	// interrupted (see Runtime.RestoreInterrupted); it matches ErrRefused.
	InterruptedError = fault.InterruptedError

	// FrameKind says what a frame is.
	FrameKind = frames.Kind
	// State is where a call is on its path (R5).
	State = frames.State
	// FrameID identifies a frame. It is also the span id of the frame's
	// span in W3C trace context, written as 16 hex digits.
	FrameID = frames.ID
	// Status is the outcome of a call in the envelope (R3).
	Status = records.Status
	// Result is the outcome of one call (R3); see internal/records.
	Result = records.Result
	// Event is what the Recorder is told about a frame when it ends, or of a
	// stop or a breaker's change (see internal/records).
	Event = records.Event
	// Checkpoint is the durable record of one tool call (C5), written before
	// it executes and again when it ends (see internal/records).
	Checkpoint = records.Checkpoint
	// PastRequest is a request of an earlier run of the process, as a store
	// kept it (see internal/records): restored (Runtime.RestorePast, or
	// Options.History on a Lookup), it is listed and looked up like a request
	// of this run, but nothing runs in it any more.
	PastRequest = records.PastRequest
	// PastFrame is a frame of a PastRequest.
	PastFrame = records.PastFrame

	// Budget bounds one request (C2); see internal/budget. A zero field means
	// no limit in that dimension.
	Budget = budget.Budget
	// Usage is what a request (with its sub-requests) has spent.
	Usage = budget.Usage
	// Price is the cost of a model's tokens, per million.
	Price = budget.Price
	// TokenUsage is what one model call consumed (see internal/budget).
	TokenUsage = budget.TokenUsage
	// RateLimit configures token buckets (R8; see internal/ratelimit). A zero
	// rate means no limit.
	RateLimit = ratelimit.Limits
	// LoopOptions tune the loop detectors (L1-L3); see docs/LOOPS.md. A nil
	// *LoopOptions means the defaults.
	LoopOptions = loops.Options

	// Tool is one callable tool and its contract (R1; see
	// internal/toolspec). Only Name and Func are required; every zero
	// field has a default.
	Tool = toolspec.Tool
	// Access is a tool's access level (R1).
	Access = toolspec.Access
	// Reentrancy is a tool's reentrancy contract (G2): may the tool be
	// entered again while a call of it is on the stack? See
	// internal/callgraph.
	Reentrancy = callgraph.Reentrancy
	// Mode says what a guard does when its check fails (G3).
	Mode = callgraph.Mode
	// ToolFunc runs a tool (see internal/toolspec). The context carries
	// the call's frame: a ToolFunc that calls the model or other tools
	// through the runtime with this ctx nests them under its call.
	ToolFunc = toolspec.Func
	// Followup is a call reach makes on a tool's behalf: its undo, its
	// verify check, or the read that refreshes an entity before a write.
	Followup = toolspec.Followup
	// Verify is a check after a write (S2).
	Verify = toolspec.Verify
	// ToolError is a failure reported by a tool (see internal/retry). Type
	// is one of "timeout", "unavailable", "rate_limited" (transient: a
	// retry may succeed) or "invalid_args", "not_found", "forbidden",
	// "conflict" or any other word (permanent).
	ToolError = retry.ToolError
	// RetryPolicy says how a tool's transient failures are retried (R6).
	RetryPolicy = retry.Policy
	// Shape says how a tool's results are shaped for the model (R9).
	Shape = shape.Spec
	// Delegation describes a hand-off of a sub-task to another agent (C6; see
	// internal/callgraph).
	Delegation = callgraph.Delegation
	// Compensation reports one undo that ran.
	Compensation = effects.Compensation

	// BreakerPolicy configures a circuit breaker (see internal/breaker): a
	// zero field takes the runtime's default (Options.Breaker), and where
	// that is zero too, the default its comment states.
	BreakerPolicy = breaker.Policy
	// BreakerState is the state of a circuit breaker.
	BreakerState = breaker.State
	// BreakerStatus is a breaker as /healthz, /metrics and the UI show it.
	BreakerStatus = breaker.Status
	// BreakerChange is a breaker's change of state, as the Recorder is
	// told (Event.Breaker) and the audit log keeps it.
	BreakerChange = breaker.Change

	// RequestOptions describe a new request (see internal/records). Every
	// zero field has a default.
	RequestOptions = records.RequestOptions
	// RequestState is where a request is in its life (Request.State). Its
	// values are stable names, as the API, the UI and the audit log show them.
	RequestState = records.RequestState
	// Recorder receives an Event for every frame that ends, and stops (see
	// internal/records). It must be safe for concurrent use and fast.
	Recorder = records.Recorder
	// Keeper is an optional interface of a Recorder that stores events
	// durably (the audit log): it says whether it kept each one, and the
	// runtime lets a frame go from memory only once it did (see
	// internal/records).
	Keeper = records.Keeper
	// Receipt is told whether a Keeper kept an event (see internal/records).
	Receipt = records.Receipt
	// ReceiptFunc is a func as a Receipt.
	ReceiptFunc = records.ReceiptFunc
	// Checkpointer makes the call path durable: Executing before a call runs
	// (its error refuses the call), Ended when it ends (see internal/records).
	Checkpointer = records.Checkpointer
	// RequestJoiner is a RequestRecorder whose requests other runtimes may
	// run too: Begin joins a request of an id that another runtime runs (see
	// internal/records).
	RequestJoiner = records.RequestJoiner
	// JoinAbandoner is a RequestJoiner told when Begin refuses a request
	// it joined (see internal/records).
	JoinAbandoner = records.JoinAbandoner
	// Ancestor is a frame of a call's stack as another runtime needs it to
	// check a call placed under it (see internal/callgraph).
	Ancestor = callgraph.Ancestor
	// AncestorKind is an ancestor's FrameKind, written by name in JSON.
	AncestorKind = callgraph.AncestorKind
	// IdemClaim describes the call that claims an idempotency key.
	IdemClaim = idempotency.Claim
	// DeadLetterQueue keeps the dead letters: the compensations (undos) that
	// failed after their retries, waiting for an operator to retry or dismiss
	// them (S1). It is one queue (see internal/deadletter): the runtime adds an
	// undo that failed to it, and operators' actions take from and settle it
	// through the runtime (Runtime.RetryDeadLetter, Runtime.DismissDeadLetter)
	// or DismissDeadLetter, whatever asks: the HTTP API or the CLI. The
	// runtime's default keeps it in memory; internal/durable keeps it in a
	// store, across restarts. Implementations must be safe for concurrent use.
	DeadLetterQueue = deadletter.Queue
	// DeadLetter is a compensation that failed after its retries: it waits for
	// an operator to retry or dismiss it.
	DeadLetter = deadletter.Letter
	// DeadLetterState is where a dead letter is.
	DeadLetterState = deadletter.State

	// Breaker is a circuit breaker (closed, open, half-open) over the calls
	// to one thing: a tool, an upstream, a model endpoint (see
	// internal/breaker). Get one with Runtime.Breaker; the runtime keeps
	// those of its tools and upstreams itself. Safe for concurrent use.
	Breaker = breaker.Named[*Request]
	// Pass is one admission through a Breaker: report how the call went
	// with exactly one of Succeeded, Failed or Abandoned. The zero Pass (a
	// breaker that is off) reports nothing.
	Pass = breaker.Pass[*Request]
	// RequestRecorder (Options.Requests) is told when a request begins, is
	// stopped and ends, and may refuse one (see internal/records).
	RequestRecorder = records.RequestRecorder[*Request]
	// IdempotencyStore records call results by idempotency key (R7; see
	// internal/idempotency). The runtime claims a key before a call runs and
	// completes it after.
	IdempotencyStore = idempotency.Store[*Result]
	// MemoryIdempotency is an in-memory IdempotencyStore whose records expire
	// after a TTL. Safe for concurrent use.
	MemoryIdempotency = idempotency.MemoryStore[*Result]
	// RequestObserver is an optional interface of a Recorder: it is told when
	// a request (or a sub-request) begins and when it ends (Request.End).
	RequestObserver = records.Observer[*Request]
	// tool is a registered, compiled Tool, with its breakers.
	tool = toolspec.Compiled[*Request]
)

// The values of those types, by the names package reach gives them.
const (
	// Kinds of breakers the runtime keeps.
	BreakerTool     = "tool"     // one per tool
	BreakerUpstream = "upstream" // one per upstream (Tool.Upstream), shared by its tools

	// Error types: the broad class of a refusal or failure (see internal/fault).
	TypeNotFound    = fault.TypeNotFound
	TypeInvalidArgs = fault.TypeInvalidArgs
	TypeCycle       = fault.TypeCycle
	TypeReentrancy  = fault.TypeReentrancy
	TypeLoop        = fault.TypeLoop
	TypeBudget      = fault.TypeBudget
	TypeStopped     = fault.TypeStopped
	TypePermission  = fault.TypePermission
	TypeApproval    = fault.TypeApproval
	TypeRateLimit   = fault.TypeRateLimit
	TypeState       = fault.TypeState
	TypeTransient   = fault.TypeTransient
	TypeUnavailable = fault.TypeUnavailable
	TypeInterrupted = fault.TypeInterrupted
	TypeTool        = fault.TypeTool

	// Frame kinds.
	ToolFrame     = frames.Tool
	ModelFrame    = frames.Model
	DelegateFrame = frames.Delegate

	// States, in path order.
	Selected         = frames.Selected
	Validating       = frames.Validating
	Authorizing      = frames.Authorizing
	AwaitingApproval = frames.AwaitingApproval
	Executing        = frames.Executing
	Completed        = frames.Completed
	Failed           = frames.Failed
	Refused          = frames.Refused
	Cancelled        = frames.Cancelled

	// Default breaker settings (see BreakerPolicy).
	DefaultBreakerFailures = breaker.DefaultFailures
	DefaultBreakerRate     = breaker.DefaultRate
	DefaultBreakerWindow   = breaker.DefaultWindow
	DefaultBreakerMinCalls = breaker.DefaultMinCalls
	DefaultBreakerOpenFor  = breaker.DefaultOpenFor

	// Breaker states.
	BreakerClosed   = breaker.Closed   // lets every call through and counts their failures
	BreakerOpen     = breaker.Open     // fails every call at once until its probe interval ends
	BreakerHalfOpen = breaker.HalfOpen // lets one call through to probe

	// Access levels.
	Read      = toolspec.Read
	Write     = toolspec.Write
	HighRisk  = toolspec.HighRisk
	Forbidden = toolspec.Forbidden

	// Reentrancy contracts.
	NonReentrant = callgraph.NonReentrant // may not be re-entered at all (the default)
	Reentrant    = callgraph.Reentrant    // may be re-entered, but not with an ancestor's arguments (a cycle)
	Keyed        = callgraph.Keyed        // may be re-entered with other values of the Key fields only

	// Modes.
	Refuse = callgraph.Refuse // the default: the call is refused
	Warn   = callgraph.Warn   // the call runs; the violation is recorded and noted to the model
	Allow  = callgraph.Allow  // the check is off

	// Limits on a decoded envelope.
	MaxEnvelopeBytes = batch.MaxEnvelopeBytes
	MaxBatchCalls    = batch.MaxCalls

	// Statuses.
	StatusSuccess   = records.StatusSuccess
	StatusError     = records.StatusError     // the tool ran and failed
	StatusPending   = records.StatusPending   // waiting for approval
	StatusRefused   = records.StatusRefused   // a guard refused it
	StatusCancelled = records.StatusCancelled // stopped, cancelled or out of time

	// The states of a dead letter.
	DeadLetterOpen     = deadletter.Open     // waiting for an operator
	DeadLetterTaken    = deadletter.Taken    // an operator's action holds it
	DeadLetterRetried  = deadletter.Retried  // its undo ran again and succeeded
	DeadLetterResolved = deadletter.Resolved // an operator settled it by hand

	// Stop modes, in increasing force (see internal/fault).
	Running = fault.Running
	Soft    = fault.Soft    // starts nothing new; calls in flight finish and their results are kept
	Cancel  = fault.Cancel  // cancels the contexts of calls in flight and starts nothing new
	Isolate = fault.Isolate // Cancel, and every later call or late result is refused at once

	// The states of a request.
	RequestRunning        = records.RequestRunning
	RequestStoppedSoft    = records.RequestStoppedSoft    // stopped: what is in flight finishes
	RequestStoppedCancel  = records.RequestStoppedCancel  // stopped: what is in flight is cancelled
	RequestStoppedIsolate = records.RequestStoppedIsolate // stopped: late results are refused too
	RequestCompleted      = records.RequestCompleted      // ended
	RequestInterrupted    = records.RequestInterrupted    // a restart cut it off (see RestoreInterrupted)
)

// Sentinels matched by errors.Is against an *Error of the matching Type.
var (
	ErrRefused     = fault.ErrRefused     // every refusal by a guard (cycles, budgets, policy, ...)
	ErrCancelled   = fault.ErrCancelled   // calls cut short by a stop, a cancel or a deadline
	ErrToolFailed  = fault.ErrToolFailed  // calls whose tool ran and failed
	ErrBudget      = fault.ErrBudget      // refusals and stops caused by an exhausted budget
	ErrUnavailable = fault.ErrUnavailable // calls a circuit breaker failed at once (type unavailable)

	// Errors of a DeadLetterQueue's Take.
	ErrDeadLetterBusy = deadletter.ErrBusy
	ErrNoDeadLetter   = deadletter.ErrNone
	ErrDeadLetterID   = deadletter.ErrID

	// ErrIdempotencyKeyReused is returned by IdempotencyStore.Claim for a key
	// that was used for a call with other arguments.
	ErrIdempotencyKeyReused = idempotency.ErrReused
)

// ParseFrameID reads 16 hex digits.
func ParseFrameID(s string) (FrameID, error) { return frames.Parse(s) }

// Func adapts a typed function to a ToolFunc: arguments are decoded into In
// and the Out value encoded as JSON.
func Func[In, Out any](f func(ctx context.Context, in In) (Out, error)) ToolFunc {
	return toolspec.Typed(f)
}

// TransientType reports whether a tool error type is transient.
func TransientType(t string) bool { return retry.TransientType(t) }

// NewMemoryIdempotency returns a store keeping results for ttl.
func NewMemoryIdempotency(ttl time.Duration) *MemoryIdempotency {
	return idempotency.NewMemoryStore[*Result](ttl)
}

// NewMemoryDeadLetters returns a queue in memory: the runtime's default.
// It keeps the open and taken dead letters; settled ones leave it.
func NewMemoryDeadLetters() DeadLetterQueue { return deadletter.NewMemory() }

// DismissDeadLetter resolves the dead letter id of q, as
// Runtime.DismissDeadLetter does, for when no runtime runs (the CLI on a
// data folder).
func DismissDeadLetter(ctx context.Context, q DeadLetterQueue, id, by, note string) (*DeadLetter, error) {
	return deadletter.Dismiss(ctx, q, id, by, note)
}
