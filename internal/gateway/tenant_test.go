package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
)

// tenantGateway serves a gateway with API keys for two principals of the
// same names in two tenants: alice@acme, alice@globex, bob@acme (a
// reviewer) and bob@globex (no roles). refund_order is high risk.
func tenantGateway(t *testing.T) (g *Gateway, srvURL string, keys map[string]string) {
	t.Helper()
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
		"bob@acme":     {Principal: "bob", Tenant: "acme", Roles: []string{"reviewer"}},
		"bob@globex":   {Principal: "bob", Tenant: "globex"},
	} {
		secret, _, err := ks.Create(spec)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = secret
	}
	cfg, err := ParseConfig([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\ntools:\n  refund_order: {access: high_risk}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g = newTestGateway(t, cfg)
	return g, serveTest(t, g).URL, keys
}

// postForm posts a UI form with key and returns the status and where it
// redirects to (redirects are not followed).
func postForm(t *testing.T, key, u string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+key)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// hookBody calls before on its first read, then reads r.
type hookBody struct {
	before func()
	r      io.Reader
}

func (b *hookBody) Read(p []byte) (int, error) {
	if f := b.before; f != nil {
		b.before = nil
		f()
	}
	return b.r.Read(p)
}

// uiRequest makes an HTTP request for the UI's handler as id.
func uiRequest(method, target string, body io.Reader, id *auth.Identity) *http.Request {
	r := httptest.NewRequest(method, target, body)
	if body != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return r.WithContext(auth.WithIdentity(r.Context(), id))
}

// TestUIApprovalTenant: the UI's inbox acts as the identity that signs
// in, not as another identity of the same principal name: bob@globex may
// neither see nor decide tenant acme's approval, even after bob@acme (a
// reviewer) used the inbox; bob@acme may.
func TestUIApprovalTenant(t *testing.T) {
	g, srvURL, keys := tenantGateway(t)
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	status, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"acme-refund","tool_calls":[{"call_id":"c1","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"broken"}}]}`, as("alice@acme"))
	pending := g.Approvals().List(approval.Pending)
	if len(pending) != 1 {
		t.Fatalf("alice@acme's refund = %d %v; %d pending approvals, want 1", status, out, len(pending))
	}
	id := pending[0].ID
	// bob@acme, a reviewer, has the inbox open.
	if _, page := rawAs(t, keys["bob@acme"], "GET", srvURL+"/ui/approvals", ""); !strings.Contains(page, id) {
		t.Fatalf("bob@acme's inbox does not show %s", id)
	}
	if _, page := rawAs(t, keys["bob@globex"], "GET", srvURL+"/ui/approvals", ""); strings.Contains(page, id) {
		t.Errorf("bob@globex's inbox shows tenant acme's approval %s", id)
	}
	bobAcme := &auth.Identity{Principal: "bob", Tenant: "acme", Roles: []string{"reviewer"}}
	bobGlobex := &auth.Identity{Principal: "bob", Tenant: "globex"}
	for _, action := range []string{"approve", "deny"} {
		postForm(t, keys["bob@globex"], srvURL+"/ui/approvals/"+id+"/"+action, url.Values{"reason": {"globex"}})
		// The same while bob@acme's inbox refreshes (as /ui/live makes it
		// do every half second) in the middle of bob@globex's post: here,
		// when the UI reads the form (the UI's own handler, which reads
		// the body itself).
		body := &hookBody{r: strings.NewReader("reason=globex"), before: func() {
			g.ui.ServeHTTP(httptest.NewRecorder(), uiRequest("GET", "/ui/approvals", nil, bobAcme))
		}}
		g.ui.ServeHTTP(httptest.NewRecorder(), uiRequest("POST", "/ui/approvals/"+id+"/"+action, body, bobGlobex))
		if a, _ := g.Approvals().Get(id); a.Status != approval.Pending || len(a.Votes) != 0 {
			t.Fatalf("after bob@globex's %s from the UI: %s with votes %+v, want pending without votes", action, a.Status, a.Votes)
		}
	}
	if status, _ := postForm(t, keys["bob@acme"], srvURL+"/ui/approvals/"+id+"/approve", url.Values{"reason": {"fine"}}); status != http.StatusSeeOther {
		t.Errorf("bob@acme approving from the UI = %d, want 303", status)
	}
	if a, _ := g.Approvals().Get(id); len(a.Votes) != 1 || a.Votes[0].By != "bob" || a.Votes[0].As != "reviewer" {
		t.Errorf("after bob@acme's approval from the UI: votes %+v, want bob's as a reviewer", a.Votes)
	}
}
