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

// TestParentFrameOfAnotherTenantNamesNoRequest: a frame id is no secret
// (the time and a count: the next call's is one more) and a call may name
// any as its parent (Reach-Parent, or the span of a traceparent). Naming
// another tenant's answered 403 "Request <its id> belongs to another
// principal": the frame ids around one's own gave away the ids of the
// other tenants' requests running or kept, reach's 80 random bits and the
// names clients chose alike. A frame of another principal is answered as
// a frame that is not there.
func TestParentFrameOfAnotherTenantNamesNoRequest(t *testing.T) {
	g, srvURL, keys := permitAllTenantGateway(t)
	g.rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	const secretID = "acme-merger-talks-4711"
	call := func(who, body string, header map[string]string) (int, string) {
		t.Helper()
		h := map[string]string{"Authorization": "Bearer " + keys[who]}
		for k, v := range header {
			h[k] = v
		}
		status, out := do(t, "POST", srvURL+"/v1/calls", body, h)
		b, _ := json.Marshal(out)
		return status, string(b)
	}
	status, answer := call("alice@acme", `{"request_id":"`+secretID+`","tool_calls":[{"call_id":"c1","tool":"lookup","arguments":{"q":"x"}}]}`, nil)
	var out struct {
		Results []struct{ Frame string } `json:"results"`
	}
	if json.Unmarshal([]byte(answer), &out); status != 200 || len(out.Results) != 1 || out.Results[0].Frame == "" {
		t.Fatalf("alice@acme's call: %d %s", status, answer)
	}
	frame := out.Results[0].Frame
	absent := strings.Repeat("7", 16) // a frame no request has
	const body = `{"tool_calls":[{"call_id":"c1","tool":"lookup","arguments":{"q":"y"}}]}`
	const named = `{"request_id":"globex-own","tool_calls":[{"call_id":"c1","tool":"lookup","arguments":{"q":"y"}}]}`
	for _, c := range []struct {
		name, body string
		header     func(frame string) map[string]string
	}{
		{"Reach-Parent", body, func(f string) map[string]string { return map[string]string{"Reach-Parent": f} }},
		{"Reach-Parent in a request of its own", named, func(f string) map[string]string { return map[string]string{"Reach-Parent": f} }},
		{"traceparent", body, func(f string) map[string]string {
			return map[string]string{"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-" + f + "-01"}
		}},
	} {
		status, answer := call("alice@globex", c.body, c.header(frame))
		if strings.Contains(answer, secretID) || strings.Contains(answer, "another principal") {
			t.Errorf("%s of alice@acme's frame: alice@globex is told of her request: %d %s", c.name, status, answer)
		}
		// As a frame that is not there: the same status and code.
		wantStatus, want := call("alice@globex", c.body, c.header(absent))
		var got, was struct {
			Error struct{ Code string } `json:"error"`
		}
		json.Unmarshal([]byte(answer), &got)
		json.Unmarshal([]byte(want), &was)
		if status != wantStatus || got.Error.Code != was.Error.Code {
			t.Errorf("%s of alice@acme's frame: %d %s; of a frame that is not there: %d %s", c.name, status, answer, wantStatus, want)
		}
	}
	// Her own frame is hers to name.
	if status, answer := call("alice@acme", body, map[string]string{"Reach-Parent": frame}); status != 200 || !strings.Contains(answer, secretID) {
		t.Errorf("alice@acme naming her own frame: %d %s, want the call in her request", status, answer)
	}
}

// TestParentFrameOnAnotherInstanceNamesNoRequest: the same of a frame
// that another instance holds (found in the shared store): eve of globex
// naming the frame of alice's call on the other instance was answered 403
// "Request <alice's id> belongs to another principal". Now as a frame no
// instance knows.
func TestParentFrameOnAnotherInstanceNamesNoRequest(t *testing.T) {
	a, b, _, keys := tenantInstances(t)
	const secretID = "acme-merger-talks-0042"
	status, out := do(t, "POST", a+"/v1/calls", `{"request_id":"`+secretID+`","tool_calls":[{"call_id":"c1","tool":"up__echo","arguments":{"text":"hi"}}]}`,
		map[string]string{"Authorization": "Bearer " + keys["alice"]})
	frame, _ := path(out, "results", 0, "frame").(string)
	if status != 200 || frame == "" {
		t.Fatalf("alice on a: %d %v", status, out)
	}
	eve := func(parent string) (int, string) {
		status, out := do(t, "POST", b+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"up__echo","arguments":{"text":"hi"}}]}`,
			map[string]string{"Authorization": "Bearer " + keys["eve"], "Reach-Parent": parent})
		return status, fmt.Sprint(out)
	}
	status, answer := eve(frame)
	if strings.Contains(answer, secretID) || strings.Contains(answer, "another principal") {
		t.Errorf("eve naming alice's frame on the other instance is told of her request: %d %s", status, answer)
	}
	if wantStatus, want := eve(strings.Repeat("7", 16)); status != wantStatus || !strings.Contains(answer, "unknown_parent") {
		t.Errorf("eve naming alice's frame: %d %s; a frame no instance knows: %d %s", status, answer, wantStatus, want)
	}
}
