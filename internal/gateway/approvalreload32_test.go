package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy"
)

// TestApprovalAsksWhatThePoliciesInForceAsk: an approval asked while the
// policies wanted the user's alone, and then the policies changed to want
// a reviewer's too, lets the call through only once a reviewer approves
// as well: the call is decided by the policies in force when it comes
// again, not by those of when it was first asked. Before, the user's
// approval alone let the call through.
func TestApprovalAsksWhatThePoliciesInForceAsk(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.cedar")
	os.WriteFile(polFile, policy.DefaultSource(), 0o600)
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	alice, _, err := ks.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := ks.Create(auth.KeySpec{Principal: "bob", Roles: []string{"reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\npolicy: {path: "+polFile+
		"}\ntools:\n  refund_order: {access: write}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	as := map[string]string{"Authorization": "Bearer " + alice}
	body := `{"request_id":"r32","tool_calls":[{"call_id":"c","tool":"refund_order","arguments":{"order_id":"1001","amount":500,"reason":"broken"}}]}`
	_, out := do(t, "POST", url+"/v1/calls", body, as)
	_, list := do(t, "GET", url+"/v1/approvals?status=pending", "", as)
	id, _ := path(list, "approvals", 0, "id").(string)
	if id == "" {
		t.Fatalf("no approval asked: %v", out)
	}
	stricter, err := policy.Parse(policy.Source{Name: "policy.cedar", Text: append(policy.DefaultSource(), bigRefunds...)})
	if err != nil {
		t.Fatal(err)
	}
	g.policy.Replace(stricter)
	if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/approve", `{}`, as); st != 200 {
		t.Fatalf("alice approves: %d %v", st, a)
	}
	_, out = do(t, "POST", url+"/v1/calls", body, as)
	if s := path(out, "results", 0, "status"); s != "pending" {
		t.Fatalf("the refund of 500 is %v on the user's approval alone, where the policies in force ask a reviewer's too: %v", s, out)
	}
	_, a := do(t, "GET", url+"/v1/approvals/"+id, "", as)
	if path(a, "requires") != "user+reviewer" || path(a, "status") != "pending" {
		t.Errorf("the approval is %v, want it pending, waiting for a reviewer too", a)
	}
	if st, a := do(t, "POST", url+"/v1/approvals/"+id+"/approve", `{}`, map[string]string{"Authorization": "Bearer " + bob}); st != 200 {
		t.Fatalf("bob approves: %d %v", st, a)
	}
	_, out = do(t, "POST", url+"/v1/calls", body, as)
	if g := path(out, "results", 0, "error", "guard"); g != "execute" {
		t.Errorf("after the reviewer's approval the refund was %v, want it run (its tool refuses the amount): %v", g, out)
	}
}

const bigRefunds = `
@id("big-refunds")
@approval("user+reviewer")
permit (principal, action, resource == Reach::Tool::"refund_order")
when { principal.authenticated && context.arguments.amount > 100 };
`
