// Package toolspec is a tool as it is declared (Tool: its name, function
// and contract) and as the runtime runs it (Compiled: checked, with its
// schema, side effects, fallbacks, retry policy, timeout and shaping
// compiled and the defaults in force). Package reach names these types
// (reach.Tool, reach.Access, ...) and adds each tool's circuit breakers.
//
//	ct, err := toolspec.Compile(toolspec.Tool{Name: "get_order", Func: f}, 30*time.Second, 32<<10)
//	if e := ct.Validate(args); e != nil { /* refuse */ }
package toolspec

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/fault"
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

// Writes reports whether a tool of this level writes (write or high_risk).
func (a Access) Writes() bool { return a == Write || a == HighRisk }

// Func runs a tool. args are the validated arguments as canonical JSON.
// It returns the result as JSON, or an error: a *ToolError (internal/retry)
// says how it failed (transient errors may be retried), any other error is
// a permanent tool failure. The context carries the call's frame: a Func
// that calls the model or other tools through the runtime with this ctx
// nests them under its call.
type Func func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// Typed adapts a typed function to a Func: arguments are decoded into In
// and the Out value encoded as JSON.
func Typed[In, Out any](f func(ctx context.Context, in In) (Out, error)) Func {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, &retry.ToolError{Type: "invalid_args", Message: err.Error()}
		}
		out, err := f(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

// Followup is a call reach makes on a tool's behalf: its undo, its verify
// check, or the read that refreshes an entity before a write. Args is a
// JSON template over the call's arguments and result, e.g.
// {"refund_id": "{result.refund_id}", "order_id": "{args.order_id}"}.
type Followup = effects.Call

// Verify is a check after a write (S2): reach calls Tool with Args and
// evaluates Condition, a CEL expression over result (the check's result),
// args (the write's arguments) and output (the write's result). A false
// condition, or a failed check, makes the write a silent failure: the call
// fails and the request's saga compensates.
type Verify struct {
	Followup
	Condition string
}

// Tool is one callable tool and its contract (R1). Only Name and Func are
// required; every zero field has the default its comment states.
type Tool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage      // JSON Schema of the arguments; if nil, any JSON object
	OutputSchema json.RawMessage      // JSON Schema of the result, for listing; not enforced
	Access       Access               // if empty, Read
	Reentrancy   callgraph.Reentrancy // if empty, NonReentrant
	Key          []string             // the argument fields that key a Keyed tool
	OnViolation  callgraph.Mode       // what a cycle or contract violation does; if empty, Refuse
	Timeout      time.Duration        // per attempt; if zero, the runtime's DefaultTimeout
	Retry        *retry.Policy        // transient failures; nil means the default policy
	// Idempotent says the tool honours the idempotency key it is given
	// (reach.IdempotencyKey(ctx)), so a write may be retried under it.
	Idempotent bool
	// Retryable marks a tool that may be called again with the same
	// arguments after a failure: every failure of it that is not typed
	// permanent (invalid_args, not_found, forbidden, conflict) is
	// transient, like a failure whose message says so (an HTTP 429 or 5xx,
	// a timeout, "temporarily overloaded"). The executor retries such
	// failures by the tool's Retry policy, and the loop guard counts them
	// against its retry budget instead of treating them as repetition.
	Retryable bool
	Shape     *shape.Spec
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
	Breaker *breaker.Policy
	// Fallback, for a read, are the reads that answer in its place when
	// its breaker (or its upstream's) is open, or a transient failure
	// exhausted its retries: the first whose breakers let it through is
	// called, as a call of its own under this one, with Args, a template
	// over this call's arguments ({"q": "{args.query}"}; empty passes the
	// arguments on as they are); if it fails, the next. The result says
	// which tool answered (Result.Fallback, and a note for the model). A
	// write has none: its failure goes to the model and the saga.
	Fallback []Followup
	Func     Func
}

// nameChars matches the characters of a tool's name; ValidName checks
// its length apart: a counted repetition ({1,128}) compiles into 128
// copies of the class, about 50 KB kept for the process's life, where
// this is under 1 KB.
var nameChars = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// ValidName reports whether name can name a tool: 1-128 letters, digits,
// '_', '-' or '.'.
func ValidName(name string) bool { return len(name) <= 128 && nameChars.MatchString(name) }

