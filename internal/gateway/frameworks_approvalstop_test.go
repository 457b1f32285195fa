package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestFrameworksSoftStopWhileApprovalWaits: OpenAI Agents, the AI SDK and
// LangGraph on their defaults, whose refund waits for approval
// (approvals.wait), are soft-stopped (the UI's "stop after the running
// calls"). The wait ends with the stop: the call ends with it where it
// waited (cancelled, guard authorize), the refund never runs, and the next model call
// is refused, 403, so the run ends. Before, the wait ran out first (30 s
// here, as long as approvals.wait says), and the call was refused only
// then, as it would have started (guard execute). The stop expires the
// approval too, and the frame says stopped_soft whichever of the two
// settles it first (TestStopWinsOverApprovalExpiry drives the order in
// which CI once saw it end approval_expired here).
func TestFrameworksSoftStopWhileApprovalWaits(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	for _, fw := range []string{"openai-agents", "ai-sdk", "langgraph"} {
		t.Run(fw, func(t *testing.T) {
			s := newShop(t, "")
			done := make(chan agentRun, 1)
			go func() { done <- runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "approve", nil) }()
			id := pendingApproval(t, s.url, done)
			_, b := do(t, "GET", s.url+"/v1/approvals/"+id, "", nil)
			req, _ := path(b, "request").(string)
			if req == "" {
				t.Fatalf("approval %s names no request: %v", id, b)
			}
			if code, b := do(t, "POST", s.url+"/v1/requests/"+req+"/cancel", `{"mode":"soft","reason":"the user pressed stop"}`, nil); code != 200 {
				t.Fatalf("soft stop: %d %v", code, b)
			}
			start := time.Now()
			r := <-done
			t.Logf("the run ended %v after the stop: %+v", time.Since(start).Round(time.Millisecond), r)
			if r.OK || !strings.Contains(r.Error, "stopped (soft)") {
				t.Errorf("the run after the stop: %+v, want it ended by the stop", r)
			}
			if n := s.up.called("refund"); n != 0 {
				t.Errorf("%d refunds ran after the stop", n)
			}
			if st := s.wire.statuses(); len(st) != 2 || st[1] != http.StatusForbidden {
				t.Errorf("model calls answered %v, want the turn that chose the refund and one 403", st)
			}
			var refund *reach.Frame
			for _, q := range s.g.rt.Requests() {
				for _, f := range q.Frames() {
					if f.Name == "up__refund" {
						refund = f
					}
				}
			}
			if refund == nil {
				t.Fatal("no refund call in the gateway")
			}
			if e := refund.Err(); refund.State() != reach.Cancelled || e == nil || e.Code != "stopped_soft" || e.Guard != "authorize" {
				t.Errorf("the refund is %v with %+v; want it ended by the stop where it waited for approval (guard authorize)", refund.State(), e)
			}
		})
	}
}
