// Package retry holds what the runtime's executor needs to retry a tool's
// failures (R6): which failures are transient — the one classification,
// which the circuit breakers count too — and the backoff between
// attempts.
//
//	if retry.Classify(err.Error()) != "" && n < attempts {
//		retry.Sleep(ctx, retry.Backoff(100*time.Millisecond, 5*time.Second, n))
//	}
package retry

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/fault"
)

// Backoff returns the wait before attempt n+1: base doubled n-1 times,
// capped at max, with jitter (half of it, plus up to half at random).
func Backoff(base, max time.Duration, n int) time.Duration {
	d := base << (n - 1)
	if d > max || d <= 0 {
		d = max
	}
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// Sleep waits for d, or until ctx ends: then it returns ctx's cause.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// permanentTypes are the tool error types that say trying again as is
// cannot help.
var permanentTypes = map[string]bool{"invalid_args": true, "not_found": true, "forbidden": true, "conflict": true, "internal": true, "too_large": true}

// Permanent reports whether a tool error type says that trying again as
// is cannot help: invalid_args, not_found, forbidden, conflict, internal,
// too_large (an answer larger than reach passes on).
func Permanent(typ string) bool { return permanentTypes[typ] }

// transientPhrases are what a message says when its failure is temporary,
// and the transient type each one means.
var transientPhrases = []struct{ phrase, typ string }{
	{"too many requests", "rate_limited"}, {"rate limit", "rate_limited"}, {"rate-limit", "rate_limited"},
	{"ratelimit", "rate_limited"}, {"throttl", "rate_limited"}, {"quota exceeded", "rate_limited"},
	{"timed out", "timeout"}, {"timeout", "timeout"}, {"deadline exceeded", "timeout"},
	{"temporarily", "unavailable"}, {"temporary failure", "unavailable"}, {"overloaded", "unavailable"},
	{"over capacity", "unavailable"}, {"service unavailable", "unavailable"}, {"bad gateway", "unavailable"},
	{"try again later", "unavailable"}, {"try again in", "unavailable"}, {"retry later", "unavailable"},
	{"retry in ", "unavailable"}, {"retry after", "unavailable"}, {"connection reset", "unavailable"},
	{"connection refused", "unavailable"}, {"econnreset", "unavailable"}, {"econnrefused", "unavailable"},
	{"server is busy", "unavailable"}, {"please retry", "unavailable"},
}

// Classify returns the transient type that a failure's message names
// ("rate_limited", "timeout" or "unavailable"), or "": an HTTP status 408,
// 425, 429, 502, 503 or 504 at its start or after "HTTP", "status" or
// "code", or a phrase such as "timed out", "temporarily", "overloaded",
// "too many requests", "try again later". It reads the first 512 bytes.
func Classify(msg string) string {
	if len(msg) > 512 {
		msg = msg[:512]
	}
	low := strings.ToLower(msg)
	for _, p := range transientPhrases {
		if strings.Contains(low, p.phrase) {
			return p.typ
		}
	}
	for i := 0; i+3 <= len(low); i++ {
		if !isStatusAt(low, i) {
			continue
		}
		before := strings.TrimRight(low[:i], " :=#([")
		if before != "" && !strings.HasSuffix(before, "http") && !strings.HasSuffix(before, "status") &&
			!strings.HasSuffix(before, "code") && !strings.HasSuffix(before, "error") && !strings.HasSuffix(before, "http/1.1") && !strings.HasSuffix(before, "http/2") {
			continue
		}
		switch low[i : i+3] {
		case "429":
			return "rate_limited"
		case "408", "504":
			return "timeout"
		}
		return "unavailable"
	}
	return ""
}

// isStatusAt reports whether s holds, at i, a transient HTTP status as a
// number of its own.
func isStatusAt(s string, i int) bool {
	switch s[i : i+3] {
	case "408", "425", "429", "502", "503", "504":
	default:
		return false
	}
	digit := func(j int) bool { return j >= 0 && j < len(s) && s[j] >= '0' && s[j] <= '9' }
	return !digit(i-1) && !digit(i+3)
}

// ToolError is a failure reported by a tool. Type is one of "timeout",
// "unavailable", "rate_limited" (transient: a retry may succeed) or
// "invalid_args", "not_found", "forbidden", "conflict" or any other word
// (permanent).
type ToolError struct {
	Type    string
	Message string
}

func (e *ToolError) Error() string { return e.Type + ": " + e.Message }

// Transient reports whether the failure may go away on retry.
func (e *ToolError) Transient() bool { return TransientType(e.Type) }

// TransientType reports whether a tool error type is transient.
func TransientType(t string) bool {
	return t == "timeout" || t == "unavailable" || t == "rate_limited"
}

// Transient is the runtime's one classification of a tool's failure err
// (R6): it is transient — a retry may succeed, and the circuit breakers
// count it — when the attempt timed out, its ToolError's type says so
// (timeout, unavailable, rate_limited), or, unless its type says it is
// permanent, the tool is retryable or the failure's message says it is
// temporary (Classify: HTTP 429 or 5xx, "temporarily", ...), as an
// upstream's error result or a JSON-RPC error often does. It returns the
// failure's ToolError, if it is one.
func Transient(err error, timedOut, retryable bool) (*ToolError, bool) {
	te, _ := errors.AsType[*ToolError](err)
	if timedOut || te != nil && te.Transient() {
		return te, true
	}
	if te != nil && Permanent(te.Type) {
		return te, false
	}
	if retryable {
		return te, true
	}
	msg := err.Error()
	if te != nil {
		msg = te.Message
	}
	return te, Classify(msg) != ""
}

// Attempt is how the last attempt of a tool call failed, for Failure.
type Attempt struct {
	Tool      string        // the tool called
	Timeout   time.Duration // the tool's timeout of one attempt
	Err       error         // the failure
	TimedOut  bool          // the attempt ran out of its timeout
	Transient bool          // as Transient says
	N, Of     int           // the attempt, of how many were allowed
	CanRetry  bool          // the runtime may retry the call (a read, or a write under an idempotency key)
	Took      time.Duration // how long the call ran, its attempts and the waits between them
	// Beneath is reach's refusal of a call the tool made through reach
	// from inside this one (a tool that calls reach), the last if several,
	// and BeneathTool that call's tool: a failure that passes it back
	// keeps its next step.
	Beneath     *fault.Error
	BeneathTool string
}

// Failure is the structured error of a tool call that failed (guard
// execute): type tool, or transient with the attempts made, with what
// the model should do next.
func Failure(a *Attempt) *fault.Error {
	e := &fault.Error{Guard: "execute", Type: fault.TypeTool, Code: "tool_error", Message: fmt.Sprintf("%s failed: %v.", a.Tool, a.Err)}
	if a.Transient {
		e.Retry = strconv.Itoa(a.N) + "/" + strconv.Itoa(a.Of)
	}
	te, _ := errors.AsType[*ToolError](a.Err)
	if te != nil {
		e.Code = te.Type
		e.Message = fmt.Sprintf("%s failed (%s): %s.", a.Tool, te.Type, strings.TrimSuffix(te.Message, "."))
	}
	if a.TimedOut {
		e.Code = "timeout"
		e.Message = fmt.Sprintf("%s did not answer within %s.", a.Tool, a.Timeout)
		if a.N > 1 { // say what the caller waited: every attempt, and the waits between
			e.Message = fmt.Sprintf("%s did not answer within %s on any of %d attempts (%s in all).", a.Tool, a.Timeout, a.N,
				a.Took.Round(100*time.Millisecond))
		}
	}
	switch {
	case a.Transient && a.Of > 1:
		e.Type = fault.TypeTransient
		e.Suggestion = fmt.Sprintf("It failed %d times in a row; hand this to a human or try a different approach.", a.N)
	case a.Transient && !a.CanRetry:
		e.Type = fault.TypeTransient
		e.Suggestion = "This write was not retried automatically because it has no idempotency key the tool honours; " +
			"check whether it took effect before you call it again."
	case a.Transient:
		e.Type = fault.TypeTransient
		e.Suggestion = "It may work if you try again later."
	case a.Beneath != nil:
		// The arguments were fine: what failed is reach's refusal inside,
		// whose own next step (finish or undo what is held, return to the
		// running call) is what to do.
		e.Suggestion = fmt.Sprintf("It failed on reach's refusal (%s) of the call of %s it made beneath this one: %s",
			a.Beneath.Code, a.BeneathTool, a.Beneath.Suggestion)
	case te != nil && te.Type == "forbidden":
		e.Suggestion = "The tool refused this call, whatever its arguments; try another approach, or hand this to a human if the tool is needed."
	default:
		e.Suggestion = "Check the arguments against the tool's description, or try another approach."
	}
	return e
}
