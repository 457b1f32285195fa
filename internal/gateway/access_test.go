package gateway

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/atomicfile"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpAs connects a go-sdk client to the gateway's /mcp with a token.
func mcpAs(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return strings.Join(names, ",")
}

const internForbid = `
@id("interns-no-orders")
@reason("interns may not read orders")
forbid (principal in Reach::Role::"intern", action, resource == Reach::Tool::"get_order");
`

// authGateway serves a gateway with API keys and a policy file; it returns
// keys for alice (intern), bob (reviewer), dave (operator) and a revoked
// one (carol).
func authGateway(t *testing.T, extra string) (g *Gateway, url, polFile string, keys map[string]string) {
	t.Helper()
	dir := t.TempDir()
	polFile = filepath.Join(dir, "policy.cedar")
	os.WriteFile(polFile, append(policy.DefaultSource(), internForbid...), 0o600)
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for name, roles := range map[string][]string{"alice": {"intern"}, "bob": {"reviewer"}, "carol": nil, "dave": {"operator"}} {
		secret, _, err := ks.Create(auth.KeySpec{Principal: name, Roles: roles})
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = secret
	}
	list, _ := ks.List()
	for _, k := range list {
		if k.Principal == "carol" {
			ks.Revoke(k.ID)
		}
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\npolicy: {path: "+polFile+"}\n"+extra), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g = newTestGateway(t, cfg)
	return g, serveTest(t, g).URL, polFile, keys
}

// TestAuthRefusesWithoutCredentials: with auth on, every endpoint but
// /healthz answers 401 to a missing, wrong or revoked key, and nothing of
// the tool list leaks.
func TestAuthRefusesWithoutCredentials(t *testing.T) {
	_, url, _, keys := authGateway(t, "")
	for _, tc := range []struct{ name, header string }{
		{"none", ""}, {"wrong key", "Bearer rk_wrong"}, {"revoked key", "Bearer " + keys["carol"]}, {"garbage", "Basic Zm9vOmJhcg=="},
	} {
		for _, p := range []string{"GET /v1/tools", "POST /v1/calls", "GET /v1/requests", "POST /mcp", "GET /ui/", "GET /metrics", "GET /v1/approvals", "POST /v1/chat/completions", "GET /v1/models", "GET /v1/models/m"} {
			method, path, _ := strings.Cut(p, " ")
			body := `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`
			if path == "/mcp" {
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			}
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
			for k, v := range h {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			buf := make([]byte, 4096)
			n, _ := resp.Body.Read(buf)
			b.Write(buf[:n])
			resp.Body.Close()
			want := 401
			if path == "/ui/" && tc.header == "" {
				want = 303 // a browser: to the login page
			}
			if resp.StatusCode != want {
				t.Errorf("%s: %s = %d, want %d", tc.name, p, resp.StatusCode, want)
			}
			if strings.Contains(b.String(), "search_kb") || strings.Contains(b.String(), "get_order") {
				t.Errorf("%s: %s leaks the tool list: %s", tc.name, p, b.String())
			}
		}
	}
	if code, _ := get(t, url+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d, want 200 without credentials", code)
	}
	if _, err := mcpAs(t, url, "rk_nope"); err == nil {
		t.Error("an MCP client with a wrong key connected")
	}
}

// TestPolicyFiltersAndReloads: a principal sees and may call only what the
// policies permit, over MCP and the API; a change of the policy file
// applies within seconds.
func TestPolicyFiltersAndReloads(t *testing.T) {
	g, url, polFile, keys := authGateway(t, "")
	h := map[string]string{"Authorization": "Bearer " + keys["alice"]}
	_, out := do(t, "GET", url+"/v1/tools", "", h)
	names, _ := json.Marshal(out)
	if !strings.Contains(string(names), "search_kb") || strings.Contains(string(names), "get_order") {
		t.Errorf("alice's tools = %s, want search_kb and not get_order", names)
	}
	cs, err := mcpAs(t, url, keys["alice"])
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, cs); !strings.Contains(got, "search_kb") || strings.Contains(got, "get_order") {
		t.Errorf("alice's tools/list = %s", got)
	}
	res, text := callText(t, cs, "get_order", map[string]any{"order_id": "1001"}, nil)
	if !res.IsError || !strings.Contains(text, "interns may not read orders") {
		t.Errorf("alice calling get_order = %q, want the forbid's reason", text)
	}
	if res, text := callText(t, cs, "search_kb", map[string]any{"query": "refund"}, nil); res.IsError {
		t.Errorf("alice calling search_kb = %q", text)
	}
	for _, r := range g.rt.Requests() {
		if r.Principal() != "alice" {
			t.Errorf("request %s runs as %q, want alice", r.ID(), r.Principal())
		}
	}
	// bob may not join alice's request.
	var rid string
	for _, r := range g.rt.Requests() {
		rid = r.ID()
	}
	status, _ := do(t, "POST", url+"/v1/calls", `{"request_id":"`+rid+`","tool_calls":[{"call_id":"b","tool":"search_kb","arguments":{"query":"x"}}]}`,
		map[string]string{"Authorization": "Bearer " + keys["bob"]})
	if status != 403 {
		t.Errorf("bob joining alice's request = %d, want 403", status)
	}

	// Hot reload: drop the forbid (written whole, as an editor's save that
	// renames, so the watcher never reads half of it).
	if err := atomicfile.Write(polFile, policy.DefaultSource(), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second) // a different modification time
	os.Chtimes(polFile, later, later)
	deadline := time.Now().Add(time.Minute)
	for {
		if got := toolNames(t, cs); strings.Contains(got, "get_order") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the policy change did not apply within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res, text := callText(t, cs, "get_order", map[string]any{"order_id": "1001"}, nil); res.IsError {
		t.Errorf("after the reload, get_order = %q", text)
	}
}

// TestApprovalNeedsTwoPrincipals: a high_risk call (default policies:
// user+reviewer) held over MCP completes only when the user and a
// different reviewer have approved it through the API.
func TestApprovalNeedsTwoPrincipals(t *testing.T) {
	_, url, _, keys := authGateway(t, "approvals: {wait: 20s}\ntools:\n  refund_order: {access: high_risk}\n")
	cs, err := mcpAs(t, url, keys["alice"])
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund_order",
			Arguments: map[string]any{"order_id": "1001", "amount": 5, "reason": "broken"}})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		b, _ := json.Marshal(res)
		done <- string(b)
	}()
	alice := map[string]string{"Authorization": "Bearer " + keys["alice"]}
	bob := map[string]string{"Authorization": "Bearer " + keys["bob"]}
	var id string
	for deadline := time.Now().Add(time.Minute); id == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, out := do(t, "GET", url+"/v1/approvals?status=pending", "", alice)
		id, _ = path(out, "approvals", 0, "id").(string)
	}
	if id == "" {
		t.Fatal("no pending approval")
	}
	// The UI's inbox shows it to those who may decide it (alice, who asked;
	// bob, a reviewer), as the API does, and to no one else.
	for who, want := range map[string]bool{"alice": true, "bob": true, "dave": false} {
		_, page := rawAs(t, keys[who], "GET", url+"/ui/approvals", "")
		if got := strings.Contains(page, id); got != want {
			t.Errorf("%s's UI inbox shows the approval: %v, want %v", who, got, want)
		}
	}
	if status, out := do(t, "POST", url+"/v1/approvals/"+id+"/approve", `{}`, alice); status != 200 {
		t.Fatalf("alice approves = %d %v", status, out)
	}
	select {
	case got := <-done:
		t.Fatalf("the call completed with the user's approval alone: %s", got)
	case <-time.After(300 * time.Millisecond):
	}
	if status, out := do(t, "POST", url+"/v1/approvals/"+id+"/approve", `{}`, alice); status == 200 {
		t.Errorf("alice approving twice = %d %v, want a refusal", status, out)
	}
	if status, out := do(t, "POST", url+"/v1/approvals/"+id+"/approve", `{}`, bob); status != 200 {
		t.Fatalf("bob approves = %d %v", status, out)
	}
	select {
	case got := <-done:
		if strings.Contains(got, `"isError":true`) || !strings.Contains(got, "refund") {
			t.Errorf("held call = %s, want the refund to run", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held call did not complete")
	}
}

// TestJWT: a bearer JWT signed by the configured JWKS authenticates; a
// forged or expired one is refused with 401.
func TestJWT(t *testing.T) {
	dir := t.TempDir()
	good, _ := rsa.GenerateKey(rand.Reader, 2048)
	evil, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwk := map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(good.N.Bytes()), "e": b64(big.NewInt(int64(good.E)).Bytes())}}}
	jb, _ := json.Marshal(jwk)
	os.WriteFile(filepath.Join(dir, "jwks.json"), jb, 0o600)
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth:\n  jwt:\n    jwks: "+filepath.Join(dir, "jwks.json")+
		"\n    issuer: https://idp.example\n    audience: reach\n    claims: {principal: email, roles: groups}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	now := time.Now().Unix()
	claims := map[string]any{"iss": "https://idp.example", "aud": "reach", "email": "dana@example.com", "groups": []string{"support"}, "iat": now, "exp": now + 300}
	expired := map[string]any{"iss": "https://idp.example", "aud": "reach", "email": "dana@example.com", "iat": now - 7200, "exp": now - 3600}
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"valid", signJWT(good, "k1", claims), 200},
		{"forged", signJWT(evil, "k1", claims), 401},
		{"expired", signJWT(good, "k1", expired), 401},
	} {
		status, out := do(t, "POST", url+"/v1/calls", `{"request_id":"j-`+tc.name+`","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`,
			map[string]string{"Authorization": "Bearer " + tc.token})
		if status != tc.want {
			t.Errorf("%s token: %d %v, want %d", tc.name, status, out, tc.want)
		}
	}
	if r, ok := g.rt.Lookup("j-valid"); !ok || r.Principal() != "dana@example.com" {
		t.Errorf("the valid token's request = %v", r)
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func signJWT(k *rsa.PrivateKey, kid string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid})
	c, _ := json.Marshal(claims)
	in := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(in))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	return in + "." + b64(sig)
}

