package gateway

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy/approval"
)

// TestTenantReviewerDecidesNoTenantsApproval: an approval of a request of
// no tenant (a principal whose key names none: the platform's own) is
// neither shown to a reviewer of a tenant nor decided by one, in the API
// or the UI, as that request itself is not there for the tenant's
// principals; a reviewer of no tenant decides it. Before, any tenant's
// reviewer read the call's arguments in its inbox and gave the reviewer's
// vote a high-risk call of the platform's waited for.
func TestTenantReviewerDecidesNoTenantsApproval(t *testing.T) {
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"ops":      {Principal: "ops"},
		"carol":    {Principal: "carol", Roles: []string{"reviewer"}},
		"bob@acme": {Principal: "bob", Tenant: "acme", Roles: []string{"reviewer"}},
		"ops@acme": {Principal: "ops", Tenant: "acme", Roles: []string{"reviewer"}},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\ntools:\n  refund_order: {access: high_risk}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srvURL := serveTest(t, g).URL
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	const order = "7712"
	_, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"ops-refund","tool_calls":[{"call_id":"c1","tool":"refund_order","arguments":{"order_id":"`+order+`","amount":5,"reason":"broken"}}]}`, as("ops"))
	pending := g.Approvals().List(approval.Pending)
	if len(pending) != 1 || pending[0].Tenant != "" {
		t.Fatalf("ops's refund = %v; filed %+v, want one approval of no tenant", out, pending)
	}
	id := pending[0].ID
	// The request is not there for a tenant's principal: so is its approval.
	if status, _ := rawAs(t, keys["bob@acme"], "GET", srvURL+"/v1/requests/ops-refund", ""); status != http.StatusNotFound {
		t.Fatalf("bob@acme reading ops's request = %d, want 404", status)
	}
	for _, who := range []string{"bob@acme", "ops@acme"} {
		if _, body := rawAs(t, keys[who], "GET", srvURL+"/v1/approvals", ""); strings.Contains(body, id) || strings.Contains(body, order) {
			t.Errorf("%s's GET /v1/approvals lists ops's approval: %s", who, clip(body, 300))
		}
		if status, body := rawAs(t, keys[who], "GET", srvURL+"/v1/approvals/"+id, ""); status != http.StatusNotFound || strings.Contains(body, order) {
			t.Errorf("%s's GET /v1/approvals/%s = %d %s, want 404", who, id, status, clip(body, 300))
		}
		if _, page := rawAs(t, keys[who], "GET", srvURL+"/ui/approvals", ""); strings.Contains(page, id) || strings.Contains(page, order) {
			t.Errorf("%s's inbox shows ops's approval %s", who, id)
		}
		for _, action := range []string{"approve", "deny"} {
			if status, body := rawAs(t, keys[who], "POST", srvURL+"/v1/approvals/"+id+"/"+action, `{"reason":"from acme"}`); status != http.StatusNotFound {
				t.Errorf("%s's %s of ops's approval = %d %s, want 404", who, action, status, clip(body, 300))
			}
			postForm(t, keys[who], srvURL+"/ui/approvals/"+id+"/"+action, url.Values{"reason": {"from acme"}})
			if a, _ := g.Approvals().Get(id); a.Status != approval.Pending || len(a.Votes) != 0 {
				t.Fatalf("after %s's %s: %s with votes %+v, want pending without votes", who, action, a.Status, a.Votes)
			}
		}
	}
	// A reviewer of no tenant decides it, with its user.
	if status, body := rawAs(t, keys["carol"], "POST", srvURL+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); status != http.StatusOK {
		t.Fatalf("carol's approval = %d %s, want 200", status, clip(body, 300))
	}
	if status, body := rawAs(t, keys["ops"], "POST", srvURL+"/v1/approvals/"+id+"/approve", ""); status != http.StatusOK {
		t.Fatalf("ops's approval = %d %s, want 200", status, clip(body, 300))
	}
	if a, _ := g.Approvals().Get(id); a.Status != approval.Approved || len(a.Votes) != 2 {
		t.Errorf("after carol's and ops's approvals: %s with votes %+v, want approved by both", a.Status, a.Votes)
	}
}

// TestAgentCardBehindTLSProxy: reach serves plain HTTP, so a gateway others
// reach over the network sits behind a proxy that ends TLS and says so
// (X-Forwarded-Proto, Forwarded). The card reach serves for an agent names
// the address its callers send their messages to, with their key: that
// address is https then, as the card was asked for. Before, it was
// http://HOST/a2a/NAME whatever the proxy said, and an A2A client that
// follows the card (the SDKs do) sent its API key or token in the clear.
// A card asked for over plain HTTP with no such header still names http.
func TestAgentCardBehindTLSProxy(t *testing.T) {
	// With auth: a gateway that authenticates nobody answers loopback
	// hosts only.
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := ks.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	up := executorUpstream(t, "echoes", echoAgent{})
	// The proxy passes its Host on: the operator lists it (a card at a
	// Host reach does not know is refused, TestSec37A2ACardHost).
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\nagents:\n  - {name: executor, url: "+up.URL+"}\na2a: {hosts: [gw.example.com]}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, newTestGateway(t, cfg)).URL
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   string
	}{
		{"X-Forwarded-Proto", map[string]string{"X-Forwarded-Proto": "https"}, "https://gw.example.com/a2a/executor"},
		{"X-Forwarded-Proto of two proxies", map[string]string{"X-Forwarded-Proto": "https, http"}, "https://gw.example.com/a2a/executor"},
		{"Forwarded", map[string]string{"Forwarded": `for=192.0.2.60;proto=https;by=203.0.113.43`}, "https://gw.example.com/a2a/executor"},
		{"Forwarded quoted", map[string]string{"Forwarded": `for="[2001:db8:cafe::17]:4711";Proto="HTTPS"`}, "https://gw.example.com/a2a/executor"},
		{"plain", nil, "http://gw.example.com/a2a/executor"},
		{"forwarded http", map[string]string{"X-Forwarded-Proto": "http"}, "http://gw.example.com/a2a/executor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+"/a2a/executor/.well-known/agent-card.json", nil)
			req.Host = "gw.example.com"
			req.Header.Set("Authorization", "Bearer "+key)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var card struct {
				URL        string `json:"url"`
				Interfaces []struct {
					URL string `json:"url"`
				} `json:"supportedInterfaces"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the card: %d %v", resp.StatusCode, err)
			}
			if len(card.Interfaces) == 0 {
				t.Fatal("the card names no interface")
			}
			for _, u := range append([]string{card.URL}, card.Interfaces[0].URL) {
				if u != tc.want {
					t.Errorf("the card sends messages to %q, want %q", u, tc.want)
				}
			}
		})
	}
}
