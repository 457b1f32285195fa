package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach/internal/config"
)

// TestStartErrorMasksURLSecrets: an upstream's URL may carry its key in
// the query (?key=, ?api_key=: ${VAR} is not expanded in a URL), and every
// dial error quotes the URL. The log and the banner mask it; the error New
// returns, which `reach serve` (a required upstream) and `reach validate`
// print, must mask it too, and still say which upstream and line.
func TestStartErrorMasksURLSecrets(t *testing.T) {
	const key, apiKey = "AIzaQueryKey9876", "sk-query-api-key-1234"
	yaml := "upstreams:\n  - name: gone\n    url: http://" + freeAddr(t) + "/mcp?key=" + key + "&api_key=" + apiKey + "\n    timeout: 2s\n    required: true\n"
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err == nil {
		g.Close()
		t.Fatal("New succeeded with an unreachable required upstream")
	}
	msg := err.Error()
	for _, s := range []string{key, apiKey} {
		if strings.Contains(msg, s) {
			t.Errorf("error %q quotes the URL's secret %q", msg, s)
		}
	}
	for _, w := range []string{"line 2", "upstream gone"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

// TestAgentURLSecretsStayHidden: an A2A agent's URL may carry its key in
// the query as an upstream's may; every error about the agent quotes the
// URL (its card's address). The key reached the model (the failed task's
// message), GET /v1/agents, validate's warnings and the log.
func TestAgentURLSecretsStayHidden(t *testing.T) {
	const key = "AIzaAgentKey55555"
	cfg, err := config.Parse([]byte("agents:\n  - {name: ex, url: 'http://"+freeAddr(t)+"/a2a?key="+key+"'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	base := serveTest(t, g).URL
	warnings, err := g.CheckAgents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) == 0 {
		t.Fatal("no warning about an agent that does not answer")
	}
	for _, w := range warnings {
		if strings.Contains(w, key) {
			t.Errorf("validate's warning %q quotes the agent URL's key", w)
		}
	}
	code, out := do(t, "GET", base+"/v1/agents", "", nil)
	if b, _ := json.Marshal(out); code != 200 || strings.Contains(string(b), key) || !strings.Contains(string(b), `"ex"`) {
		t.Errorf("GET /v1/agents: %d %s", code, b)
	}
	tk := a2aSend(t, base, "ex", "hi")
	if tk.Status.State != a2a.TaskStateFailed {
		t.Fatalf("task %s %q, want failed", tk.Status.State, textOf(tk))
	}
	if txt := textOf(tk); strings.Contains(txt, key) || !strings.Contains(txt, "agent ex") {
		t.Errorf("the failed task's message %q quotes the agent URL's key (or lacks the agent)", txt)
	}
}