// TestWriteApprovalRunsOnce: with the default policies a write is pending
// until its user approves it; the retry then runs, once: the same call
// after it never refunds twice.
func TestWriteApprovalRunsOnce(t *testing.T) {
	g, url, _, keys := authGateway(t, "")
	cs, err := mcpAs(t, url, keys["bob"])
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"order_id": "1001", "amount": 5, "reason": "broken"}
	res, text := callText(t, cs, "refund_order", args, nil)
	if !res.IsError || res.Meta[link.MetaStatus] != "pending" {
		t.Fatalf("first call = %q (%v), want pending", text, res.Meta[link.MetaStatus])
	}
	bob := map[string]string{"Authorization": "Bearer " + keys["bob"]}
	_, out := do(t, "GET", url+"/v1/approvals?status=pending", "", bob)
	id, _ := path(out, "approvals", 0, "id").(string)
	if status, out := do(t, "POST", url+"/v1/approvals/"+id+"/approve", `{"reason":"customer called"}`, bob); status != 200 {
		t.Fatalf("approve = %d %v", status, out)
	}
	if res, text := callText(t, cs, "refund_order", args, nil); res.IsError || !strings.Contains(text, `"total_refunded":5`) {
		t.Fatalf("the approved retry = %q", text)
	}
	// The refund ran once: the same call again never refunds twice.
	res, text = callText(t, cs, "refund_order", args, nil)
	if res.Meta[link.MetaStatus] != "pending" && !strings.Contains(text, `"total_refunded":5`) {
		t.Errorf("the same call after the approved one ran = %v %q, want pending or the first run's result", res.Meta[link.MetaStatus], text)
	}
	// The audit log has the approval's story: asked, approved by bob with
	// his reason, used.
	_, a := do(t, "GET", url+"/v1/approvals/"+id, "", bob)
	evs, err := audit.Show(t.Context(), g.store, fmt.Sprint(path(a, "request")))
	if err != nil {
		t.Fatal(err)
	}
	var story []string
	for _, e := range evs {
		if e.Kind == "approval" {
			story = append(story, e.Decision+" "+e.Name+" "+e.Principal+" "+e.Message)
		}
	}
	want := []string{"requested refund_order bob approval " + id + " (user)", "approved refund_order bob approval " + id + " (user) by bob: customer called",
		"used refund_order bob approval " + id + " (user)"}
	if strings.Join(story, "\n") != strings.Join(want, "\n") {
		t.Errorf("the audit log's approval events:\n%s\nwant\n%s", strings.Join(story, "\n"), strings.Join(want, "\n"))
	}
}

