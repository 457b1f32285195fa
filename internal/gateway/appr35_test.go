package gateway

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestFramesPastMaxRootsSettledRunning: an approval waited for in more
// requests than its stored record lists (256: the call asked again, by
// its idempotency key, in 300 requests) ends the frame of every one of
// them once denied, in the running gateway. Before, the frames of the
// requests past the 256th stayed awaiting_approval until their graphs
// were read back from the store.
func TestFramesPastMaxRootsSettledRunning(t *testing.T) {
	const n = 300
	yaml := "examples: true\ndata: " + t.TempDir() + "\ntools:\n  refund_order: {access: high_risk}\n"
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	url := srv.URL
	var frames []waiting
	for i := range n {
		rid := fmt.Sprintf("rm35-%d", i)
		body := `{"request_id":"` + rid + `","tool_calls":[{"call_id":"c","tool":"refund_order","idempotency_key":"k35",` +
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
		t.Fatalf("%d waiting frames, want %d", len(frames), n)
	}
	_, list := do(t, "GET", url+"/v1/approvals", "", nil)
	id, _ := path(list, "approvals", 0, "id").(string)
	if l, _ := path(list, "approvals").([]any); id == "" || len(l) != 1 {
		t.Fatalf("approvals %v, want one", list)
	}
	if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/deny", `{"reason":"not this order"}`, nil); st != 200 {
		t.Fatalf("deny: %d %v", st, a)
	}
	left := 0
	for _, w := range frames {
		for _, f := range graphFrames(t, url, w.request) {
			if f["id"] == w.frame && (f["status"] != "refused" || path(f, "error", "code") != "approval_denied") {
				if left++; left <= 3 {
					t.Logf("frame %s of %s is %v %v", w.frame, w.request, f["status"], path(f, "error", "code"))
				}
			}
		}
	}
	if left > 0 {
		t.Errorf("%d of the %d frames that waited for the denied approval are not refused approval_denied", left, n)
	}
}
