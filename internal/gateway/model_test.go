package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestConfiguredModel: with a model configured, format_answer asks it over
// the OpenAI-compatible API with the key from the configuration, and the
// tokens it reports are charged to the request.
func TestConfiguredModel(t *testing.T) {
	var auth atomic.Value
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || !strings.Contains(string(body), "refunds take 30 days") {
			http.Error(w, "unexpected request", 400)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "**Refunds** take 30 days."}}},
			"usage":   map[string]any{"prompt_tokens": 40, "completion_tokens": 7},
		})
	}))
	defer stub.Close()
	t.Setenv("STUB_KEY", "sk-stub")
	cfg, err := config.Parse([]byte("model:\n  base_url: "+stub.URL+"/v1\n  api_key: ${STUB_KEY}\n  name: stub-model\n"), func(k string) (string, bool) {
		return map[string]string{"STUB_KEY": "sk-stub"}[k], k == "STUB_KEY"
	})
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"m","tool_calls":[{"call_id":"f","tool":"format_answer","arguments":{"text":"refunds take 30 days"}}]}`, nil)
	if got := path(out, "results", 0, "data", "markdown"); got != "**Refunds** take 30 days." {
		t.Fatalf("format_answer = %v", out)
	}
	if got, _ := auth.Load().(string); got != "Bearer sk-stub" {
		t.Errorf("Authorization = %q", got)
	}
	r, _ := g.rt.Lookup("m")
	if got := r.Usage().Tokens; got != 47 {
		t.Errorf("tokens charged = %d, want 47", got)
	}
	var model bool
	for _, f := range r.Frames() {
		if f.Name == "stub-model" && f.Parent != nil && f.Parent.Name == "format_answer" {
			model = true
		}
	}
	if !model {
		t.Errorf("no stub-model frame under format_answer")
	}
}
