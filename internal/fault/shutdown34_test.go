package fault

import (
	"errors"
	"strings"
	"testing"
)

// TestShutdownEndIsNotAStop: a request ended as the gateway shuts down
// cuts its calls with a refusal a client may retry (cut_by_shutdown,
// transient, saying a write may have taken effect), still a cancellation;
// a user's stop says what it said (stopped_cancel, "Do not start new
// work").
func TestShutdownEndIsNotAStop(t *testing.T) {
	shut := (&StopError{Cause: Cause{Mode: Cancel, By: "gateway", Reason: "the gateway is shutting down", Request: "r1", Shutdown: true}}).Refusal()
	if shut.Code != "cut_by_shutdown" || shut.Type != TypeTransient || !errors.Is(shut, ErrCancelled) {
		t.Errorf("the refusal of a shutdown's end: %+v; want cut_by_shutdown, transient, matching ErrCancelled", shut)
	}
	if !strings.Contains(shut.Message, "shutting down") || !strings.Contains(shut.Message, "may have taken effect") || strings.Contains(shut.Suggestion, "Do not start new work") {
		t.Errorf("the text of a shutdown's end: %q %q", shut.Message, shut.Suggestion)
	}
	user := (&StopError{Cause: Cause{Mode: Cancel, By: "alice", Reason: "enough", Request: "r1"}}).Refusal()
	if user.Code != "stopped_cancel" || user.Type != TypeStopped || user.Suggestion != "Do not start new work; report what you have done so far." {
		t.Errorf("the refusal of a user's stop: %+v; want it as it was", user)
	}
}
