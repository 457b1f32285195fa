package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/modelproxy"
)

// failingModel answers every chat completion with status, and counts them.
type failingModel struct {
	status int
	n      atomic.Int64
	auth   atomic.Value // the last Authorization header
}

func (f *failingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.n.Add(1)
	f.auth.Store(r.Header.Get("Authorization"))
	http.Error(w, fmt.Sprintf(`{"error":{"message":"status %d","type":"server_error"}}`, f.status), f.status)
}

// fallbackGateway serves a gateway whose model is primary, with one
// fallback endpoint (fake, answering as the model "backup"), both priced.
func fallbackGateway(t *testing.T, primary http.Handler, fake *fakeOpenAI, extra string) (*Gateway, *httptest.Server) {
	t.Helper()
	p := httptest.NewServer(primary)
	t.Cleanup(p.Close)
	f := httptest.NewServer(fake)
	t.Cleanup(f.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`model:
  base_url: %s/v1
  api_key: sk-primary
  name: main
  prices: {main: {input: 1000, output: 2000}, backup: {input: 100, output: 200}}
  breaker: {failures: 2, open_for: 1h}
  fallbacks:
    - {base_url: %s/v1, model: backup, api_key: sk-fake}
budgets:
  default: {cost: 100}
%s`, p.URL, f.URL, extra)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	return g, serveTest(t, g)
}

// TestModelProxyFallsBack: when the configured model answers 5xx or 429,
// the proxy asks its fallback, passes that answer on (saying which
// endpoint answered), and charges the request at the price of the model
// that answered; after the primary's breaker opens it is not asked at all,
// and /healthz and the metrics show it open.
func TestModelProxyFallsBack(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			primary := &failingModel{status: status}
			fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
			g, srv := fallbackGateway(t, primary, fake, "")
			for i := range 3 {
				id := fmt.Sprintf("f%d", i)
				resp, b := postChat(t, srv.URL, `{"messages":[{"role":"user","content":"hi"}]}`,
					map[string]string{link.HeaderRequest: id, "Authorization": "Bearer client-key"})
				if resp.StatusCode != 200 {
					t.Fatalf("call %d: status %d: %s", i+1, resp.StatusCode, b)
				}
				var out map[string]any
				json.Unmarshal(b, &out)
				if out["model"] != "backup" || !strings.HasSuffix(resp.Header.Get(modelproxy.HeaderFallback), " backup") {
					t.Errorf("call %d: answered by %v, %s %q; want the fallback's model backup", i+1, out["model"], modelproxy.HeaderFallback, resp.Header.Get(modelproxy.HeaderFallback))
				}
				r, _ := g.rt.Lookup(id)
				// 40 input and 7 output tokens at backup's price: 0.004 + 0.0014.
				if u := r.Usage(); u.Tokens != 47 || u.Cost < 0.0053 || u.Cost > 0.0055 {
					t.Errorf("call %d: usage %+v, want 47 tokens at backup's price (0.0054), not main's (0.054)", i+1, u)
				}
			}
			if n := primary.n.Load(); n != 2 {
				t.Errorf("the primary was asked %d times, want 2: its breaker opens after 2 failures", n)
			}
			if a := primary.auth.Load(); a != "Bearer sk-primary" {
				t.Errorf("the primary got Authorization %q", a)
			}
			fake.mu.Lock()
			if len(fake.bodies) != 3 || fake.bodies[0]["model"] != "backup" {
				t.Errorf("the fallback was asked %d times (want 3), for %v", len(fake.bodies), fake.bodies[0]["model"])
			}
			fake.mu.Unlock()
			_, health := do(t, "GET", srv.URL+"/healthz", "", nil)
			found := false
			for _, b := range health["breakers"].([]any) {
				b := b.(map[string]any)
				if b["kind"] == "model" && b["state"] == "open" && strings.HasSuffix(b["name"].(string), "/v1") {
					found = true
				}
			}
			if !found || health["status"] != "degraded" {
				t.Errorf("/healthz = %v, want the primary's breaker open and the status degraded", health)
			}
		})
	}
}

// TestModelProxyFallbackNotForAnAnswer: a 4xx of the configured model is
// its answer, passed on as is: no fallback is asked, and its breaker
// counts no failure.
func TestModelProxyFallbackNotForAnAnswer(t *testing.T) {
	primary := &failingModel{status: http.StatusBadRequest}
	fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
	g, srv := fallbackGateway(t, primary, fake, "")
	for range 3 {
		if resp, b := postChat(t, srv.URL, `{"messages":[]}`, nil); resp.StatusCode != 400 || !strings.Contains(string(b), "status 400") {
			t.Fatalf("status %d: %s, want the primary's 400", resp.StatusCode, b)
		}
	}
	if n := fake.n.Load(); n != 0 {
		t.Errorf("the fallback was asked %d times", n)
	}
	for _, b := range g.rt.Breakers() {
		if b.Kind == "model" && (b.State != reach.BreakerClosed || b.Failures != 0) {
			t.Errorf("breaker %s: %+v, want closed with no failure", b.Name, b)
		}
	}
}

// TestModelProxyAllDown: when every endpoint fails the last failure is
// passed on, and once every breaker is open the proxy answers 503 at once
// with what is down and when it is tried again, asking nobody.
func TestModelProxyAllDown(t *testing.T) {
	primary := &failingModel{status: http.StatusBadGateway}
	backup := &failingModel{status: http.StatusServiceUnavailable}
	p := httptest.NewServer(primary)
	defer p.Close()
	f := httptest.NewServer(backup)
	defer f.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("model:\n  base_url: %s/v1\n  breaker: {failures: 1, open_for: 1h}\n  fallbacks: [{base_url: %s/v1, model: backup}]\n", p.URL, f.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	resp, b := postChat(t, srv.URL, `{"messages":[]}`, map[string]string{"Authorization": "Bearer client-key"})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "status 503") {
		t.Errorf("first call: %d %s, want the fallback's 503 passed on", resp.StatusCode, b)
	}
	if a := backup.auth.Load(); a != "" {
		t.Errorf("the fallback got Authorization %q: the client's key must go to the configured endpoint only", a)
	}
	resp, b = postChat(t, srv.URL, `{"messages":[]}`, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "model_unavailable") ||
		!strings.Contains(string(b), "is unavailable") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with every breaker open: %d %s (Retry-After %q)", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if primary.n.Load() != 1 || backup.n.Load() != 1 {
		t.Errorf("asked primary %d, backup %d times; want once each", primary.n.Load(), backup.n.Load())
	}
}
