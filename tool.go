package reach

import (
	"context"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/retry"
	"github.com/agentreach/reach/internal/shape"
	"github.com/agentreach/reach/internal/toolspec"
)

// Access is a tool's access level (R1; see internal/toolspec).
type Access = toolspec.Access

// Access levels.
const (
	Read      = toolspec.Read
	Write     = toolspec.Write
	HighRisk  = toolspec.HighRisk
	Forbidden = toolspec.Forbidden
)

// Reentrancy is a tool's reentrancy contract (G2): may the tool be entered
// again while a call of it is on the stack? See internal/callgraph.
type Reentrancy = callgraph.Reentrancy

// Reentrancy contracts.
const (
	NonReentrant = callgraph.NonReentrant // may not be re-entered at all (the default)
	Reentrant    = callgraph.Reentrant    // may be re-entered, but not with an ancestor's arguments (a cycle)
	Keyed        = callgraph.Keyed        // may be re-entered with other values of the Key fields only
)

// Mode says what a guard does when its check fails (G3).
type Mode = callgraph.Mode

// Modes.
const (
	Refuse = callgraph.Refuse // the default: the call is refused
	Warn   = callgraph.Warn   // the call runs; the violation is recorded and noted to the model
	Allow  = callgraph.Allow  // the check is off
)

// ToolFunc runs a tool (see internal/toolspec). The context carries the
// call's frame: a ToolFunc that calls the model or other tools through
// the runtime with this ctx nests them under its call.
type ToolFunc = toolspec.Func

// Func adapts a typed function to a ToolFunc: arguments are decoded into In
// and the Out value encoded as JSON.
func Func[In, Out any](f func(ctx context.Context, in In) (Out, error)) ToolFunc {
	return toolspec.Typed(f)
}

// Followup is a call reach makes on a tool's behalf: its undo, its verify
// check, or the read that refreshes an entity before a write (see
// internal/toolspec).
type Followup = toolspec.Followup

// Verify is a check after a write (S2; see internal/toolspec).
type Verify = toolspec.Verify

// ToolError is a failure reported by a tool (see internal/retry). Type is
// one of "timeout", "unavailable", "rate_limited" (transient: a retry may
// succeed) or "invalid_args", "not_found", "forbidden", "conflict" or any
// other word (permanent).
type ToolError = retry.ToolError

// TransientType reports whether a tool error type is transient.
func TransientType(t string) bool { return retry.TransientType(t) }

// RetryPolicy says how a tool's transient failures are retried (R6).
type RetryPolicy = retry.Policy

// Shape says how a tool's results are shaped for the model (R9).
type Shape = shape.Spec

// Tool is one callable tool and its contract (R1; see internal/toolspec).
// Only Name and Func are required; every zero field has a default.
type Tool = toolspec.Tool

// tool is a registered, compiled Tool, with its breakers.
type tool = toolspec.Compiled[*Request]
