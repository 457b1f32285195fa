package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// namedBudgets is a configuration whose budgets lower the default's
// (small), lift it for nobody (research: a written 0 is unlimited; bulk:
// more tool calls), and lift it for alice only (team).
const namedBudgets = "budgets:\n  default: {tool_calls: 20}\n  small: {tool_calls: 5}\n  research: {tool_calls: 0}\n  bulk: {tool_calls: 500}\n  team: {tool_calls: 100, principals: [alice]}\n"

// TestMCPNamedBudgetNeedsPrincipal: over HTTP MCP, a client may name a
// budget that only lowers the default's, and one that lifts a limit only
// when it lists the client's principal. Before, any client could name any
// configured budget: `research` gave it unlimited tool calls. A refusal is
// an isError result that runs nothing, says what to do, and names only the
// budgets the caller may name.
func TestMCPNamedBudgetNeedsPrincipal(t *testing.T) {
	g, url, _, keys := authGateway(t, namedBudgets)
	for _, tc := range []struct {
		who, budget string
		want        int // the request's tool calls; 0: refused
	}{
		{"bob", "small", 5},
		{"bob", "default", 20},
		{"alice", "team", 100},
		{"bob", "team", 0},
		{"bob", "research", 0},
		{"alice", "research", 0},
		{"bob", "bulk", 0},
	} {
		cs, err := mcpAs(t, url, keys[tc.who])
		if err != nil {
			t.Fatal(err)
		}
		id := "nb-" + tc.who + "-" + tc.budget
		res, text := callText(t, cs, "search_kb", map[string]any{"query": "a"}, mcp.Meta{link.MetaRequest: id, link.MetaBudget: tc.budget})
		r, _ := g.rt.Lookup(id)
		if tc.want > 0 {
			if res.IsError || r == nil {
				t.Fatalf("%s naming %s: refused: %s", tc.who, tc.budget, text)
			}
			if got := r.Budget().ToolCalls; got != tc.want {
				t.Errorf("%s naming %s: tool calls %d, want %d", tc.who, tc.budget, got, tc.want)
			}
			continue
		}
		if !res.IsError {
			t.Fatalf("%s naming %s: allowed (%s), want a refusal", tc.who, tc.budget, text)
		}
		if r != nil {
			t.Errorf("%s naming %s: request %s began (budget %+v), want none", tc.who, tc.budget, id, r.Budget())
		}
		may := "default, small"
		if tc.who == "alice" {
			may = "default, small, team"
		}
		if !strings.Contains(text, may) {
			t.Errorf("%s naming %s: %q does not list the budgets it may name (%s)", tc.who, tc.budget, text, may)
		}
		for _, hidden := range []string{"research", "bulk", "team"} {
			if hidden != tc.budget && !strings.Contains(may, hidden) && strings.Contains(text, hidden) {
				t.Errorf("%s naming %s: %q names budget %s, which it may not name", tc.who, tc.budget, text, hidden)
			}
		}
		if !strings.Contains(text, "ask the operator") {
			t.Errorf("%s naming %s: %q does not say what to do", tc.who, tc.budget, text)
		}
	}
}

