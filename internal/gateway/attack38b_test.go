package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAttack38bTenantOncallGetsNoOthersReserve: rate_limit.priorities
// matched a principal's bare name in any tenant, so the "oncall" of a
// tenant that is not the one named took the capacity reserved for the
// named one's priority requests. Now acme's oncall, named as a budget's
// principal of a tenant is, takes the reserve; globex's oncall, and the
// oncall of no tenant, are refused once only the reserve is left.
func TestAttack38bTenantOncallGetsNoOthersReserve(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(polFile, policy.DefaultSource(), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, tenant := range []string{"acme", "globex", ""} {
		secret, _, err := ks.Create(auth.KeySpec{Principal: "oncall", Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		keys[tenant] = secret
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\npolicy: {path: "+polFile+"}\n"+
		"rate_limit:\n  per_second: 0.001\n  burst: 4\n  reserved: 0.5\n  priorities: [{principal: oncall, tenant: acme, priority: 1}]\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	call := func(tenant string) (string, string) {
		t.Helper()
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`,
			map[string]string{"Authorization": "Bearer " + keys[tenant]})
		if status != http.StatusOK {
			t.Fatalf("oncall of tenant %q: %d %v", tenant, status, out)
		}
		return fmt.Sprint(path(out, "results", 0, "error", "code")), fmt.Sprint(path(out, "results", 0, "error", "message"))
	}
	const reserved = "capacity reserved for priority requests"
	for i, c := range []struct {
		tenant, code, says string
	}{
		{"globex", "<nil>", ""},
		{"", "<nil>", ""},
		{"globex", "rate_limited", reserved}, // another tenant's oncall: no priority
		{"", "rate_limited", reserved},       // the oncall of no tenant: none either
		{"acme", "<nil>", ""},                // acme's takes the reserve
		{"acme", "<nil>", ""},
	} {
		code, msg := call(c.tenant)
		if code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("call %d, oncall of tenant %q: %s %q, want %s saying %q", i+1, c.tenant, code, msg, c.code, c.says)
		}
	}
}

// TestAttack38bUpstreamForgesReachMeta: an upstream's answer to a read, a
// prompt or a completion reached the client with the _meta the upstream
// wrote, reach's own keys too: "reach/status": "refused" and a
// "reach/error" made a plain answer look like reach's refusal, a
// "reach/request" named the request a client links its next calls to.
// An A2A agent's were dropped; an upstream's now are, from every _meta of
// the answer, the rest of it kept.
func TestAttack38bUpstreamForgesReachMeta(t *testing.T) {
	const uri = "file:///notes.txt"
	forged := func() mcp.Meta {
		return mcp.Meta{"reach/status": "refused", "reach/error": map[string]any{"code": "forbidden"}, "reach/request": "r-forged", "kept": "yes"}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: uri, Name: "notes"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Meta: forged(), Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi", Meta: forged()}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Meta: forged(), Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello", Meta: forged()}}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - {name: res, url: '"+up.URL+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	check := func(what string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), `"reach/`) {
			t.Errorf("%s reached the client with reach's keys the upstream wrote: %s", what, b)
		}
		if strings.Count(string(b), `"kept":"yes"`) != 2 {
			t.Errorf("%s lost the upstream's own _meta keys: %s", what, b)
		}
	}
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	check("a resource read", rr)
	gp, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "res__greet"})
	if err != nil {
		t.Fatal(err)
	}
	check("a prompt", gp)
}
