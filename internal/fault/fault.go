// Package fault is the one shape of every refusal and failure (R10): the
// Error a guard refuses a call with, or a tool fails with, its classes
// (Type) and sentinels for errors.Is, the text a model reads of it
// (Error.ModelText), and the stops and interruptions of a request that
// cut a call short (StopError, InterruptedError) with the Error each
// becomes. Package reach re-exports them; this room only describes.
//
//	e := &fault.Error{Guard: "admit", Type: fault.TypeBudget, Code: "budget_turns", Message: "..."}
//	errors.Is(e, fault.ErrBudget) // true
//	text := e.ModelText()
package fault

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/budget"
)

// Sentinels matched by errors.Is against an *Error of the matching Type.
var (
	// ErrRefused matches every refusal by a guard (cycles, budgets, policy, ...).
	ErrRefused = errors.New("call refused")
	// ErrCancelled matches calls cut short by a stop, a cancel or a deadline.
	ErrCancelled = errors.New("call cancelled")
	// ErrToolFailed matches calls whose tool ran and failed.
	ErrToolFailed = errors.New("tool failed")
	// ErrBudget matches refusals and stops caused by an exhausted budget.
	ErrBudget = errors.New("budget exhausted")
	// ErrUnavailable matches calls that a circuit breaker failed at once:
	// the tool or its upstream is down (type unavailable).
	ErrUnavailable = errors.New("tool unavailable")
)

// Error types: the broad class of a refusal or failure. The Code inside a
// class is finer (e.g. type budget, code budget_tool_calls).
const (
	TypeNotFound    = "not_found"         // unknown tool
	TypeInvalidArgs = "invalid_arguments" // schema violation or malformed JSON
	TypeCycle       = "cycle"             // the call is already on the stack
	TypeReentrancy  = "reentrancy"        // the tool's reentrancy contract forbids it
	TypeLoop        = "loop"              // repetition or no progress
	TypeBudget      = "budget"            // a budget is spent
	TypeStopped     = "stopped"           // the request was stopped (soft, cancel, isolate)
	TypePermission  = "permission"        // policy denied
	TypeApproval    = "approval"          // needs a human
	TypeRateLimit   = "rate_limit"        // too many calls; retry after
	TypeState       = "state"             // stale read or deadlock on an entity
	TypeTransient   = "transient"         // timeout, unavailable: may work later
	TypeUnavailable = "unavailable"       // a circuit breaker is open: the tool or its upstream is down; nothing ran
	TypeInterrupted = "interrupted"       // a restart cut the call or its request short
	TypeTool        = "tool"              // the tool ran and reported a failure
)

// Error is the one shape of every refusal and failure (R10). The model sees
// it through [Error.ModelText]; programs see its fields. An *Error matches
// [ErrRefused], [ErrCancelled], [ErrToolFailed], [ErrUnavailable] or [ErrBudget] with errors.Is,
// according to its Type.
type Error struct {
	Code       string        `json:"code"`                  // stable, snake_case, e.g. "cycle", "budget_turns"
	Type       string        `json:"type"`                  // one of the Type constants
	Message    string        `json:"message"`               // what happened, in one or two sentences
	Suggestion string        `json:"suggestion,omitempty"`  // what to do next
	Retry      string        `json:"retry,omitempty"`       // attempts made of allowed, e.g. "3/3"
	RetryAfter time.Duration `json:"retry_after,omitempty"` // for rate limits: when a retry may pass
	Guard      string        `json:"guard,omitempty"`       // the stage that decided
	Fields     []FieldError  `json:"fields,omitempty"`      // invalid arguments, one per problem
	// Alternatives names tools the caller may use instead (a denial's soft rejection).
	Alternatives []string `json:"alternatives,omitempty"`
	// Warning marks a violation that was let through (contract mode "warn").
	Warning bool `json:"warning,omitempty"`

	cancelled bool // it matches ErrCancelled, not ErrRefused (Cancelled)
}

// FieldError is one invalid argument: where, what is wrong, how to fix it.
type FieldError struct {
	Path    string `json:"path"` // JSON pointer into the arguments, "" for the whole object
	Problem string `json:"problem"`
	Fix     string `json:"fix,omitempty"`
}

func (e *Error) Error() string {
	if e.Suggestion == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + ": " + e.Message + " " + e.Suggestion
}

// Is reports whether target is the sentinel of e's class.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrCancelled:
		return e.cancelled
	case ErrToolFailed:
		return e.Type == TypeTool || e.Type == TypeTransient || e.Type == TypeUnavailable
	case ErrBudget:
		return e.Type == TypeBudget
	case ErrUnavailable:
		return e.Type == TypeUnavailable
	case ErrRefused:
		return !e.cancelled && e.Type != TypeTool && e.Type != TypeTransient && e.Type != TypeUnavailable
	}
	return false
}

