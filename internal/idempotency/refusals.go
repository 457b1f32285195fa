package idempotency

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentreach/reach/internal/fault"
)

// InUse refuses a call whose idempotency key is that of the call of tool
// running on its own stack at depth: waiting for its own ancestor would
// never end.
func InUse(tool string, depth int) *fault.Error {
	return &fault.Error{Guard: "idempotency", Type: fault.TypeInvalidArgs, Code: "idempotency_key_in_use",
		Message:    fmt.Sprintf("The idempotency key of this call is already used by the %s call running on your call stack at depth %d.", tool, depth),
		Suggestion: "Give this call its own call id or idempotency key."}
}

// Call is a call whose key Reused refuses.
type Call struct {
	ID   string // the caller's call id
	Root string // the id of the root request the key is derived from
	Tool string
	Key  string // the key: the caller's, or derived from the request and call id
	Own  bool   // the caller gave the key
}

// Reused refuses a call whose idempotency key was used for other
// arguments: replaying the first call's result would answer a call that
// never ran.
func Reused(c *Call) *fault.Error {
	e := &fault.Error{Guard: "idempotency", Type: fault.TypeInvalidArgs, Code: "idempotency_key_reused",
		Message: fmt.Sprintf("Call id %q was already used in request %s for a %s call with other arguments, so its idempotency key (%s) is taken.",
			c.ID, c.Root, c.Tool, c.Key),
		Suggestion: "Give each call its own call id, or send the first call's arguments again to get its result."}
	if c.Own {
		e.Message = fmt.Sprintf("The idempotency key %q was already used for a %s call with other arguments.", c.Key, c.Tool)
		e.Suggestion = "Use a new idempotency key for a different call, or send the first call's arguments again to get its result."
	}
	return e
}

// ErrBadRecord marks an idempotency record that was read but does not
// decode (a disk error, a hand edit, a partial restore): a retry reads it
// the same, so its key's calls are refused until an operator fixes it.
var ErrBadRecord = errors.New("the stored record does not decode")

// Unreadable is the error of a call whose idempotency claim the store did
// not take, or whose record it could not read (err): the claim is
// recorded before any write runs, so nothing ran, and the same call sent
// again runs once the store answers. A record that does not
// decode (ErrBadRecord) refuses its key's calls for good: the call it
// records may have run, so running this one could run it twice. The
// store's own text (a driver's, a decoder's) is not in the error, only
// what an operator must do when the store said (fault.HintOf): its caller
// logs err.
func Unreadable(err error) *fault.Error {
	if errors.Is(err, ErrBadRecord) {
		return &fault.Error{Guard: "idempotency", Type: fault.TypeInvalidArgs, Code: "idempotency_record_unreadable",
			Message:    "The idempotency record of this call is in the store but cannot be read. Nothing ran: the call it records may have run already.",
			Suggestion: "Check whether the first call took effect; then call again with a new idempotency key, or ask an operator to fix the record (the gateway's log names it)."}
	}
	msg := "The gateway could not record this call's idempotency claim in its store, which it does before a write runs, so the call was not run"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "The store did not answer in time to record this call's idempotency claim, which the gateway does before a write runs, so the call was not run"
	}
	if hint := fault.HintOf(err); hint != "" {
		msg += ": " + hint
	}
	msg += "."
	return &fault.Error{Guard: "idempotency", Type: fault.TypeTransient, Code: "idempotency_store",
		Message: msg,
		Suggestion: "Nothing ran. Try again with the same idempotency key or call id: it runs once the store takes writes again, and never twice. " +
			"If it keeps failing, tell an operator: the gateway's log has the store's error (a disk full, the database down)."}
}
