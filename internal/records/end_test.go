package records

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/fault"
)

func TestPastRequestEnd(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	by := &fault.Cause{Mode: fault.Soft, By: "ops", Reason: "too slow", At: at}
	tests := []struct {
		name                 string
		p                    PastRequest
		want                 fault.Cause
		interrupted, stopped bool
	}{
		{"completed", PastRequest{ID: "r1", State: RequestCompleted, Ended: at, Cause: by},
			fault.Cause{Mode: fault.Cancel, By: "runtime", Reason: "request ended", At: at, Request: "r1"}, false, false},
		{"interrupted, with its cause", PastRequest{ID: "r2", State: RequestInterrupted, Cause: &fault.Cause{By: "reach", Reason: "restart", At: at}},
			fault.Cause{By: "reach", Reason: "restart", At: at, Request: "r2"}, true, false},
		{"interrupted, without a cause", PastRequest{ID: "r3", State: RequestInterrupted},
			fault.Cause{By: "reach", Reason: "interrupted", Request: "r3"}, true, false},
		{"stopped: the state's mode wins", PastRequest{ID: "r4", State: "stopped_isolate", Cause: by},
			fault.Cause{Mode: fault.Isolate, By: "ops", Reason: "too slow", At: at, Request: "r4"}, false, true},
		{"stopped in a mode not known: the cause's", PastRequest{ID: "r5", State: "stopped_later", Cause: by},
			fault.Cause{Mode: fault.Soft, By: "ops", Reason: "too slow", At: at, Request: "r5"}, false, true},
		{"stopped, no mode anywhere: cancel", PastRequest{ID: "r6", State: "stopped_"},
			fault.Cause{Mode: fault.Cancel, By: "reach", Reason: "stopped_", Request: "r6"}, false, true},
	}
	for _, tt := range tests {
		c, interrupted, stopped := tt.p.End()
		if c != tt.want || interrupted != tt.interrupted || stopped != tt.stopped {
			t.Errorf("%s: End = %+v, %v, %v; want %+v, %v, %v", tt.name, c, interrupted, stopped, tt.want, tt.interrupted, tt.stopped)
		}
	}
	if by.Request != "" {
		t.Errorf("End changed the stored cause: %+v", by)
	}
}
