package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
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
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\ntools:\n  refund_order: {access: high_risk}\n"), os.LookupEnv)
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
func uiRequest(method, target string, body io.Reader, size int, key string) *http.Request {
	r := httptest.NewRequest(method, target, body)
	if body != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.ContentLength = int64(size) // read by the UI's handler, not ahead of it
	}
	r.Header.Set("Authorization", "Bearer "+key)
	return r
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
	for _, action := range []string{"approve", "deny"} {
		postForm(t, keys["bob@globex"], srvURL+"/ui/approvals/"+id+"/"+action, url.Values{"reason": {"globex"}})
		// The same while bob@acme's inbox refreshes (as /ui/live makes it
		// do every half second) in the middle of bob@globex's post: here,
		// when the UI reads the form (the UI's own handler, which reads
		// the body itself).
		body := &hookBody{r: strings.NewReader("reason=globex"), before: func() {
			g.Handler().ServeHTTP(httptest.NewRecorder(), uiRequest("GET", "/ui/approvals", nil, 0, keys["bob@acme"]))
		}}
		g.Handler().ServeHTTP(httptest.NewRecorder(), uiRequest("POST", "/ui/approvals/"+id+"/"+action, body, len("reason=globex"), keys["bob@globex"]))
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

// TestRequestTenantOwnership: a request belongs to its principal in its
// tenant. alice@globex may not read, stop or join alice@acme's request,
// in the UI or the API; alice@acme may.
func TestRequestTenantOwnership(t *testing.T) {
	_, srvURL, keys := tenantGateway(t)
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	if status, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"acme-1","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"acme confidential"}}]}`, as("alice@acme")); status != 200 {
		t.Fatalf("alice@acme's call = %d %v", status, out)
	}
	for _, path := range []string{"/ui/", "/ui/requests/acme-1", "/ui/requests/acme-1/graph.svg"} {
		status, body := rawAs(t, keys["alice@globex"], "GET", srvURL+path, "")
		if path == "/ui/" && strings.Contains(body, "acme-1") || path != "/ui/" && status != http.StatusNotFound || strings.Contains(body, "acme confidential") {
			t.Errorf("alice@globex GET %s = %d, shows alice@acme's request", path, status)
		}
	}
	status, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"acme-1","tool_calls":[{"call_id":"c2","tool":"search_kb","arguments":{"query":"globex joins"}}]}`, as("alice@globex"))
	if status != http.StatusBadRequest || path(out, "error", "code") != "request_id_unavailable" {
		t.Errorf("alice@globex joining acme-1 = %d %v, want 400 request_id_unavailable", status, out)
	}
	stillRunning := func(after string) {
		t.Helper()
		if status, out := do(t, "GET", srvURL+"/v1/requests/acme-1", "", as("alice@acme")); status != 200 || out["state"] != "running" {
			t.Errorf("after %s, alice@acme reads acme-1 = %d, state %v; want it running", after, status, out["state"])
		}
	}
	postForm(t, keys["alice@globex"], srvURL+"/ui/stop/acme-1", url.Values{"mode": {"isolate"}, "reason": {"globex"}})
	stillRunning("alice@globex's stop from the UI")
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/requests/acme-1", ""},
		{"GET", "/v1/requests/acme-1/graph?format=json", ""},
		{"POST", "/v1/requests/acme-1/cancel", `{"mode":"isolate","reason":"globex"}`},
	} {
		if status, body := rawAs(t, keys["alice@globex"], c.method, srvURL+c.path, c.body); status != http.StatusNotFound || strings.Contains(body, "acme confidential") {
			t.Errorf("alice@globex %s %s = %d %s, want 404, as an id no request has", c.method, c.path, status, body)
		}
	}
	if _, out := do(t, "GET", srvURL+"/v1/requests", "", as("alice@globex")); strings.Contains(fmt.Sprint(out), "acme-1") {
		t.Errorf("alice@globex's GET /v1/requests lists acme-1: %v", out)
	}
	stillRunning("alice@globex's cancel through the API")
	if _, out := do(t, "GET", srvURL+"/v1/requests/acme-1", "", as("alice@acme")); strings.Contains(fmt.Sprint(out), "globex joins") {
		t.Errorf("acme-1 holds alice@globex's call: %v", out)
	}
	if _, page := rawAs(t, keys["alice@acme"], "GET", srvURL+"/ui/requests/acme-1", ""); !strings.Contains(page, "acme confidential") {
		t.Errorf("alice@acme's UI does not show her own request")
	}
}

// TestAuditViewTenant: the UI's audit view shows a principal who is not
// an operator the rows of its own requests in its own tenant only.
func TestAuditViewTenant(t *testing.T) {
	g, srvURL, keys := tenantGateway(t)
	for who, id := range map[string]string{"alice@acme": "acme-1", "alice@globex": "globex-1"} {
		body := `{"request_id":"` + id + `","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"q"}}]}`
		if status, out := do(t, "POST", srvURL+"/v1/calls", body, map[string]string{"Authorization": "Bearer " + keys[who]}); status != 200 {
			t.Fatalf("%s's call = %d %v", who, status, out)
		}
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	for who, want := range map[string]string{"alice@acme": "acme-1", "alice@globex": "globex-1"} {
		other := map[string]string{"acme-1": "globex-1", "globex-1": "acme-1"}[want]
		for _, q := range []string{"", "?request=" + other, "?principal=alice"} {
			_, page := rawAs(t, keys[who], "GET", srvURL+"/ui/audit"+q, "")
			if strings.Contains(page, `>`+other+`<`) {
				t.Errorf("%s's audit view%s shows the rows of %s", who, q, other)
			}
			if q != "?request="+other && !strings.Contains(page, `>`+want+`<`) {
				t.Errorf("%s's audit view%s lacks the rows of its own %s", who, q, want)
			}
		}
	}
}

