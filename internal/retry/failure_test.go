package retry

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/fault"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		name                string
		err                 error
		timedOut, retryable bool
		want                bool
	}{
		{"timed out", errors.New("slow"), true, false, true},
		{"typed transient", fmt.Errorf("call: %w", &ToolError{Type: "rate_limited", Message: "slow down"}), false, false, true},
		{"typed permanent on a retryable tool", &ToolError{Type: "not_found", Message: "HTTP 503"}, false, true, false},
		{"a retryable tool's failure", errors.New("boom"), false, true, true},
		{"a message that says so", errors.New("upstream answered HTTP 503"), false, false, true},
		{"a permanent failure", errors.New("no such order"), false, false, false},
	} {
		te, got := Transient(c.err, c.timedOut, c.retryable)
		if got != c.want {
			t.Errorf("%s: Transient = %v, want %v", c.name, got, c.want)
		}
		if want, _ := errors.AsType[*ToolError](c.err); te != want {
			t.Errorf("%s: the ToolError returned is %v, want %v", c.name, te, want)
		}
	}
}

func TestFailure(t *testing.T) {
	e := Failure(&Attempt{Tool: "kb", Err: &ToolError{Type: "unavailable", Message: "down."}, Transient: true, N: 3, Of: 3, CanRetry: true})
	if e.Type != fault.TypeTransient || e.Code != "unavailable" || e.Retry != "3/3" || e.Message != "kb failed (unavailable): down." ||
		!strings.Contains(e.Suggestion, "failed 3 times in a row") {
		t.Fatalf("after its retries: %+v", e)
	}
	e = Failure(&Attempt{Tool: "pay", Timeout: 2 * time.Second, Err: errors.New("ctx"), TimedOut: true, Transient: true, N: 1, Of: 1})
	if e.Code != "timeout" || e.Message != "pay did not answer within 2s." || !strings.Contains(e.Suggestion, "not retried automatically") {
		t.Fatalf("a write that timed out: %+v", e)
	}
	e = Failure(&Attempt{Tool: "kb", Timeout: time.Second, Err: errors.New("ctx"), TimedOut: true, Transient: true, N: 3, Of: 3, CanRetry: true,
		Took: 3420 * time.Millisecond})
	if e.Message != "kb did not answer within 1s on any of 3 attempts (3.4s in all)." {
		t.Fatalf("a read that timed out on every attempt: %+v", e)
	}
	e = Failure(&Attempt{Tool: "pay", Err: &ToolError{Type: "forbidden", Message: "no"}, N: 1, Of: 3, CanRetry: true})
	if e.Type != fault.TypeTool || e.Retry != "" || !strings.Contains(e.Suggestion, "whatever its arguments") || !errors.Is(e, fault.ErrToolFailed) {
		t.Fatalf("a forbidden call: %+v", e)
	}
}

// TestFailureRefusedBeneath: a tool that failed passing back reach's
// refusal of its own nested call keeps that refusal's next step in its
// suggestion, not the advice to check the arguments.
func TestFailureRefusedBeneath(t *testing.T) {
	inner := &fault.Error{Code: "deadlock", Type: fault.TypeState, Message: "Writing acct y would deadlock.",
		Suggestion: "Finish or undo what this request holds, then try again."}
	e := Failure(&Attempt{Tool: "transfer", Err: &ToolError{Type: "tool_error", Message: "moved x to y; writing y answered: " + inner.Message},
		N: 1, Of: 1, Beneath: inner, BeneathTool: "transfer"})
	if e.Type != fault.TypeTool || e.Code != "tool_error" || !strings.Contains(e.Message, "would deadlock") ||
		strings.Contains(e.Suggestion, "Check the arguments") || !strings.Contains(e.Suggestion, "(deadlock) of the call of transfer") ||
		!strings.HasSuffix(e.Suggestion, inner.Suggestion) {
		t.Fatalf("a failure on a refusal beneath: %+v", e)
	}
	// Without one, the generic advice stands.
	e = Failure(&Attempt{Tool: "transfer", Err: &ToolError{Type: "tool_error", Message: "bad account"}, N: 1, Of: 1})
	if !strings.Contains(e.Suggestion, "Check the arguments") {
		t.Fatalf("a failure of its own: %+v", e)
	}
}
