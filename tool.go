package reach

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/retry"
	"github.com/agentreach/reach/internal/schema"
	"github.com/agentreach/reach/internal/shape"
)

// Access is a tool's access level (R1). It decides the default policy: reads
// run, writes run (and retry only under an idempotency key), high-risk calls
// need approval, forbidden calls never run.
type Access string

// Access levels.
const (
	Read      Access = "read"
	Write     Access = "write"
	HighRisk  Access = "high_risk"
	Forbidden Access = "forbidden"
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

// ToolFunc runs a tool. args are the validated arguments as canonical JSON.
// It returns the result as JSON, or an error: a *ToolError says how it
// failed (transient errors may be retried), any other error is a permanent
// tool failure. The context carries the call's frame: a ToolFunc that calls
// the model or other tools through the runtime with this ctx nests them
// under its call.
type ToolFunc func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// Func adapts a typed function to a ToolFunc: arguments are decoded into In
// and the Out value encoded as JSON.
func Func[In, Out any](f func(ctx context.Context, in In) (Out, error)) ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, &ToolError{Type: "invalid_args", Message: err.Error()}
		}
		out, err := f(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

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

// Tool is one callable tool and its contract (R1). Only Name and Func are
// required; every zero field has the default its comment states.
type Tool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage // JSON Schema of the arguments; if nil, any JSON object
	OutputSchema json.RawMessage // JSON Schema of the result, for listing; not enforced
	Access       Access          // if empty, Read
	Reentrancy   Reentrancy      // if empty, NonReentrant
	Key          []string        // the argument fields that key a Keyed tool
	OnViolation  Mode            // what a cycle or contract violation does; if empty, Refuse
	Timeout      time.Duration   // per attempt; if zero, Options.DefaultTimeout
	Retry        *RetryPolicy    // transient failures; nil means the default policy
	// Idempotent says the tool honours the idempotency key it is given
	// (IdempotencyKey(ctx)), so a write may be retried under it.
	Idempotent bool
	// Retryable marks a tool that may be called again with the same
	// arguments after a failure: every failure of it that is not typed
	// permanent (invalid_args, not_found, forbidden, conflict) is
	// transient, like a failure whose message says so (an HTTP 429 or 5xx,
	// a timeout, "temporarily overloaded"). The executor retries such
	// failures by the tool's Retry policy, and the loop guard counts them
	// against its retry budget instead of treating them as repetition.
	Retryable bool
	Shape     *Shape
	Tags      []string
	// Reads and Writes name the entities the tool reads and writes, as
	// templates over its arguments ("order:{order_id}"). A write whose
	// request last read an entity at an older version is refused (S3).
	Reads, Writes []string
	// Refresh, if set, is the read reach calls right before a write whose
	// entity changed since the request read it, instead of refusing.
	Refresh *Followup
	// Undo is the call that compensates a successful write (S1).
	Undo *Followup
	// Verify checks a successful write (S2).
	Verify *Verify
	// Upstream names the server or service the tool's calls go to (the
	// gateway sets an upstream MCP server's name). The tools of one
	// upstream share its circuit breaker, which counts the failures that
	// say the upstream could not be reached: a ToolError of type
	// "unavailable", or an attempt that timed out.
	Upstream string
	// Breaker configures the tool's circuit breaker; nil means the
	// runtime's default (Options.Breaker).
	Breaker *BreakerPolicy
	// Fallback, for a read, are the reads that answer in its place when
	// its breaker (or its upstream's) is open, or a transient failure
	// exhausted its retries: the first whose breakers let it through is
	// called, as a call of its own under this one, with Args, a template
	// over this call's arguments ({"q": "{args.query}"}; empty passes the
	// arguments on as they are); if it fails, the next. The result says
	// which tool answered (Result.Fallback, and a note for the model). A
	// write has none: its failure goes to the model and the saga.
	Fallback []Followup
	Func     ToolFunc
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,128}$`)

// tool is a registered, compiled Tool. Immutable after registration.
type tool struct {
	Tool
	schema   *schema.Schema    // its input schema, compiled; nil: any JSON object
	nameHash callgraph.Hash    // for non-reentrant ancestry checks
	effects  *effects.Contract // its entities, undo, refresh and verify, compiled
	fallback []*effects.Followup
	// breaker and upBreaker are the tool's circuit breaker and its
	// upstream's (nil without an upstream), set at registration: they
	// outlive a re-registration of the tool.
	breaker, upBreaker *Breaker
	retry              RetryPolicy
	timeout            time.Duration
	shape              Shape
}

func compileTool(t Tool, opts *Options) (*tool, error) {
	if !toolNameRE.MatchString(t.Name) {
		return nil, fmt.Errorf("tool name %q: use 1-128 letters, digits, '_', '-' or '.'", t.Name)
	}
	if t.Func == nil {
		return nil, fmt.Errorf("tool %s: Func is nil", t.Name)
	}
	switch t.Access {
	case "":
		t.Access = Read
	case Read, Write, HighRisk, Forbidden:
	default:
		return nil, fmt.Errorf("tool %s: unknown access level %q (want read, write, high_risk or forbidden)", t.Name, t.Access)
	}
	if err := callgraph.CheckContract("tool "+t.Name, &t.Reentrancy, &t.OnViolation, len(t.Key) > 0,
		"a keyed tool needs Key (the argument fields that key it)"); err != nil {
		return nil, err
	}
	ct := &tool{Tool: t, nameHash: callgraph.HashString(t.Name).Sep().Sep()}
	ct.Tags = append([]string(nil), t.Tags...)
	ct.Key = append([]string(nil), t.Key...)
	if len(t.InputSchema) > 0 {
		s, err := schema.Compile(t.Name, t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		ct.schema = s
	}
	eff, err := compileEffects(&ct.Tool)
	if err != nil {
		return nil, err
	}
	ct.effects = eff
	if ct.fallback, err = compileFallbacks(&ct.Tool); err != nil {
		return nil, err
	}
	ct.Fallback = append([]Followup(nil), t.Fallback...)
	if err := t.Breaker.Check(); err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	if t.Breaker != nil {
		p := *t.Breaker
		ct.Breaker = &p
	}
	ct.retry = t.Retry.Resolve()
	ct.timeout = t.Timeout
	if ct.timeout == 0 {
		ct.timeout = opts.DefaultTimeout
	}
	if t.Shape != nil {
		ct.shape = *t.Shape
	}
	if ct.shape.MaxBytes == 0 {
		ct.shape.MaxBytes = opts.MaxResultBytes
	}
	return ct, nil
}

// validate checks canonical args against the schema (schema.Refusal).
func (t *tool) validate(args []byte) *Error { return schema.Refusal(t.Name, t.schema, args) }
