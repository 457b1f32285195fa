package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
)

// TestWaitingEndsWithItsApproval: a request whose call was answered
// "pending" is waiting_for_approval (in GET /v1/requests, its filter and
// GET /v1/requests/{id}) while its approval waits, and no longer once the
// approval is decided: approved and used, or denied.
func TestWaitingEndsWithItsApproval(t *testing.T) {
	g := newTestGateway(t, &config.Config{Tools: map[string]config.ToolOverride{"refund_order": {Access: reach.HighRisk}}})
	srv := serveTest(t, g)
	refund := func(req, call string) string {
		t.Helper()
		_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"`+req+`","tool_calls":[{"call_id":"`+call+`","tool":"refund_order","arguments":{"order_id":"1001","amount":1,"reason":"broken"}}]}`, nil)
		s, _ := path(out, "results", 0, "status").(string)
		return s
	}
	activity := func(req string) string {
		t.Helper()
		_, out := do(t, "GET", srv.URL+"/v1/requests/"+req, "", nil)
		a, _ := out["activity"].(string)
		return a
	}
	waiting := func() map[string]bool {
		t.Helper()
		_, out := do(t, "GET", srv.URL+"/v1/requests?state=waiting_for_approval", "", nil)
		m := map[string]bool{}
		rs, _ := out["requests"].([]any)
		for _, r := range rs {
			m[r.(map[string]any)["id"].(string)] = true
		}
		return m
	}
	approvalOf := func(req string) string {
		t.Helper()
		for _, a := range g.Approvals().List("pending") {
			if a.Request == req {
				return a.ID
			}
		}
		t.Fatalf("no pending approval of %s", req)
		return ""
	}
	gauge := func() string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, `reach_requests_active{state="waiting_for_approval"}`) {
				return strings.Fields(l)[1]
			}
		}
		return "0"
	}
	for _, req := range []string{"yes", "no"} {
		if s := refund(req, "c1"); s != "pending" {
			t.Fatalf("%s: first call %s, want pending", req, s)
		}
		if a := activity(req); a != "waiting_for_approval" {
			t.Errorf("%s: activity %q while its approval waits, want waiting_for_approval", req, a)
		}
	}
	if w := waiting(); !w["yes"] || !w["no"] {
		t.Errorf("state=waiting_for_approval lists %v, want yes and no", w)
	}
	if n := gauge(); n != "2" {
		t.Errorf("reach_requests_active{state=waiting_for_approval} = %s while two approvals wait, want 2", n)
	}

	if st, out := do(t, "POST", srv.URL+"/v1/approvals/"+approvalOf("yes")+"/approve", `{}`, nil); st != 200 {
		t.Fatalf("approve: %d %v", st, out)
	}
	if s := refund("yes", "c2"); s != "success" {
		t.Fatalf("approved call %s, want success", s)
	}
	if st, out := do(t, "POST", srv.URL+"/v1/approvals/"+approvalOf("no")+"/deny", `{"reason":"not today"}`, nil); st != 200 {
		t.Fatalf("deny: %d %v", st, out)
	}
	for _, req := range []string{"yes", "no"} {
		if a := activity(req); a != "idle" {
			t.Errorf("%s: activity %q once its approval was decided, want idle", req, a)
		}
	}
	if w := waiting(); len(w) != 0 {
		t.Errorf("state=waiting_for_approval lists %v once every approval was decided, want none", w)
	}
	if n := gauge(); n != "0" {
		t.Errorf("reach_requests_active{state=waiting_for_approval} = %s once every approval was decided, want 0", n)
	}
}
