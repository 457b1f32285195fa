package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestBreakerRefusalKeepsTheLastFailureToItsOwner: a tool's breaker opened
// by one principal's failing calls refuses everyone's calls at once, and
// its refusal told every caller what the last failed call said: there,
// alice@acme's account, which the tool's error named, reached alice of
// tenant globex and bob of her own tenant (what their model reads, and
// the API's answer). The breaker's error is one tenant's call's, as
// /healthz and the tools page already kept it for a global operator. Now
// the refusal says what the last failure was to the principal whose call
// it was, in its tenant, and to anyone else that the tool fails, since
// when and how often, not what it said.
func TestBreakerRefusalKeepsTheLastFailureToItsOwner(t *testing.T) {
	g, srvURL, keys := tenantGateway(t)
	const account = "ACME-ACCT-77310"
	g.rt.MustRegister(reach.Tool{Name: "crm_lookup", Access: reach.Read, Retry: &reach.RetryPolicy{Attempts: 1},
		Breaker: &reach.BreakerPolicy{Failures: 2, OpenFor: time.Hour},
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			var in struct {
				Account string `json:"account"`
			}
			json.Unmarshal(args, &in)
			return nil, &reach.ToolError{Type: "unavailable", Message: "the CRM timed out looking up account " + in.Account}
		}})
	call := func(who, request, id string) string {
		t.Helper()
		status, out := do(t, "POST", srvURL+"/v1/calls",
			fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":%q,"tool":"crm_lookup","arguments":{"account":%q}}]}`, request, id, account),
			map[string]string{"Authorization": "Bearer " + keys[who]})
		b, _ := json.Marshal(out)
		if status != 200 || path(out, "results", 0, "status") != "error" {
			t.Fatalf("%s's call: %d %s, want 200 and the call failed", who, status, b)
		}
		return string(b)
	}
	for i := range 2 {
		if answer := call("alice@acme", "acme-crm", fmt.Sprintf("c%d", i)); !strings.Contains(answer, account) {
			t.Fatalf("alice@acme's failed call does not say what failed: %s", answer)
		}
	}
	var open bool
	for _, b := range g.rt.Breakers() {
		open = open || b.Kind == reach.BreakerTool && b.Name == "crm_lookup" && b.State == reach.BreakerOpen
	}
	if !open {
		t.Fatalf("crm_lookup's breaker is not open after two failures: %+v", g.rt.Breakers())
	}
	for _, who := range []string{"alice@globex", "bob@acme"} {
		answer := call(who, "other-"+strings.ReplaceAll(who, "@", "-"), "c1")
		if !strings.Contains(answer, "breaker_open") || !strings.Contains(answer, "2 failures in a row") {
			t.Errorf("%s's call: %s, want the breaker's refusal", who, answer)
		}
		if strings.Contains(answer, account) || strings.Contains(answer, "timed out") {
			t.Errorf("%s's call is told what alice@acme's failed call said: %s", who, answer)
		}
	}
	if answer := call("alice@acme", "acme-crm-2", "c1"); !strings.Contains(answer, "breaker_open") || !strings.Contains(answer, "the last failure: ") || !strings.Contains(answer, account) {
		t.Errorf("alice@acme's call: %s, want the breaker's refusal with her last failure", answer)
	}
}
