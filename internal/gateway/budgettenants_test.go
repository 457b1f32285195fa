package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy"
)

// tenantBudgets lifts the default's limits for every principal of tenant
// acme (team), and for nobody (research).
const tenantBudgets = "budgets:\n  default: {tool_calls: 20, tokens: 5000}\n  team: {tool_calls: 100, tokens: 0, tenants: [acme]}\n  research: {tool_calls: 0}\n"

// tenantCallers are API keys of principals in tenants that are acme, or
// look like it: compared exactly, only alice's and bob's are acme.
var tenantCallers = []struct {
	principal, tenant string
	may               bool // may name team
}{
	{"alice", "acme", true},
	{"bob", "acme", true},           // listed by no name: by its tenant
	{"eve", "Acme", false},          // case
	{"mallory", "\u0430cme", false}, // a Cyrillic а
	{"acme", "", false},             // a principal named as the tenant, in none
}

// budgetTenantGateway is an authenticating gateway with tenantBudgets, a model
// (answering "ok") and an A2A agent, executor (echoing), and a key for each
// of tenantCallers (reviewers, who may search the knowledge base).
func budgetTenantGateway(t *testing.T) (g *Gateway, url string, keys map[string]string, asked *int) {
	t.Helper()
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.cedar")
	os.WriteFile(polFile, policy.DefaultSource(), 0o600)
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for _, c := range tenantCallers {
		secret, _, err := ks.Create(auth.KeySpec{Principal: c.principal, Roles: []string{"reviewer"}, Tenant: c.tenant})
		if err != nil {
			t.Fatal(err)
		}
		keys[c.principal] = secret
	}
	asked = new(int)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*asked++
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c","object":"chat.completion","model":"fake","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	t.Cleanup(model.Close)
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	card := &a2a.AgentCard{Name: "executor", Description: "echoes", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "run", Name: "run", Description: "run", Tags: []string{"run"}}}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoAgent{})))
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\npolicy: {path: "+polFile+"}\n"+
		"model: {base_url: '"+model.URL+"/v1', api_key: sk-live-SECRET-9f8e7d, name: fake}\n"+
		"agents:\n  - {name: executor, url: "+up.URL+"}\n"+tenantBudgets), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g = newTestGateway(t, cfg)
	return g, serveTest(t, g).URL, keys, asked
}

// budgetClientEnv finds the real clients testdata/budget/client.cjs runs:
// the MCP TypeScript SDK and the A2A JS SDK (scripts/a2a-deps.sh) and the
// OpenAI SDK (scripts/frameworks-deps.sh); it skips, or under REACH_CI
// fails, as a2aCache does.
func budgetClientEnv(t *testing.T) []string {
	t.Helper()
	a2aDir := a2aCache(t)
	fw := os.Getenv("REACH_FRAMEWORKS_CACHE")
	if fw == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		fw = filepath.Join(root, ".cache", "frameworks")
	}
	if _, err := os.Stat(filepath.Join(fw, "node_modules", "openai", "package.json")); err != nil {
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf("openai is not installed in %s: run scripts/frameworks-deps.sh (make test does)", fw)
		}
		t.Skipf("openai is not installed in %s: run scripts/frameworks-deps.sh (make test does)", fw)
	}
	return append(os.Environ(), "NODE_PATH="+filepath.Join(a2aDir, "node_modules")+string(os.PathListSeparator)+filepath.Join(fw, "node_modules"))
}

// clientResult is what testdata/budget/client.cjs prints.
type clientResult struct {
	OK                bool
	Code, State, Text string
	Status            int
}

// TestNamedBudgetTenantsRealClients: every principal of a tenant a budget
// lists may name it, through the MCP TypeScript SDK (_meta reach/budget),
// the A2A JS SDK (the message's metadata reach/budget) and the OpenAI SDK
// (the Reach-Budget header), and gets its amounts; a caller of a tenant
// that only looks like it (case, a Cyrillic letter) or of none, whose
// principal is named as the tenant, is refused by each protocol's own
// refusal (an isError result, a rejected task, a 403 OpenAI-style error)
// with nothing begun or run. Before, a budget could list only principals,
// and A2A read no budget from a message's metadata.
func TestNamedBudgetTenantsRealClients(t *testing.T) {
	env := budgetClientEnv(t)
	g, url, keys, asked := budgetTenantGateway(t)
	script, err := filepath.Abs("testdata/budget/client.cjs")
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"mcp", "a2a", "openai"} {
		// One node process a protocol, calling as each caller in turn.
		type call struct {
			Key     string `json:"key"`
			Request string `json:"request"`
		}
		var calls []call
		for _, c := range tenantCallers {
			calls = append(calls, call{keys[c.principal], "tb-" + proto + "-" + c.principal})
		}
		cj, _ := json.Marshal(calls)
		cmd := exec.CommandContext(t.Context(), "node", script)
		cmd.Env = append(env, "PROTO="+proto, "REACH="+url, "BUDGET=team", "CALLS="+string(cj))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", proto, err, stderr.String())
		}
		var results []clientResult
		if err := json.Unmarshal(out, &results); err != nil || len(results) != len(calls) {
			t.Fatalf("%s: %q: %v, want %d results", proto, out, err, len(calls))
		}
		for i, c := range tenantCallers {
			id, res := calls[i].Request, results[i]
			r, _ := g.rt.Lookup(id)
			if c.may {
				if !res.OK || r == nil {
					t.Errorf("%s, %s of %q naming team: %+v (request %v), want it allowed", proto, c.principal, c.tenant, res, r)
				} else if got := r.Budget(); got.ToolCalls != 100 || got.Tokens != 0 {
					t.Errorf("%s, %s of %q naming team: budget %+v, want team's (100 tool calls, unlimited tokens)", proto, c.principal, c.tenant, got)
				}
				continue
			}
			if r != nil {
				t.Errorf("%s, %s of %q naming team: request %s began (budget %+v), want none", proto, c.principal, c.tenant, id, r.Budget())
			}
			switch proto {
			case "mcp":
				if res.OK || res.Code != "budget_not_permitted" {
					t.Errorf("mcp, %s of %q naming team: %+v, want an isError result with code budget_not_permitted", c.principal, c.tenant, res)
				}
			case "a2a":
				if res.State != "TASK_STATE_REJECTED" || !strings.Contains(res.Text, "budgets.team.tenants") {
					t.Errorf("a2a, %s of %q naming team: %+v, want a rejected task saying where its tenants are listed", c.principal, c.tenant, res)
				}
			case "openai":
				if res.OK || res.Status != http.StatusForbidden || res.Code != "budget_not_permitted" {
					t.Errorf("openai, %s of %q naming team: %+v, want a 403 budget_not_permitted", c.principal, c.tenant, res)
				}
			}
			if strings.Contains(res.Text, "research") {
				t.Errorf("%s, %s: the refusal %q names research, which no client may name", proto, c.principal, res.Text)
			}
		}
	}
	if *asked != 2 {
		t.Errorf("the model was asked %d times, want 2 (alice's and bob's)", *asked)
	}
}
