package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
)

// permitAllTenantGateway serves a gateway with API keys of alice in
// tenants acme and globex, under a policy that permits every call without
// approval.
func permitAllTenantGateway(t *testing.T) (g *Gateway, srvURL string, keys map[string]string) {
	t.Helper()
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for name, spec := range map[string]auth.KeySpec{"alice@acme": {Principal: "alice", Tenant: "acme"}, "alice@globex": {Principal: "alice", Tenant: "globex"}} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte("permit(principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g = newTestGateway(t, cfg)
	return g, serveTest(t, g).URL, keys
}

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

// TestDeadlockRefusalNamesNoOtherOwnersRequest: two requests whose writes
// would deadlock (each holds an account and writes the other's from inside
// its write) get the deadlock refusal, which named the request that holds
// the entity: there, another tenant's request, whose id its client chose
// (a conversation's, a customer's). The refusal names a request of the
// caller's own only; of another principal it says so, without its id.
func TestDeadlockRefusalNamesNoOtherOwnersRequest(t *testing.T) {
	g, srvURL, keys := permitAllTenantGateway(t)
	inA, inB := make(chan struct{}), make(chan struct{})
	g.rt.MustRegister(reach.Tool{Name: "transfer", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"account:{from}"}, Timeout: time.Minute,
		Func: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			var a struct{ From, To string }
			json.Unmarshal(raw, &a)
			if a.To == "" {
				return json.RawMessage(`"ok"`), nil
			}
			if a.From == "x" {
				close(inA)
				<-inB
			} else {
				close(inB)
				<-inA
			}
			// Each now writes the other's account from inside its own write.
			res := g.rt.Call(ctx, &reach.Call{ID: "inner-" + a.From, Tool: "transfer", Arguments: json.RawMessage(fmt.Sprintf(`{"from":%q}`, a.To))})
			if res.IsError() {
				return nil, res.Err()
			}
			return res.Data, nil
		}})
	type run struct{ who, request, from, to string }
	runs := []run{{"alice@acme", "acme-customer-4711", "x", "y"}, {"alice@globex", "globex-customer-0815", "y", "x"}}
	answers := make([]string, len(runs))
	done := make(chan int)
	for i, r := range runs {
		go func() {
			status, out := do(t, "POST", srvURL+"/v1/calls",
				fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"t","tool":"transfer","arguments":{"from":%q,"to":%q}}]}`, r.request, r.from, r.to),
				map[string]string{"Authorization": "Bearer " + keys[r.who]})
			b, _ := json.Marshal(out)
			answers[i] = fmt.Sprint(status, " ", string(b))
			done <- i
		}()
	}
	<-done
	<-done
	deadlocks := 0
	for i, a := range answers {
		if !strings.Contains(a, "would deadlock") {
			continue
		}
		deadlocks++
		other := runs[1-i].request
		if strings.Contains(a, other) || strings.Contains(a, "customer-") && !strings.Contains(a, runs[i].request) {
			t.Errorf("%s's refusal names %s's request: %s", runs[i].who, runs[1-i].who, a)
		}
		if !strings.Contains(a, "another principal") {
			t.Errorf("%s's refusal does not say whose request holds the account: %s", runs[i].who, a)
		}
	}
	if deadlocks != 1 {
		t.Fatalf("answers: %q; want one deadlock", answers)
	}
}
