package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestFrameworksFallbackContextLimit36 (model.context_limits,
// model.fallbacks): the model down (503), a turn too long for its only
// fallback's window, sent by the openai SDK and by the AI SDK with their
// default retries, is answered once each with reach's 403
// context_length_exceeded (x-should-retry: false), the fallback never
// asked, and each SDK surfaces reach's words: the window and to shorten
// the history. Before, the turn went to the fallback, whose own 400 came
// back (and a provider that truncates would have answered the turn cut).
func TestFrameworksFallbackContextLimit36(t *testing.T) {
	dir, node := frameworksCacheOf(t, "openai", "ai", "@ai-sdk/openai")
	var primaryAsked, fallbackAsked, served atomic.Int64
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		primaryAsked.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}))
	t.Cleanup(primary.Close)
	fallback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fallbackAsked.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"This model's maximum context length is 4000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	}))
	t.Cleanup(fallback.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("model:\n  base_url: '%s/v1'\n  name: small\n  context_limits: {small: 100000, tiny: 4000}\n  fallbacks: [{base_url: '%s/v1', model: tiny}]\n",
		primary.URL, fallback.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	h := g.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			served.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	script := writeScript(t, dir, "reach-fallbackcontext36", []byte(contextScript))
	cmd := exec.CommandContext(t.Context(), node, script, srv.URL+"/v1")
	cmd.Dir = dir
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("the script: %v\n%s", err, raw)
	}
	var out map[string]struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("the script printed %s: %v", raw, err)
	}
	for _, sdk := range []string{"openai", "aisdk"} {
		r := out[sdk]
		if r.Status != http.StatusForbidden || !strings.Contains(r.Message, "context window") || !strings.Contains(r.Message, "tiny") ||
			!strings.Contains(r.Message, "Shorten the conversation's history") {
			t.Errorf("%s surfaced %d %q, want 403 with reach's words (the fallback's window, to shorten the history)", sdk, r.Status, r.Message)
		}
	}
	if n := served.Load(); n != 2 {
		t.Errorf("reach served %d model turns, want 2 (one an SDK, no retry)", n)
	}
	if n := fallbackAsked.Load(); n != 0 {
		t.Errorf("the fallback was asked %d times, want 0", n)
	}
	if n := primaryAsked.Load(); n != 2 {
		t.Errorf("the model was asked %d times, want 2", n)
	}
}