// TestRequestsArePrivate: with auth on, a principal lists, reads, draws,
// stops and ends its own requests only, in the API and the UI; an
// operator sees and stops all of them, and the stop names who made it;
// dead letters are for operators.
func TestRequestsArePrivate(t *testing.T) {
	_, url, _, keys := authGateway(t, "")
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	status, out := do(t, "POST", url+"/v1/calls", `{"request_id":"alice-1","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"alice's private question"}}]}`, as("alice"))
	if status != 200 {
		t.Fatalf("alice's call = %d %v", status, out)
	}
	listed := func(who string) bool {
		_, out := do(t, "GET", url+"/v1/requests", "", as(who))
		b, _ := json.Marshal(out)
		return strings.Contains(string(b), `"alice-1"`)
	}
	if !listed("alice") || listed("bob") || !listed("dave") {
		t.Errorf("alice-1 listed for alice %v, bob %v, dave %v; want true, false, true", listed("alice"), listed("bob"), listed("dave"))
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/requests/alice-1", ""},
		{"GET", "/v1/requests/alice-1/graph?format=json", ""},
		{"GET", "/v1/requests/alice-1/graph?format=svg", ""},
		{"POST", "/v1/requests/alice-1/cancel", `{"mode":"isolate","reason":"bob was here"}`},
		{"POST", "/v1/requests/alice-1/end", ""},
	} {
		status, body := rawAs(t, keys["bob"], c.method, url+c.path, c.body)
		if status != http.StatusForbidden || strings.Contains(body, "private question") {
			t.Errorf("bob %s %s = %d %s, want 403 without alice's arguments", c.method, c.path, status, body)
		}
	}
	for _, path := range []string{"/ui/", "/ui/requests/alice-1", "/ui/requests/alice-1/graph.svg"} {
		status, body := rawAs(t, keys["bob"], "GET", url+path, "")
		if path == "/ui/" && strings.Contains(body, "alice-1") || path != "/ui/" && (status != http.StatusNotFound || strings.Contains(body, "private question")) {
			t.Errorf("bob GET %s = %d, shows alice-1: %v", path, status, strings.Contains(body, "alice-1"))
		}
	}
	if status, body := rawAs(t, keys["alice"], "GET", url+"/ui/", ""); !strings.Contains(body, "alice-1") {
		t.Errorf("alice's UI list does not show her request alice-1 (%d)", status)
	}
	if status, out := do(t, "GET", url+"/v1/requests/alice-1", "", as("alice")); status != 200 || out["state"] == "stopped_isolate" {
		t.Errorf("alice reading alice-1 = %d, state %v (bob's stop must not have applied)", status, out["state"])
	}
	if status, out := do(t, "GET", url+"/v1/deadletters", "", as("bob")); status != http.StatusForbidden {
		t.Errorf("bob listing dead letters = %d %v, want 403", status, out)
	}
	if status, _ := do(t, "GET", url+"/v1/deadletters", "", as("dave")); status != 200 {
		t.Errorf("dave (operator) listing dead letters = %d", status)
	}
	if status, out := do(t, "POST", url+"/v1/requests/alice-1/cancel", `{"mode":"cancel","reason":"runaway"}`, as("dave")); status != 200 {
		t.Fatalf("dave (operator) cancelling alice-1 = %d %v", status, out)
	}
	_, out = do(t, "GET", url+"/v1/requests/alice-1", "", as("alice"))
	if stop, _ := out["stop"].(map[string]any); stop["by"] != "dave" {
		t.Errorf("the stop = %v, want it made by dave", out["stop"])
	}
}

