package gateway

import (
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// TestPendingFramesSettledAfterRestart: an approval waited for by several
// frames (the call asked again while it was pending, in its request and in
// another one by the same idempotency key) ends every one of them as its
// decision says, whether the gateway restarted before the decision, after
// it, or both: refused saying who denied it and why, or completed naming
// the frame that ran. Before, only the frame its audit event named was
// settled after a restart (the others stayed awaiting_approval), a frame
// of another request was never settled, and a denial read back named
// nobody.
func TestPendingFramesSettledAfterRestart(t *testing.T) {
	pendingFramesSettled(t, func(*testing.T) string { return "" })
}

// TestInstancesPendingFramesSettledAfterRestart is
// TestPendingFramesSettledAfterRestart on a PostgreSQL store.
func TestInstancesPendingFramesSettledAfterRestart(t *testing.T) {
	pendingFramesSettled(t, func(t *testing.T) string { return "store: " + pgtest.Database(t) + "\ninstance: a\n" })
}

func pendingFramesSettled(t *testing.T, store func(*testing.T) string) {
	for _, tc := range []struct {
		name, action string
		restartFirst bool
		want, code   string
	}{
		{"denied after a restart", "deny", true, "refused", "approval_denied"},
		{"denied before a restart", "deny", false, "refused", "approval_denied"},
		{"approved after a restart", "approve", true, "completed", ""},
		{"approved before a restart", "approve", false, "completed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := store(t) + "examples: true\ndata: " + t.TempDir() + "\ntools:\n  refund_order: {access: high_risk}\n"
			cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g := newTestGateway(t, cfg)
			srv := serveTest(t, g)
			url := srv.URL
			restart := func() {
				srv.Close()
				g.Close()
				g = newTestGateway(t, cfg)
				srv = serveTest(t, g)
				url = srv.URL
			}
			call := func(rid string) map[string]any {
				t.Helper()
				body := `{"request_id":"` + rid + `","tool_calls":[{"call_id":"c","tool":"refund_order","idempotency_key":"k33",` +
					`"arguments":{"order_id":"1001","amount":20,"reason":"broken"}}]}`
				_, out := do(t, "POST", url+"/v1/calls", body, nil)
				return out
			}
			// The waiting frames: two in ra33, one in rb33 (the same key).
			var frames []waiting
			for _, rid := range []string{"ra33", "rb33", "ra33"} {
				if out := call(rid); path(out, "results", 0, "status") != "pending" {
					t.Fatalf("call in %s: %v, want pending", rid, out)
				}
				for _, f := range graphFrames(t, url, rid) {
					id, _ := f["id"].(string)
					if f["status"] == "awaiting_approval" && !containsWaiting(frames, rid, id) {
						frames = append(frames, waiting{rid, id})
					}
				}
			}
			if len(frames) != 3 {
				t.Fatalf("waiting frames %v, want 3", frames)
			}
			_, list := do(t, "GET", url+"/v1/approvals", "", nil)
			id, _ := path(list, "approvals", 0, "id").(string)
			if n := len(path(list, "approvals").([]any)); id == "" || n != 1 {
				t.Fatalf("approvals %v, want one", list)
			}
			if tc.restartFirst {
				restart()
				// Read back before the decision (the graphs kept as they
				// are), the frames still wait: the decision ends them there.
				for _, w := range frames {
					for _, f := range graphFrames(t, url, w.request) {
						if f["id"] == w.frame && f["status"] != "awaiting_approval" {
							t.Fatalf("after a restart, before the decision, frame %s of %s is %v", w.frame, w.request, f)
						}
					}
				}
			}
			if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/"+tc.action, `{"reason":"not this order"}`, nil); st != 200 {
				t.Fatalf("%s: %d %v", tc.action, st, a)
			}
			ran := ""
			if tc.action == "approve" {
				if out := call("ra33"); path(out, "results", 0, "status") != "success" {
					t.Fatalf("repeated after approval: %v", out)
				}
				for _, f := range graphFrames(t, url, "ra33") {
					if f["status"] == "completed" && !containsWaiting(frames, "ra33", f["id"].(string)) {
						ran = f["id"].(string)
					}
				}
				if ran == "" {
					t.Fatalf("no frame ran the approved call: %v", graphFrames(t, url, "ra33"))
				}
			}
			check := func(when string) {
				t.Helper()
				for _, w := range frames {
					var f map[string]any
					for _, x := range graphFrames(t, url, w.request) {
						if x["id"] == w.frame {
							f = x
						}
					}
					if f == nil {
						t.Fatalf("%s: frame %s is not in the graph of %s", when, w.frame, w.request)
					}
					if f["status"] != tc.want || path(f, "ended") == nil {
						t.Errorf("%s: frame %s of %s is %v, want it %s and ended", when, w.frame, w.request, f, tc.want)
						continue
					}
					if c, _ := path(f, "error", "code").(string); c != tc.code {
						t.Errorf("%s: frame %s of %s has error code %q, want %q: %v", when, w.frame, w.request, c, tc.code, f)
					}
					if m, _ := path(f, "error", "message").(string); tc.code == "approval_denied" &&
						(!strings.Contains(m, " by ") || !strings.Contains(m, "not this order")) {
						t.Errorf("%s: frame %s of %s: the denial %q says not who denied it and why", when, w.frame, w.request, m)
					}
					if s, _ := f["summary"].(string); tc.action == "approve" && !strings.Contains(s, "ran as frame "+ran) {
						t.Errorf("%s: frame %s of %s: summary %q names not the frame that ran (%s)", when, w.frame, w.request, s, ran)
					}
				}
			}
			check("running")
			restart()
			check("after a restart")
			if st, v := do(t, "GET", url+"/v1/audit/verify", "", nil); st != 200 || v["ok"] != true {
				t.Errorf("the audit chain does not verify: %d %v", st, v)
			}
		})
	}
}

// waiting is a frame awaiting approval, and its request.
type waiting struct{ request, frame string }

func containsWaiting(ws []waiting, request, frame string) bool {
	for _, w := range ws {
		if w.request == request && w.frame == frame {
			return true
		}
	}
	return false
}
