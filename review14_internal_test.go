package reach

import (
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/fault"
)

// The record of an approved run cut off after its tool started answers
// every retry the same way, for as long as the approval is remembered: as
// recovery's record of a call a restart cut off (interrupted, status
// error), not as the cut-off run (cancelled), and without telling the
// caller when a retry would pass (the breaker's refusal of a second
// attempt carries its open time) nor the attempts made.
func TestReview14CutOffRecordPromisesNoRetry(t *testing.T) {
	open := &fault.Error{Guard: "breaker", Type: fault.TypeUnavailable, Code: "breaker_open",
		Message: "The breaker of pay is open.", Suggestion: "Retry in 30s.", Retry: "1/3", RetryAfter: 30 * time.Second}
	res := cutOff(&Call{Tool: "pay"}, open)
	e := res.Error
	if res.Status != StatusError || e == nil || e.Code != "interrupted" || e.Type != TypeInterrupted || e.Is(ErrCancelled) {
		t.Errorf("the cut-off record: %s %+v; want the error interrupted, as recovery's", res.Status, e)
	}
	if e == nil || e.RetryAfter != 0 || e.Retry != "" {
		t.Fatalf("the cut-off record: %+v; want no retry_after, no retry count", e)
	}
	if !strings.Contains(e.Message, "pay") || !strings.Contains(e.Message, "breaker of pay is open") || strings.Contains(e.Suggestion, "30s") {
		t.Errorf("the cut-off record says %q / %q; want the tool, the cause, and no retry suggested", e.Message, e.Suggestion)
	}
	if res := cutOff(&Call{Tool: "pay"}, fault.Cancelled(&fault.Error{Code: "cancelled", Message: "The client cancelled the call."})); res.Status != StatusError || res.Error.Is(ErrCancelled) {
		t.Errorf("a cancelled run's record: %s %+v; want an error, not cancelled (the retry was not)", res.Status, res.Error)
	}
	if open.RetryAfter != 30*time.Second || open.Retry != "1/3" {
		t.Errorf("the refusal of the run itself changed: %+v", open)
	}
}
