package reach

import "github.com/agentreach/reach/internal/fault"

// Sentinels matched by errors.Is against an *Error of the matching Type.
var (
	ErrRefused     = fault.ErrRefused     // every refusal by a guard (cycles, budgets, policy, ...)
	ErrCancelled   = fault.ErrCancelled   // calls cut short by a stop, a cancel or a deadline
	ErrToolFailed  = fault.ErrToolFailed  // calls whose tool ran and failed
	ErrBudget      = fault.ErrBudget      // refusals and stops caused by an exhausted budget
	ErrUnavailable = fault.ErrUnavailable // calls a circuit breaker failed at once (type unavailable)
)

// Error types: the broad class of a refusal or failure (see internal/fault).
const (
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
)

// Error is the one shape of every refusal and failure (R10). The model sees
// it through [Error.ModelText]; programs see its fields. It matches
// [ErrRefused], [ErrCancelled], [ErrToolFailed], [ErrUnavailable] or
// [ErrBudget] with errors.Is, according to its Type.
type Error = fault.Error

// FieldError is one invalid argument: where, what is wrong, how to fix it.
type FieldError = fault.FieldError

// refuse builds a refusal by a guard.
func refuse(guard, typ, code, msg, suggestion string) *Error {
	return &Error{Guard: guard, Type: typ, Code: code, Message: msg, Suggestion: suggestion}
}

// asError turns any error into an *Error, keeping one that already is.
func asError(err error) *Error { return fault.As(err) }