// ModelText renders e as the text a model reads: what happened, the details
// it needs to act, and what to do next. It is the one place that turns
// refusals into words for the model.
func (e *Error) ModelText() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, f := range e.Fields {
		b.WriteString("\n- ")
		if f.Path != "" {
			b.WriteString(f.Path)
			b.WriteString(": ")
		}
		b.WriteString(f.Problem)
		if f.Fix != "" {
			b.WriteString(" (")
			b.WriteString(f.Fix)
			b.WriteString(")")
		}
	}
	if e.Retry != "" {
		fmt.Fprintf(&b, "\nAttempts: %s.", e.Retry)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "\nRetry after %s.", e.RetryAfter.Round(time.Millisecond))
	}
	if len(e.Alternatives) > 0 {
		b.WriteString("\nYou may use instead: ")
		b.WriteString(strings.Join(e.Alternatives, ", "))
		b.WriteString(".")
	}
	if e.Suggestion != "" {
		b.WriteString("\n")
		b.WriteString(e.Suggestion)
	}
	return b.String()
}

// Masked returns e with its texts (message, suggestion, and each field's
// problem and fix) passed through mask: e itself when mask changes
// nothing, else a copy, so that an error kept elsewhere is never changed.
func Masked(e *Error, mask func(string) string) *Error {
	msg, sug := mask(e.Message), mask(e.Suggestion)
	changed := msg != e.Message || sug != e.Suggestion
	var fields []FieldError
	for i, f := range e.Fields {
		p, fix := mask(f.Problem), mask(f.Fix)
		if p != f.Problem || fix != f.Fix {
			if fields == nil {
				fields = append([]FieldError(nil), e.Fields...)
			}
			fields[i].Problem, fields[i].Fix = p, fix
		}
	}
	if !changed && fields == nil {
		return e
	}
	c := *e
	c.Message, c.Suggestion = msg, sug
	if fields != nil {
		c.Fields = fields
	}
	return &c
}

// BudgetSpent refuses new work because the budget dim (turns, tool_calls,
// tokens, ...) of request id is spent (detail: how much of what); sub
// says it is a sub-agent's.
func BudgetSpent(dim string, sub bool, id, detail string) *Error {
	who := "this request"
	if sub {
		who = "this sub-agent"
	}
	return &Error{Guard: "admit", Type: TypeBudget, Code: "budget_" + dim,
		Message:    fmt.Sprintf("The %s budget of %s (%s) is spent: %s.", budget.Word(dim), who, id, detail),
		Suggestion: "Stop calling tools and answer with what you have, or ask the user for a larger budget."}
}

// Cancelled marks e as a call cut short (a stop, a cancel, a deadline):
// it then matches ErrCancelled, not ErrRefused. It returns e.
func Cancelled(e *Error) *Error {
	e.cancelled = true
	return e
}

// StopMode is how a request is stopped (C4).
type StopMode int32

// Stop modes, in increasing force.
const (
	Running StopMode = iota
	// Soft starts nothing new; calls in flight finish and their results are kept.
	Soft
	// Cancel cancels the contexts of calls in flight and starts nothing new.
	Cancel
	// Isolate is Cancel, and every later call or late result is refused at once.
	Isolate
)

func (m StopMode) String() string {
	switch m {
	case Soft:
		return "soft"
	case Cancel:
		return "cancel"
	case Isolate:
		return "isolate"
	}
	return "running"
}

// ParseStopMode reads "soft", "cancel" or "isolate".
func ParseStopMode(s string) (StopMode, error) {
	switch s {
	case "soft":
		return Soft, nil
	case "cancel":
		return Cancel, nil
	case "isolate":
		return Isolate, nil
	}
	return Running, fmt.Errorf("unknown stop mode %q (want soft, cancel or isolate)", s)
}

// Cause records why a request was stopped: who, why and when (C3).
type Cause struct {
	Mode   StopMode  `json:"-"`
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Budget names the exhausted budget when the stop was a budget's.
	Budget string `json:"budget,omitempty"`
	// Request is the request that was stopped, which may be an ancestor.
	Request string `json:"request"`
	// Shutdown marks the end of a request by the gateway shutting down
	// (or restarting): no one stopped it, and a call it cut may be made
	// again once the gateway is back (StopError.Refusal).
	Shutdown bool `json:"-"`
}

// StopError is the context cause of a stopped request: handlers that see
// ctx.Done() find it with context.Cause.
type StopError struct{ Cause Cause }

func (e *StopError) Error() string {
	return fmt.Sprintf("request %s stopped (%s) by %s: %s", e.Cause.Request, e.Cause.Mode, e.Cause.By, e.Cause.Reason)
}

// Is makes a StopError match ErrCancelled, and ErrBudget for budget stops.
func (e *StopError) Is(target error) bool {
	return target == ErrCancelled || (target == ErrBudget && e.Cause.Budget != "")
}

