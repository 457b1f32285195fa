package gateway

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// graphFrames returns the frames of the graph (JSON) of request rid.
func graphFrames(t *testing.T, url, rid string) []map[string]any {
	t.Helper()
	st, g := do(t, "GET", url+"/v1/requests/"+rid+"/graph", "", nil)
	if st != 200 {
		t.Fatalf("graph: %d %v", st, g)
	}
	var out []map[string]any
	for _, f := range g["frames"].([]any) {
		out = append(out, f.(map[string]any))
	}
	return out
}

// TestPendingFrameSettled: a call answered pending leaves its frame
// awaiting_approval; once its approval is approved and the call repeated
// (and ran), denied, or expired, the graph (JSON) shows what became of it,
// not a call still waiting, in the running gateway and after a restart
// (the store's audit events read back). Before, it stayed awaiting_approval.
func TestPendingFrameSettled(t *testing.T) {
	pendingFrameSettled(t, func(*testing.T) string { return "" })
}

// TestInstancesPendingFrameSettled is TestPendingFrameSettled on a
// PostgreSQL store (approvals shared by instances).
func TestInstancesPendingFrameSettled(t *testing.T) {
	pendingFrameSettled(t, func(t *testing.T) string { return "store: " + pgtest.Database(t) + "\ninstance: a\n" })
}

// pendingFrameSettled runs the cases, each on the store that store(t)
// configures (a database of its own).
func pendingFrameSettled(t *testing.T, store func(*testing.T) string) {
	for _, tc := range []struct {
		name, action string
		ttl          string
		want, code   string
	}{
		{"approved", "approve", "", "completed", ""},
		{"denied", "deny", "", "refused", "approval_denied"},
		{"expired", "", "1ns", "cancelled", "approval_expired"},
		// The stop expires the approval its request leaves: the frame
		// ends with the stop's refusal, not with the expiry's.
		{"stopped", "stop", "", "cancelled", "stopped_soft"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			yaml := store(t) + "examples: true\ndata: " + dir + "\ntools:\n  refund_order: {access: high_risk}\n"
			if tc.ttl != "" {
				yaml += "approvals: {ttl: " + tc.ttl + "}\n"
			}
			cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			g0 := g
			t.Cleanup(func() { g0.Close() }) // a second Close does nothing
			srv := serveTest(t, g)
			url := srv.URL
			body := `{"request_id":"rp32","tool_calls":[{"call_id":"c","tool":"refund_order","arguments":{"order_id":"1001","amount":20,"reason":"broken"}}]}`
			_, out := do(t, "POST", url+"/v1/calls", body, nil)
			if s := path(out, "results", 0, "status"); s != "pending" {
				t.Fatalf("first call: %v, want pending", out)
			}
			first := graphFrames(t, url, "rp32")
			if len(first) != 1 || first[0]["status"] != "awaiting_approval" {
				t.Fatalf("before the decision the graph is %v, want one frame awaiting_approval", first)
			}
			fid := first[0]["id"]
			_, list := do(t, "GET", url+"/v1/approvals", "", nil)
			id, _ := path(list, "approvals", 0, "id").(string)
			if id == "" {
				t.Fatalf("no approval: %v", list)
			}
			switch tc.action {
			case "":
			case "stop":
				if st, b := do(t, "POST", url+"/v1/requests/rp32/cancel", `{"mode":"soft","reason":"the user pressed stop"}`, nil); st != 200 {
					t.Fatalf("soft stop: %d %v", st, b)
				}
				if _, a := do(t, "GET", url+"/v1/approvals/"+id, "", nil); a["status"] != "expired" {
					t.Fatalf("after the stop the approval is %v, want it expired", a)
				}
			default:
				if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/"+tc.action, `{}`, nil); st != 200 {
					t.Fatalf("%s: %d %v", tc.action, st, a)
				}
			}
			if tc.action != "stop" {
				_, out = do(t, "POST", url+"/v1/calls", body, nil) // the agent repeats it (an expired approval asks anew)
				if tc.name == "approved" && path(out, "results", 0, "status") != "success" {
					t.Fatalf("repeated after approval: %v", out)
				}
			}
			check := func(when string) {
				t.Helper()
				var f map[string]any
				for _, x := range graphFrames(t, url, "rp32") {
					if x["id"] == fid {
						f = x
					}
				}
				if f == nil {
					t.Fatalf("%s: the first frame %v is not in the graph", when, fid)
				}
				if f["status"] != tc.want || path(f, "ended") == nil {
					t.Errorf("%s: the first frame is %v, want it %s and ended", when, f, tc.want)
				}
				if c, _ := path(f, "error", "code").(string); c != tc.code {
					t.Errorf("%s: the first frame's error code is %q, want %q: %v", when, c, tc.code, f)
				}
				if s, _ := f["summary"].(string); tc.name == "approved" && !strings.Contains(s, "ran as frame") {
					t.Errorf("%s: the first frame's summary %q names no frame that ran", when, f["summary"])
				}
			}
			check("running")
			srv.Close()
			g.Close()
			g = newTestGateway(t, cfg)
			url = serveTest(t, g).URL
			check("after a restart")
			if st, v := do(t, "GET", url+"/v1/audit/verify", "", nil); st != 200 || v["ok"] != true {
				t.Errorf("the audit chain does not verify: %d %v", st, v)
			}
		})
	}
}
