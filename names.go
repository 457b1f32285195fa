package reach

import (
	"context"

	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
	"github.com/agentreach/reach/internal/retry"
	"github.com/agentreach/reach/internal/shape"
	"github.com/agentreach/reach/internal/toolspec"
)

// The types of the call path that its rooms declare, by the names package
// reach gives them: one type each, documented in its room (see
// docs/ARCHITECTURE.md).
type (
	// Error is the one shape of every refusal and failure (R10). The model
	// sees it through [Error.ModelText]; programs see its fields. It
	// matches [ErrRefused], [ErrCancelled], [ErrToolFailed],
	// [ErrUnavailable] or [ErrBudget] with errors.Is, according to its
	// Type.
	Error = fault.Error
	// FieldError is one invalid argument: where, what is wrong, how to fix it.
	FieldError = fault.FieldError

	// FrameKind says what a frame is.
	FrameKind = frames.Kind
	// State is where a call is on its path (R5).
	State = frames.State
	// FrameID identifies a frame. It is also the span id of the frame's
	// span in W3C trace context, written as 16 hex digits.
	FrameID = frames.ID

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

	// Breaker is a circuit breaker (closed, open, half-open) over the calls
	// to one thing: a tool, an upstream, a model endpoint (see
	// internal/breaker). Get one with Runtime.Breaker; the runtime keeps
	// those of its tools and upstreams itself. Safe for concurrent use.
	Breaker = breaker.Named[*Request]
	// Pass is one admission through a Breaker: report how the call went
	// with exactly one of Succeeded, Failed or Abandoned. The zero Pass (a
	// breaker that is off) reports nothing.
	Pass = breaker.Pass[*Request]
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
)

// Sentinels matched by errors.Is against an *Error of the matching Type.
var (
	ErrRefused     = fault.ErrRefused     // every refusal by a guard (cycles, budgets, policy, ...)
	ErrCancelled   = fault.ErrCancelled   // calls cut short by a stop, a cancel or a deadline
	ErrToolFailed  = fault.ErrToolFailed  // calls whose tool ran and failed
	ErrBudget      = fault.ErrBudget      // refusals and stops caused by an exhausted budget
	ErrUnavailable = fault.ErrUnavailable // calls a circuit breaker failed at once (type unavailable)
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