// Compiled is a Tool checked and compiled, as the runtime runs it, with
// the defaults in force (Access, Reentrancy and OnViolation too), and
// the circuit breakers of the tool and of its upstream, kept by the
// runtime's breaker.Registry over its requests R. Its slices are its own.
// Immutable once registered (Catalog.Update).
type Compiled[R any] struct {
	Tool
	Schema    *schema.Schema      // its input schema, compiled; nil: any JSON object
	NameHash  callgraph.Hash      // for non-reentrant ancestry checks
	Effects   *effects.Contract   // its entities, undo, refresh and verify, compiled
	Fallbacks []*effects.Followup // Fallback, compiled
	Retrying  retry.Policy        // Retry over the defaults
	// AttemptTimeout bounds one attempt: Timeout, or the runtime's default.
	AttemptTimeout time.Duration
	Shaping        shape.Spec // Shape, with the runtime's MaxBytes if it has none
	// ToolBreaker and UpstreamBreaker are the tool's circuit breaker and
	// its upstream's (nil without an upstream), set when it is
	// registered: they outlive a re-registration of the tool.
	ToolBreaker, UpstreamBreaker *breaker.Named[R]
}

// Compile checks t and compiles its contract, with the runtime's default
// timeout of an attempt and size of a result.
func Compile[R any](t Tool, defaultTimeout time.Duration, maxResultBytes int) (*Compiled[R], error) {
	if !ValidName(t.Name) {
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
	ct := &Compiled[R]{Tool: t, NameHash: callgraph.NameHash(t.Name)}
	ct.Tags = append([]string(nil), t.Tags...)
	ct.Key = append([]string(nil), t.Key...)
	var err error
	if len(t.InputSchema) > 0 {
		if ct.Schema, err = schema.Compile(t.Name, t.InputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	s := effects.Spec{Reads: t.Reads, Writes: t.Writes, Undo: t.Undo, Refresh: t.Refresh}
	if t.Verify != nil {
		s.Verify, s.Condition = &t.Verify.Followup, t.Verify.Condition
	}
	if ct.Effects, err = effects.Compile(t.Name, s); err != nil {
		return nil, err
	}
	if ct.Fallbacks, err = effects.CompileFallbacks(t.Name, t.Access == Read, string(t.Access), t.Fallback); err != nil {
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
	ct.Retrying = t.Retry.Resolve()
	ct.AttemptTimeout = t.Timeout
	if ct.AttemptTimeout == 0 {
		ct.AttemptTimeout = defaultTimeout
	}
	if t.Shape != nil {
		ct.Shaping = *t.Shape
	}
	if ct.Shaping.MaxBytes == 0 {
		ct.Shaping.MaxBytes = maxResultBytes
	}
	return ct, nil
}

// Validate checks canonical args against the schema (schema.Refusal).
func (t *Compiled[R]) Validate(args []byte) *fault.Error {
	return schema.Refusal(t.Name, t.Schema, args)
}

// ValidateNames is Validate for arguments whose member names are known
// to be all lower case ASCII when fold is false (callgraph.Names): a
// member spelled in another case than its property is then looked for
// only if the schema's own names have capitals.
func (t *Compiled[R]) ValidateNames(args []byte, fold bool) *fault.Error {
	return schema.RefusalNames(t.Name, t.Schema, args, fold)
}

// Lease is the longest a call of t can hold its idempotency key: every
// attempt it may make under the key (reads, and idempotent tools, retry)
// with its timeout and the longest backoff, and a minute for the stages
// around it.
func (t *Compiled[R]) Lease() time.Duration {
	n := 1
	if t.Access == Read || t.Idempotent {
		n = max(t.Retrying.Attempts, 1)
	}
	return time.Duration(n)*(t.AttemptTimeout+t.Retrying.Max) + time.Minute
}

// Answers is the longest a call of t takes to answer when its tool
// honours its context: every attempt it may make (reads, and idempotent
// tools, retry) with its timeout, the longest backoffs between them, and
// one timeout more for the stages before the tool (an entity's lock, held
// by a write bounded the same way). A call past it has a tool that ignores
// its context: what waits for it stops waiting then (an undo's
// compensation, a stopped request's end), and says it may have run.
func (t *Compiled[R]) Answers() time.Duration {
	n := 1
	if t.Access == Read || t.Idempotent {
		n = max(t.Retrying.Attempts, 1)
	}
	d := time.Duration(n+1) * t.AttemptTimeout
	for k := 1; k < n; k++ {
		b := t.Retrying.Base << (k - 1)
		if b > t.Retrying.Max || b <= 0 {
			b = t.Retrying.Max
		}
		d += b
	}
	return d
}

// Healthy reports whether a call of t would get through its breakers at
// now.
func (t *Compiled[R]) Healthy(now time.Time) bool {
	return t.ToolBreaker.WouldAdmit(now) && t.UpstreamBreaker.WouldAdmit(now)
}