// rawAs sends a request with who's key and returns the status and body as
// they are (the UI's HTML, an SVG).
func rawAs(t *testing.T, key, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUIToolsFollowPolicy: the UI's tool page shows a principal the tools
// GET /v1/tools does (policies, access: forbidden), no more.
func TestUIToolsFollowPolicy(t *testing.T) {
	g, url, _, keys := authGateway(t, "tools:\n  format_answer: {access: forbidden}\n")
	_, out := do(t, "GET", url+"/v1/tools", "", map[string]string{"Authorization": "Bearer " + keys["alice"]})
	listed := map[string]bool{}
	for _, v := range out["tools"].([]any) {
		listed[v.(map[string]any)["name"].(string)] = true
	}
	if listed["get_order"] || listed["format_answer"] || !listed["search_kb"] {
		t.Fatalf("GET /v1/tools for alice = %v; want search_kb without get_order and format_answer", listed)
	}
	_, page := rawAs(t, keys["alice"], "GET", url+"/ui/tools", "")
	for _, tool := range g.rt.Tools() {
		if shown := strings.Contains(page, "<b>"+tool.Name+"</b>"); shown != listed[tool.Name] {
			t.Errorf("alice's /ui/tools shows %s: %v; GET /v1/tools lists it: %v", tool.Name, shown, listed[tool.Name])
		}
	}
}

// TestAuditAndStatsAPI: GET /v1/audit shows a principal its own events
// only, an operator everyone's, and one request's on ?request=;
// /v1/audit/verify checks the chain; /v1/stats is for operators.
func TestAuditAndStatsAPI(t *testing.T) {
	g, url, _, keys := authGateway(t, "")
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	for _, who := range []string{"bob", "dave"} {
		body := `{"request_id":"` + who + `-r","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`
		if status, out := do(t, "POST", url+"/v1/calls", body, as(who)); status != 200 {
			t.Fatalf("%s's call = %d %v", who, status, out)
		}
	}
	g.audit.Flush(t.Context())
	principals := func(who, query string) map[string]int {
		t.Helper()
		status, out := do(t, "GET", url+"/v1/audit"+query, "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/audit%s = %d %v", who, query, status, out)
		}
		seen := map[string]int{}
		for _, e := range out["events"].([]any) {
			seen[fmt.Sprint(path(e, "event", "principal"))+" "+fmt.Sprint(path(e, "request"))]++
		}
		return seen
	}
	if got := principals("bob", ""); got["bob bob-r"] == 0 || got["dave dave-r"] != 0 {
		t.Errorf("bob sees %v, want his own events only", got)
	}
	if got := principals("dave", ""); got["bob bob-r"] == 0 || got["dave dave-r"] == 0 {
		t.Errorf("the operator sees %v, want everyone's", got)
	}
	if got := principals("bob", "?request=dave-r"); len(got) != 0 {
		t.Errorf("bob sees %v of dave's request", got)
	}
	if got := principals("dave", "?request=bob-r&limit=1"); len(got) != 1 || got["bob bob-r"] != 1 {
		t.Errorf("one event of bob's request: %v", got)
	}
	if status, _ := do(t, "GET", url+"/v1/audit?limit=0", "", as("bob")); status != 400 {
		t.Errorf("limit=0 = %d, want 400", status)
	}
	if status, out := do(t, "GET", url+"/v1/audit/verify", "", as("bob")); status != 200 || out["ok"] != true {
		t.Errorf("verify = %d %v", status, out)
	}
	if status, _ := do(t, "GET", url+"/v1/stats", "", as("bob")); status != 403 {
		t.Errorf("bob's stats = %d, want 403", status)
	}
	status, out := do(t, "GET", url+"/v1/stats", "", as("dave"))
	calls := 0.0
	for _, s := range out["tools"].([]any) {
		if path(s, "tool") == "search_kb" {
			calls, _ = path(s, "calls").(float64)
		}
	}
	if status != 200 || calls != 2 {
		t.Errorf("the operator's stats = %d, search_kb calls %v; want 2: %v", status, calls, out)
	}
}

