package gateway

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestModelUsageLieDoesNotWrap: a fallback endpoint that reports the most
// prompt tokens an int64 holds, after the primary timed out (its prompt
// estimated and added), is charged everything: the sum wrapped below zero
// and was charged as none, the request's budget untouched.
func TestModelUsageLieDoesNotWrap(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(primary.Close)
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"backup","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, int64(math.MaxInt64), int64(math.MaxInt64))
	}))
	t.Cleanup(liar.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`model:
  base_url: %s/v1
  api_key: sk-primary
  name: main
  timeout: 1s
  fallbacks:
    - {base_url: %s/v1, model: backup, api_key: sk-fake}
budgets:
  default: {tokens: 1000000}
`, primary.URL, liar.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	resp, b := postChat(t, srv.URL, `{"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{link.HeaderRequest: "liar1", "Authorization": "Bearer client-key"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	r, ok := g.rt.Lookup("liar1")
	if !ok {
		t.Fatal("no request liar1")
	}
	if u := r.Usage(); u.Tokens < 1000000 {
		t.Errorf("usage %+v after an answer that reported %d prompt tokens; want the budget spent", u, int64(math.MaxInt64))
	}
}
