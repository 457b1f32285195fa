package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTenantGateway serves a gateway in front of the probe over stdio
// (one upstream session shared by every client), with API keys of alice
// in tenants acme and globex and a policy that permits every call.
func stdioTenantGateway(t *testing.T) (srvURL string, keys map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
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
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"+
		"upstreams:\n  - name: up\n    command: ["+exe+"]\n    env: {REACH_TEST_STDIO_UPSTREAM: '1'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return serveTest(t, newTestGateway(t, cfg)).URL, keys
}

// TestUnnamedSamplingNotRelayedAcrossOwners: on the one session of a stdio
// upstream, a sampling request that names no tool call went to the only
// client with calls in flight. An upstream may send it after the call it
// was for has ended (a request of alice@acme's call, late), and then it
// reached alice of tenant globex, whose call happened to be in flight: her
// client's model read acme's prompt and acme's upstream read her answer.
// The gateway cannot tell such a request from one of the call in flight.
// Now one that names no call is relayed only while the shared session has
// carried the calls of one principal in one tenant; after that, it is
// refused to the upstream with an error that says to name the call.
func TestUnnamedSamplingNotRelayedAcrossOwners(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the test binary as a stdio upstream")
	}
	srvURL, keys := stdioTenantGateway(t)
	asked := map[string]*atomic.Int32{}
	connect := func(who string) *mcp.ClientSession {
		t.Helper()
		n := new(atomic.Int32)
		asked[who] = n
		c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				n.Add(1)
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: who + "'s model"}}, nil
			}})
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srvURL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{keys[who], http.DefaultTransport}}},
			&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	acme, globex := connect("alice@acme"), connect("alice@globex")

	// One owner's calls so far: the request that names none is its.
	if res, text := callText(t, acme, "up__sample_detached", map[string]any{}, nil); res.IsError || text != "sampled: alice@acme's model" {
		t.Fatalf("acme's up__sample_detached = %q (isError %v), want acme's client to answer", text, res.IsError)
	}
	// Another tenant's call on the same upstream session: the request
	// that names no call could be acme's, late.
	res, text := callText(t, globex, "up__sample_detached", map[string]any{}, nil)
	if n := asked["alice@globex"].Load(); n != 0 {
		t.Fatalf("globex's client was asked %d sampling requests that name no call (answer %q), on a session acme's calls use", n, text)
	}
	if !res.IsError || !strings.Contains(text, "names no tool call") || !strings.Contains(text, "reach/parent") {
		t.Errorf("globex's up__sample_detached = %q (isError %v), want the upstream told its request names no call and to send reach/parent", text, res.IsError)
	}
	// Nor acme's, now: the session carries both tenants' calls.
	res, text = callText(t, acme, "up__sample_detached", map[string]any{}, nil)
	if n := asked["alice@acme"].Load(); n != 1 || !res.IsError {
		t.Errorf("acme's second up__sample_detached = %q; its client was asked %d times, want once (the first call)", text, n)
	}
}

// TestUpstreamBreakerErrorStaysWithItsOwner: an upstream's breaker opened
// by alice@acme's failing calls kept what the last of them was answered
// (here the upstream's error body, naming the account her arguments
// named), and /healthz and the UI's tools page showed it to anyone signed
// in: alice of tenant globex read acme's account. A tool's breaker's was
// kept for a global operator already; an upstream's (and a model
// endpoint's) is one call's failure as much. Now it is shown to the
// principal whose call it was, in its tenant, and to a global operator.
func TestUpstreamBreakerErrorStaysWithItsOwner(t *testing.T) {
	const account = "ACME-ACCT-55127"
	p := newUpstreamProbe()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			var call struct {
				Params struct {
					Arguments struct{ Text string } `json:"arguments"`
				} `json:"params"`
			}
			json.Unmarshal(body, &call)
			http.Error(w, "the CRM is down looking up account "+call.Params.Arguments.Text, http.StatusServiceUnavailable)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
		"ops@globex":   {Principal: "ops", Tenant: "globex", Roles: []string{"operator"}},
		"root":         {Principal: "root", Roles: []string{"operator"}},
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
		"upstreams:\n  - {name: up, url: "+up.URL+", breaker: {failures: 2, open_for: 1h}}\n"+
		"tools:\n  up__echo: {retry: {attempts: 1}}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srvURL := serveTest(t, g).URL
	for i := 0; upstreamBreaker(g, "up").State != reach.BreakerOpen; i++ {
		if i == 10 {
			t.Fatalf("the upstream's breaker is %+v after %d failed calls, want it open", upstreamBreaker(g, "up"), i)
		}
		status, out := do(t, "POST", srvURL+"/v1/calls",
			fmt.Sprintf(`{"request_id":"acme-crm-%d","tool_calls":[{"call_id":"c","tool":"up__echo","arguments":{"text":%q}}]}`, i, account),
			map[string]string{"Authorization": "Bearer " + keys["alice@acme"]})
		if status != 200 || path(out, "results", 0, "status") != "error" {
			t.Fatalf("alice@acme's call: %d %v, want 200 and the call failed", status, out)
		}
	}
	if b := upstreamBreaker(g, "up"); !strings.Contains(b.LastError, account) {
		t.Fatalf("the breaker's last error = %q, want the upstream's answer naming %s (the test's premise)", b.LastError, account)
	}
	for who, sees := range map[string]bool{"alice@acme": true, "root": true, "alice@globex": false, "ops@globex": false} {
		code, health := rawAs(t, keys[who], "GET", srvURL+"/healthz", "")
		if code != 200 || !strings.Contains(health, `"state":"open"`) {
			t.Errorf("%s's /healthz: %d %s, want the open breaker", who, code, health)
		}
		if shown := strings.Contains(health, account); shown != sees {
			t.Errorf("%s's /healthz shows the last failure of alice@acme's call: %v, want %v: %s", who, shown, sees, health)
		}
		code, page := rawAs(t, keys[who], "GET", srvURL+"/ui/tools", "")
		if code != 200 || !strings.Contains(page, "up__echo") {
			t.Errorf("%s's /ui/tools: %d, want the tools page", who, code)
		}
		if shown := strings.Contains(page, account); shown != sees {
			t.Errorf("%s's /ui/tools shows the last failure of alice@acme's call: %v, want %v", who, shown, sees)
		}
	}
}