// TestAPIAndA2ANamedBudgetNeedsPrincipal: the HTTP API (/v1/calls) answers
// a budget the caller may not name with its error, 403, and an A2A message
// that names one is a rejected task, handed to no agent.
func TestAPIAndA2ANamedBudgetNeedsPrincipal(t *testing.T) {
	g, url, _, keys := authGateway(t, namedBudgets)
	body := `{"request_id":"api-research","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"a"}}]}`
	code, out := do(t, "POST", url+"/v1/calls", body, map[string]string{"Authorization": "Bearer " + keys["bob"], link.HeaderBudget: "research"})
	if code != http.StatusForbidden || path(out, "error", "code") != "budget_not_permitted" {
		t.Errorf("/v1/calls naming research: %d %v, want 403 budget_not_permitted", code, out)
	}
	if r, _ := g.rt.Lookup("api-research"); r != nil {
		t.Errorf("a refused budget began request api-research")
	}
	code, out = do(t, "POST", url+"/v1/calls", strings.ReplaceAll(body, "api-research", "api-team"), map[string]string{"Authorization": "Bearer " + keys["alice"], link.HeaderBudget: "team"})
	if r, _ := g.rt.Lookup("api-team"); code != http.StatusOK || r == nil || r.Budget().ToolCalls != 100 {
		t.Errorf("/v1/calls, alice naming team: %d %v, want 200 and a request of 100 tool calls", code, out)
	}

	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	card := &a2a.AgentCard{Name: "executor", Description: "echoes", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "run", Name: "run", Description: "run", Tags: []string{"run"}}}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoAgent{})))
	cfg, err := config.Parse([]byte(namedBudgets+"agents:\n  - {name: executor, url: "+up.URL+", budget: research}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, newTestGateway(t, cfg)).URL
	for budget, want := range map[string]a2a.TaskState{"research": a2a.TaskStateRejected, "small": a2a.TaskStateCompleted} {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(&http.Client{Transport: withHeader{"Baggage", "reach.budget=" + budget, http.DefaultTransport}}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
		if err != nil {
			t.Fatal(err)
		}
		tk, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("%s: got %T", budget, res)
		}
		if tk.Status.State != want {
			t.Errorf("a message naming %s: task %s %q, want %s", budget, tk.Status.State, textOf(tk), want)
		}
		if want == a2a.TaskStateRejected && (!strings.Contains(textOf(tk), "default, small") || strings.Contains(textOf(tk), "bulk")) {
			t.Errorf("rejected task %q: want the budgets the caller may name, and only those", textOf(tk))
		}
	}
}

// withHeader sets one header on every request.
type withHeader struct {
	name, value string
	base        http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.base.RoundTrip(r)
}

// TestModelRouteNamedBudgetNeedsPrincipal: the model route refuses a
// Reach-Budget that lifts a limit of the default's to a principal it does
// not list (here the local one, nobody authenticated) with 403 and an
// OpenAI-style error, before the model is asked; "*" lets every one name it.
func TestModelRouteNamedBudgetNeedsPrincipal(t *testing.T) {
	asked := 0
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		asked++
		w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}, "budgets:\n  default: {tool_calls: 3, tokens: 5000}\n  small: {tokens: 100}\n  research: {tokens: 0}\n  shared: {tokens: 20000, principals: [\"*\"]}\n")
	resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "m-research", link.HeaderBudget: "research"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("research (unlimited tokens, no principals): %d %s, want 403", resp.StatusCode, b)
	}
	var e struct {
		Error struct{ Code, Message, Type string }
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != "budget_not_permitted" || e.Error.Type == "" {
		t.Fatalf("refusal %s: want an OpenAI-style error with code budget_not_permitted", b)
	}
	if !strings.Contains(e.Error.Message, "default, shared, small") || !strings.Contains(e.Error.Message, "ask the operator") {
		t.Errorf("refusal %q: want the budgets it may name and what to do", e.Error.Message)
	}
	if asked != 0 {
		t.Errorf("the model was asked %d times for a refused budget", asked)
	}
	if r, _ := g.rt.Lookup("m-research"); r != nil {
		t.Errorf("a refused budget began request m-research (budget %+v)", r.Budget())
	}
	// A name that is no budget: the refusal lists only those it may name.
	resp, b = postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "m-nope", link.HeaderBudget: "nope"})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "default, shared, small") || strings.Contains(string(b), "research") {
		t.Errorf("an unknown budget: %d %s, want 400 listing default, shared, small and not research", resp.StatusCode, b)
	}
	for name, tokens := range map[string]int64{"small": 100, "shared": 20000} {
		id := "m-" + name
		if resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: id, link.HeaderBudget: name}); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		if r, _ := g.rt.Lookup(id); r == nil || r.Budget().Tokens != tokens {
			t.Errorf("%s: request %v, want a budget of %d tokens", name, r, tokens)
		}
	}
}

// TestWarnsOfBudgetNoClientMayName: reach validate (the gateway's
// warnings) explains a budget that lifts a limit and lists no principals.
func TestWarnsOfBudgetNoClientMayName(t *testing.T) {
	g, _, _, _ := authGateway(t, namedBudgets)
	var got []string
	for _, w := range g.Warnings() {
		if strings.HasPrefix(w, "budget ") {
			got = append(got, w)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], "budget research lifts the default budget's tool_calls") || !strings.Contains(got[1], "budget bulk lifts") {
		t.Errorf("budget warnings = %q, want research and bulk (team lists alice, small lowers)", got)
	}
}
