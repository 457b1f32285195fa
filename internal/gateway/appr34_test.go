package gateway

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// TestManyPendingFramesSettled: an approval waited for by more frames
// than it once kept (16: the call asked again, by its idempotency key, in
// 20 requests) ends every one of them once denied, in the running gateway
// and after a restart. Before, the frames past the 16th stayed
// awaiting_approval for ever.
func TestManyPendingFramesSettled(t *testing.T) {
	manyPendingFramesSettled(t, func(*testing.T) string { return "" })
}

// TestInstancesManyPendingFramesSettled is TestManyPendingFramesSettled on
// a PostgreSQL store.
func TestInstancesManyPendingFramesSettled(t *testing.T) {
	manyPendingFramesSettled(t, func(t *testing.T) string { return "store: " + pgtest.Database(t) + "\ninstance: a\n" })
}

func manyPendingFramesSettled(t *testing.T, store func(*testing.T) string) {
	const n = 20
	yaml := store(t) + "examples: true\ndata: " + t.TempDir() + "\ntools:\n  refund_order: {access: high_risk}\n"
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	url := srv.URL
	var frames []waiting
	for i := range n {
		rid := fmt.Sprintf("rm34-%d", i)
		body := `{"request_id":"` + rid + `","tool_calls":[{"call_id":"c","tool":"refund_order","idempotency_key":"k34",` +
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
		t.Fatalf("waiting frames %v, want %d", frames, n)
	}
	_, list := do(t, "GET", url+"/v1/approvals", "", nil)
	id, _ := path(list, "approvals", 0, "id").(string)
	if l, _ := path(list, "approvals").([]any); id == "" || len(l) != 1 {
		t.Fatalf("approvals %v, want one", list)
	}
	if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/deny", `{"reason":"not this order"}`, nil); st != 200 {
		t.Fatalf("deny: %d %v", st, a)
	}
	check := func(when string) {
		t.Helper()
		left := 0
		for _, w := range frames {
			for _, f := range graphFrames(t, url, w.request) {
				if f["id"] == w.frame && (f["status"] != "refused" || path(f, "error", "code") != "approval_denied") {
					left++
					t.Logf("%s: frame %s of %s is %v %v", when, w.frame, w.request, f["status"], path(f, "error", "code"))
				}
			}
		}
		if left > 0 {
			t.Errorf("%s: %d of the %d frames that waited for the denied approval are not refused approval_denied", when, left, n)
		}
	}
	check("running")
	srv.Close()
	g.Close()
	g = newTestGateway(t, cfg)
	srv = serveTest(t, g)
	url = srv.URL
	check("after a restart")
}
