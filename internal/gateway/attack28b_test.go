package gateway

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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
