package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestServedPriorities (R8): rate_limit.priorities gives a principal's
// requests its priority, which may take the capacity the buckets keep
// for priority requests (reserved): alice (priority 0) is refused once
// only the reserve is left, and cannot raise her priority with
// Reach-Priority; bob (priority 1) lowering his to 0 is refused as she
// is, and at his own priority takes the reserve, then is refused by the
// empty bucket. A Reach-Priority that is not a whole number is refused.
func TestServedPriorities(t *testing.T) {
	_, url, _, keys := authGateway(t, "rate_limit: {per_second: 0.001, burst: 4, reserved: 0.5, priorities: {bob: 1}}\n")
	call := func(who, priority string) (int, string, string) {
		t.Helper()
		h := map[string]string{"Authorization": "Bearer " + keys[who]}
		if priority != "" {
			h["Reach-Priority"] = priority
		}
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`, h)
		if status != http.StatusOK {
			return status, fmt.Sprint(path(out, "error", "code")), ""
		}
		return status, fmt.Sprint(path(out, "results", 0, "error", "code")), fmt.Sprint(path(out, "results", 0, "error", "message"))
	}
	const reserved = "global (capacity reserved for priority requests)"
	for i, c := range []struct {
		who, priority, code, says string
	}{
		{"alice", "", "<nil>", ""},
		{"alice", "", "<nil>", ""},
		{"alice", "", "rate_limited", reserved},
		{"alice", "5", "rate_limited", reserved}, // never raised past her principal's
		{"bob", "0", "rate_limited", reserved},   // lowered: bulk work
		{"bob", "", "<nil>", ""},
		{"bob", " 1", "<nil>", ""},
		{"bob", "", "rate_limited", "Too many calls (global rate limit)."},
	} {
		status, code, msg := call(c.who, c.priority)
		if status != http.StatusOK || code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("call %d, %s with Reach-Priority %q: %d %s %q, want %s saying %q", i+1, c.who, c.priority, status, code, msg, c.code, c.says)
		}
	}
	if status, code, _ := call("bob", "urgent"); status != http.StatusBadRequest || code != "bad_priority" {
		t.Errorf("Reach-Priority: urgent = %d %s, want 400 bad_priority", status, code)
	}
}
