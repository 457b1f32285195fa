package gateway

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestRateLimitedTurnInGraphAndAudit (R8): a model turn refused by
// rate_limit.model shows in its request's graph and in the audit log as a
// refused model frame, rate_limited; the request counts one turn, the
// one the model answered.
func TestRateLimitedTurnInGraphAndAudit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`))
	}))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("model:\n  base_url: "+up.URL+"/v1\n  api_key: sk-fake\n  name: fake\nexamples: true\nrate_limit: {model: {per_principal: 0.001, per_principal_burst: 1}}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	for i, want := range []int{http.StatusOK, http.StatusForbidden} {
		status, _ := do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"go"}]}`, map[string]string{"Reach-Request": "rl-graph"})
		if status != want {
			t.Fatalf("turn %d: %d, want %d", i+1, status, want)
		}
	}
	graph := getBody(t, g, "/v1/requests/rl-graph/graph?format=json")
	if !strings.Contains(graph, "rate_limited") {
		t.Errorf("the request's graph shows no refused turn: %s", graph)
	}
	if a := auditOf(t, g, "rl-graph"); !strings.Contains(a, "rate_limited") {
		t.Errorf("the audit log has no refused turn: %s", a)
	}
}
