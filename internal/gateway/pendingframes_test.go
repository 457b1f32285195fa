package gateway

import (
	"fmt"
	"testing"
)

// The helpers of the tests of one approval waited for in many requests
// (appr34_test.go, appr35_test.go).

// refundWaitingIn asks refund_order (high_risk) for the same order, by
// idempotency key key, in n requests named prefix-0 to prefix-(n-1), and
// returns the frame awaiting approval in each. It fails unless every call
// is pending and n frames wait.
func refundWaitingIn(t *testing.T, url, prefix, key string, n int) []waiting {
	t.Helper()
	var frames []waiting
	for i := range n {
		rid := fmt.Sprintf("%s-%d", prefix, i)
		body := `{"request_id":"` + rid + `","tool_calls":[{"call_id":"c","tool":"refund_order","idempotency_key":"` + key + `",` +
			`"arguments":{"order_id":"1001","amount":20,"reason":"broken"}}]}`
		if _, out := do(t, "POST", url+"/v1/calls", body, nil); path(out, "results", 0, "status") != "pending" {
			t.Fatalf("call in %s: %v, want pending", rid, out)
		}
		for _, f := range graphFrames(t, url, rid) {
			if f["status"] == "awaiting_approval" {
				frames = append(frames, waiting{rid, f["id"].(string)})
			}
		}
	}
	if len(frames) != n {
		t.Fatalf("%d waiting frames, want %d: %v", len(frames), n, frames)
	}
	return frames
}

// denyTheApproval denies the one approval the gateway lists, failing
// unless there is exactly one.
func denyTheApproval(t *testing.T, url string) {
	t.Helper()
	_, list := do(t, "GET", url+"/v1/approvals", "", nil)
	id, _ := path(list, "approvals", 0, "id").(string)
	if l, _ := path(list, "approvals").([]any); id == "" || len(l) != 1 {
		t.Fatalf("approvals %v, want one", list)
	}
	if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/deny", `{"reason":"not this order"}`, nil); st != 200 {
		t.Fatalf("deny: %d %v", st, a)
	}
}

// framesNotDenied counts the frames whose graph does not show them
// refused approval_denied, logging the first three, under when.
func framesNotDenied(t *testing.T, url string, frames []waiting, when string) int {
	t.Helper()
	left := 0
	for _, w := range frames {
		for _, f := range graphFrames(t, url, w.request) {
			if f["id"] == w.frame && (f["status"] != "refused" || path(f, "error", "code") != "approval_denied") {
				if left++; left <= 3 {
					t.Logf("%s: frame %s of %s is %v %v", when, w.frame, w.request, f["status"], path(f, "error", "code"))
				}
			}
		}
	}
	return left
}