// TestCompensationTenant: the compensation of alice@acme's request acts
// for alice in tenant acme: a policy that permits tenant acme's writes
// permits its undo (nothing is dead-lettered), alice@acme may read it,
// alice@globex may not, and its audit rows are in alice@acme's view.
func TestCompensationTenant(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.cedar")
	os.WriteFile(pol, []byte(`
@id("acme-trips")
permit (principal, action == Reach::Action::"call", resource)
when { principal.authenticated && principal.tenant == "acme" && ["reserve", "release", "charge"].contains(resource.name) };
`), 0o600)
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	echoArgs := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
	g.rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Func: echoArgs, Undo: &reach.Followup{Tool: "release", Args: `{"seat": "{args.seat}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Func: echoArgs},
		reach.Tool{Name: "charge", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
		}},
	)
	srvURL := serveTest(t, g).URL
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	status, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"acme-trip","tool_calls":[{"call_id":"c1","tool":"reserve","arguments":{"seat":"4A"}}]}`, as("alice@acme"))
	if status != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("alice@acme's reservation = %d %v", status, out)
	}
	status, out = do(t, "POST", srvURL+"/v1/calls", `{"request_id":"acme-trip","tool_calls":[{"call_id":"c2","tool":"charge","arguments":{"seat":"4A"}}]}`, as("alice@acme"))
	if status != 200 || path(out, "results", 0, "status") != "error" {
		t.Fatalf("alice@acme's charge = %d %v", status, out)
	}
	if dls := openDeadLetters(t, g); len(dls) != 0 {
		t.Errorf("the undo was dead-lettered: %+v", dls)
	}
	var comp string
	for _, r := range g.rt.Requests() {
		if strings.HasPrefix(r.ID(), "acme-trip/compensate/") {
			comp = r.ID()
		}
	}
	if comp == "" {
		t.Fatalf("no compensation request after %v", out)
	}
	u := srvURL + "/v1/requests/" + url.PathEscape(comp)
	if status, out := do(t, "GET", u, "", as("alice@acme")); status != 200 {
		t.Errorf("alice@acme reading her compensation %s = %d %v, want 200", comp, status, out)
	}
	if status, _ := do(t, "GET", u, "", as("alice@globex")); status != http.StatusNotFound {
		t.Errorf("alice@globex reading alice@acme's compensation %s = %d, want 404, as an id no request has", comp, status)
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, page := rawAs(t, keys["alice@acme"], "GET", srvURL+"/ui/audit?request="+url.QueryEscape(comp), ""); !strings.Contains(page, ">"+comp+"<") {
		t.Errorf("alice@acme's audit view lacks the rows of her compensation %s", comp)
	}
}