// Refusal is the structured error of the stop: type budget for a budget's,
// type stopped otherwise; it matches ErrCancelled.
func (e *StopError) Refusal() *Error {
	c := e.Cause
	if c.Budget != "" {
		return &Error{Guard: "admit", Type: TypeBudget, Code: "budget_" + c.Budget, cancelled: true,
			Message:    fmt.Sprintf("The %s budget of request %s is spent: %s.", budget.Word(c.Budget), c.Request, c.Reason),
			Suggestion: "Stop calling tools and answer with what you have."}
	}
	if c.Shutdown {
		return &Error{Guard: "admit", Type: TypeTransient, Code: "cut_by_shutdown", cancelled: true,
			Message: fmt.Sprintf("The gateway is shutting down (or restarting), which ended request %s while this call ran: "+
				"it was cut off, and a write may have taken effect.", c.Request),
			Suggestion: "Call again in a moment, once the gateway is back (or through another instance of it). " +
				"Before repeating a write, check whether it took effect, or repeat it under the same idempotency key: " +
				"reach then does not run it a second time."}
	}
	return &Error{Guard: "admit", Type: TypeStopped, Code: "stopped_" + c.Mode.String(), cancelled: true,
		Message:    fmt.Sprintf("Request %s was stopped (%s) by %s: %s.", c.Request, c.Mode, c.By, c.Reason),
		Suggestion: "Do not start new work; report what you have done so far."}
}

// InterruptedError refuses work under the id of a request that a restart
// interrupted: that request stays interrupted, with the cause recorded
// then, and is never continued (see reach.Runtime.RestoreInterrupted). A
// reach.RequestRecorder returns it to refuse a Begin; the runtime turns it into
// an *Error with code request_interrupted, which matches ErrRefused.
type InterruptedError struct{ Cause Cause }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("request %s was interrupted: %s", e.Cause.Request, e.Cause.Reason)
}

// Is makes an InterruptedError match ErrRefused.
func (e *InterruptedError) Is(target error) bool { return target == ErrRefused }

// Refusal is the structured error of the interruption: code
// request_interrupted, which matches ErrRefused.
func (e *InterruptedError) Refusal() *Error {
	c := e.Cause
	reason := cmp.Or(c.Reason, "the gateway restarted while it ran")
	when := ""
	if !c.At.IsZero() {
		when = " at " + c.At.UTC().Format(time.RFC3339)
	}
	return &Error{Guard: "admit", Type: TypeInterrupted, Code: "request_interrupted",
		Message: fmt.Sprintf("Request %s was interrupted%s: %s. It stays interrupted and cannot be continued.",
			c.Request, when, strings.TrimSuffix(reason, ".")),
		Suggestion: "Start a new request for this work: omit the request id, or use a new one. " +
			"Check first what the interrupted request changed, so that you redo only what is missing."}
}

// As turns any error into an *Error, keeping one that already is: a
// StopError or an InterruptedError becomes its Refusal, any other error a
// failure of type tool.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if se, ok := errors.AsType[*StopError](err); ok {
		return se.Refusal()
	}
	if ie, ok := errors.AsType[*InterruptedError](err); ok {
		return ie.Refusal()
	}
	return &Error{Type: TypeTool, Code: "tool_error", Message: err.Error(),
		Suggestion: "Check the arguments or try another approach."}
}

// ContextCause returns the cause a context ended with, as an error of the
// stage (guard) that saw it end: its *StopError as it is, any other cause
// as a cancel (code cancelled, matching ErrCancelled).
func ContextCause(ctx context.Context, guard string) error {
	cause := context.Cause(ctx)
	if _, ok := cause.(*StopError); ok {
		return cause
	}
	return Cancelled(&Error{Guard: guard, Type: TypeStopped, Code: "cancelled",
		Message:    "The call was cancelled: " + cause.Error() + ".",
		Suggestion: "Do not retry unless the user asks again."})
}

// RefusedBegin is how the refusal of a request's begin (err, of a store
// that keeps requests) reaches the caller: an *InterruptedError or a
// *StopError becomes its Refusal, naming request id if it named none; any
// other error is returned as it is.
func RefusedBegin(err error, id string) error {
	if ie, ok := errors.AsType[*InterruptedError](err); ok {
		c := ie.Cause
		c.Request = cmp.Or(c.Request, id)
		return (&InterruptedError{Cause: c}).Refusal()
	}
	if se, ok := errors.AsType[*StopError](err); ok {
		c := se.Cause
		c.Request = cmp.Or(c.Request, id)
		return (&StopError{Cause: c}).Refusal()
	}
	return err
}

// NoRequest is the refusal of a call or frame whose context carries no
// request.
func NoRequest() *Error {
	return &Error{Guard: "admit", Type: TypeStopped, Code: "no_request",
		Message:    "This call belongs to no request.",
		Suggestion: "Begin a request (Runtime.Begin) and pass its context."}
}

// Hinted is a store's error with what an operator must do about it, in
// reach's own words (the data folder's disk is full: free space on it). A
// refusal tells the hint (HintOf), never the error's own text, a driver's
// or a decoder's, which goes to the log.
type Hinted struct {
	Err  error
	Hint string
}

func (e *Hinted) Error() string { return e.Err.Error() + " (" + e.Hint + ")" }
func (e *Hinted) Unwrap() error { return e.Err }

// HintOf returns the hint err carries (Hinted), or "".
func HintOf(err error) string {
	if h, ok := errors.AsType[*Hinted](err); ok {
		return h.Hint
	}
	return ""
}
