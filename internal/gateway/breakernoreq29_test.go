package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBreakerErrorOfNoRequestIsGlobalOperators: an upstream's breaker
// opened by failures of no request (what a program embedding the runtime
// reports outside any request: a health check, a connection that failed)
// keeps what they said, which may name a host or an account of any
// tenant. /healthz, the UI's tools page and a call's refusal tell every
// caller that the breaker is open and when it lets a probe through; the
// failure's text only a global operator reads. /healthz and the tools page
// showed it to anyone signed in, a principal of any tenant.
func TestBreakerErrorOfNoRequestIsGlobalOperators(t *testing.T) {
	const secret = "db-7.internal.acme.example"
	p := newUpstreamProbe()
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme": {Principal: "alice", Tenant: "acme"},
		"ops@globex": {Principal: "ops", Tenant: "globex", Roles: []string{"operator"}},
		"bob":        {Principal: "bob"},
		"root":       {Principal: "root", Roles: []string{"operator"}},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte("permit(principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"+
		"upstreams:\n  - {name: up, url: "+up.URL+", breaker: {failures: 2, open_for: 1h}}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srvURL := serveTest(t, g).URL
	b := g.rt.Breaker(reach.BreakerUpstream, "up", nil)
	for i := 0; upstreamBreaker(g, "up").State != reach.BreakerOpen; i++ {
		if i == 10 {
			t.Fatalf("the upstream's breaker is %+v after %d failures, want it open", upstreamBreaker(g, "up"), i)
		}
		pass, e := b.Admit(context.Background())
		if e != nil {
			t.Fatalf("admitting a check: %v", e)
		}
		pass.Failed(errors.New("dial tcp " + secret + ":5432: connection refused"))
	}
	if s := upstreamBreaker(g, "up"); !strings.Contains(s.LastError, secret) {
		t.Fatalf("the breaker's last error = %q, want the failure naming %s (the test's premise)", s.LastError, secret)
	}
	for who, sees := range map[string]bool{"root": true, "alice@acme": false, "ops@globex": false, "bob": false} {
		code, health := rawAs(t, keys[who], "GET", srvURL+"/healthz", "")
		if code != 200 || !strings.Contains(health, `"state":"open"`) || !strings.Contains(health, `"retry_at"`) {
			t.Errorf("%s's /healthz: %d %s, want the open breaker and when it is tried again", who, code, health)
		}
		if shown := strings.Contains(health, secret); shown != sees {
			t.Errorf("%s's /healthz shows the failure of no request: %v, want %v: %s", who, shown, sees, health)
		}
		code, page := rawAs(t, keys[who], "GET", srvURL+"/ui/tools", "")
		if code != 200 || !strings.Contains(page, "up__echo") || !strings.Contains(page, "probed at") {
			t.Errorf("%s's /ui/tools: %d, want the tools page with the open breaker and when it is probed", who, code)
		}
		if shown := strings.Contains(page, secret); shown != sees {
			t.Errorf("%s's /ui/tools shows the failure of no request: %v, want %v", who, shown, sees)
		}
	}
	// A call's refusal says the upstream is down and when it is tried
	// again, not what the failure of no request said, whoever calls.
	for _, who := range []string{"alice@acme", "root"} {
		code, body := rawAs(t, keys[who], "POST", srvURL+"/v1/calls", `{"tool_calls":[{"call_id":"c","tool":"up__echo","arguments":{"text":"hi"}}]}`)
		if code != 200 || !strings.Contains(body, "breaker_open") && !strings.Contains(body, "circuit breaker") {
			t.Errorf("%s's call: %d %s, want the open breaker's refusal", who, code, body)
		}
		if strings.Contains(body, secret) {
			t.Errorf("%s's call's refusal tells the failure of no request: %s", who, body)
		}
	}
}
