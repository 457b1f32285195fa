package gateway

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/policy"
)

// TestBudgetPrincipalOfTenantServed: a budget's principal is a principal
// of a tenant, as sessions, requests and approvals are: alice of acme is
// listed as {principal: alice, tenant: acme}, and alice of globex, the
// same name in another tenant, is someone else. Through the served gateway
// (the HTTP API's Reach-Budget and MCP's _meta reach/budget) alice of
// globex naming acme's budget, or a budget listing a bare alice (the
// principal of no tenant), is refused with 403 budget_not_permitted (an
// isError result over MCP), nothing begun, and the refusal says how the
// operator lists her: with her tenant. Before, a bare alice let alice of
// every tenant name the budget, and a principal could not be given a
// tenant.
func TestBudgetPrincipalOfTenantServed(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.cedar")
	os.WriteFile(polFile, policy.DefaultSource(), 0o600)
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for who, tenant := range map[string]string{"alice@acme": "acme", "alice@globex": "globex", "alice": ""} {
		secret, _, err := ks.Create(auth.KeySpec{Principal: "alice", Roles: []string{"reviewer"}, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		keys[who] = secret
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\npolicy: {path: "+polFile+"}\n"+
		"budgets:\n  default: {tool_calls: 20}\n"+
		"  acme: {tool_calls: 100, principals: [{principal: alice, tenant: acme}]}\n"+
		"  bare: {tool_calls: 200, principals: [alice]}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	// reach validate warns of the bare alice whose keys are of
	// tenants, saying how to list them; not of acme's alice.
	var warned []string
	for _, w := range g.Warnings() {
		if strings.Contains(w, "principal of no tenant") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "budget bare lists \"alice\"") || !strings.Contains(warned[0], "tenant acme, globex") ||
		!strings.Contains(warned[0], `{principal: "alice", tenant: "acme"}, {principal: "alice", tenant: "globex"} in budgets.bare.principals`) {
		t.Errorf("warnings of bare principals = %q, want one for budget bare, naming acme and globex and how to list them", warned)
	}
	for _, tc := range []struct {
		who, budget string
		want        int // the request's tool calls; 0: refused
	}{
		{"alice@acme", "acme", 100},
		{"alice@globex", "acme", 0},
		{"alice", "acme", 0},
		{"alice", "bare", 200},
		{"alice@acme", "bare", 0},
		{"alice@globex", "bare", 0},
	} {
		name := tc.who + " naming " + tc.budget
		tenant := ""
		if _, tn, ok := strings.Cut(tc.who, "@"); ok {
			tenant = tn
		}
		// how the refusal says to list the caller
		listMe := `budgets.` + tc.budget + `.principals: ["alice"]`
		if tenant != "" {
			listMe = `budgets.` + tc.budget + `.principals: [{principal: "alice", tenant: "` + tenant + `"}], not a bare "alice", which is the principal of no tenant`
		}

		id := "bpt-api-" + strings.ReplaceAll(tc.who, "@", "-") + "-" + tc.budget
		body := `{"request_id":"` + id + `","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"a"}}]}`
		code, out := do(t, "POST", url+"/v1/calls", body, map[string]string{"Authorization": "Bearer " + keys[tc.who], link.HeaderBudget: tc.budget})
		r, _ := g.rt.Lookup(id)
		if tc.want > 0 {
			if code != http.StatusOK || r == nil || r.Budget().ToolCalls != tc.want {
				t.Errorf("/v1/calls, %s: %d %v (request %v), want 200 and %d tool calls", name, code, out, r, tc.want)
			}
		} else {
			b, _ := json.Marshal(out)
			if code != http.StatusForbidden || path(out, "error", "code") != "budget_not_permitted" || !strings.Contains(string(b), strings.ReplaceAll(listMe, `"`, `\"`)) {
				t.Errorf("/v1/calls, %s: %d %s, want 403 budget_not_permitted saying %s", name, code, b, listMe)
			}
			if r != nil {
				t.Errorf("/v1/calls, %s: request %s began (budget %+v), want none", name, id, r.Budget())
			}
		}

		cs, err := mcpAs(t, url, keys[tc.who])
		if err != nil {
			t.Fatal(err)
		}
		id = "bpt-mcp-" + strings.ReplaceAll(tc.who, "@", "-") + "-" + tc.budget
		res, text := callText(t, cs, "search_kb", map[string]any{"query": "a"}, mcp.Meta{link.MetaRequest: id, link.MetaBudget: tc.budget})
		r, _ = g.rt.Lookup(id)
		if tc.want > 0 {
			if res.IsError || r == nil || r.Budget().ToolCalls != tc.want {
				t.Errorf("MCP, %s: %q (request %v), want it run with %d tool calls", name, text, r, tc.want)
			}
			continue
		}
		if !res.IsError || !strings.Contains(text, "budget_not_permitted") && !strings.Contains(text, "lifts a limit") || !strings.Contains(text, listMe) {
			t.Errorf("MCP, %s: %q, want an isError refusal saying %s", name, text, listMe)
		}
		if r != nil {
			t.Errorf("MCP, %s: request %s began (budget %+v), want none", name, id, r.Budget())
		}
	}
}