// TestClientSetsTheScene: a client names the conversation's scene for the
// request it begins (Reach-Scene on HTTP, _meta "reach/scene" over MCP),
// and policies over context.scene apply to it; a malformed scene is
// refused.
func TestClientSetsTheScene(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.cedar")
	os.WriteFile(pol, []byte(`permit (principal, action, resource);
@id("chitchat-read-only") @reason("no write or high-risk tools in small talk")
forbid (principal, action, resource) when { context.scene == "chitchat" && resource.access != "read" };
`), 0o600)
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\npolicy: {path: "+pol+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	refund := `{"tool_calls":[{"call_id":"c1","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"broken"}}]}`
	_, out := do(t, "POST", srv.URL+"/v1/calls", refund, map[string]string{"Reach-Scene": "chitchat"})
	if path(out, "results", 0, "error", "code") != "denied" || !strings.Contains(fmt.Sprint(path(out, "results", 0, "error", "message")), "small talk") {
		t.Errorf("a refund in chitchat = %v, want denied by the scene rule", out)
	}
	r, _ := g.rt.Lookup(fmt.Sprint(path(out, "request_id")))
	if r == nil || r.Scene() != "chitchat" {
		t.Errorf("the request's scene = %v", r)
	}
	if _, out := do(t, "POST", srv.URL+"/v1/calls", refund, nil); path(out, "results", 0, "error", "code") == "denied" {
		t.Errorf("a refund with no scene = %v, want it not denied", out)
	}
	if status, out := do(t, "POST", srv.URL+"/v1/calls", refund, map[string]string{"Reach-Scene": "small talk"}); status != 400 || path(out, "error", "code") != "bad_scene" {
		t.Errorf("a scene with a space = %d %v, want 400 bad_scene", status, out)
	}
	cs := connectMCP(t, g, nil)
	res, text := callText(t, cs, "refund_order", map[string]any{"order_id": "1002", "amount": 5, "reason": "broken"}, mcp.Meta{link.MetaScene: "chitchat"})
	if !res.IsError || !strings.Contains(text, "small talk") {
		t.Errorf("a refund over MCP in chitchat = %q, want denied by the scene rule", text)
	}
}
