package reach

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

	cancelled bool
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

// refuse builds a refusal by a guard.
func refuse(guard, typ, code, msg, suggestion string) *Error {
	return &Error{Guard: guard, Type: typ, Code: code, Message: msg, Suggestion: suggestion}
}

// asError turns any error into an *Error, keeping one that already is.
func asError(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if se, ok := errors.AsType[*StopError](err); ok {
		return se.asError()
	}
	if ie, ok := errors.AsType[*InterruptedError](err); ok {
		return ie.asError()
	}
	return &Error{Type: TypeTool, Code: "tool_error", Message: err.Error(),
		Suggestion: "Check the arguments or try another approach."}
}
