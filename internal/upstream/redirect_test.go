package upstream

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's configured headers (its credentials) go to its own origin
// only. An endpoint that redirects to another host (moved, an open
// redirect, a hostile upstream) had them sent there too: the transport
// added them to every request, the redirected ones included, where
// net/http's own redirect rules would have dropped an Authorization.
func TestUpstreamHeadersNotSentToRedirectTarget(t *testing.T) {
	var mu sync.Mutex
	var seen []string // Authorization headers the other host got
	var reached int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached++
		seen = append(seen, r.Header.Values("Authorization")...)
		seen = append(seen, r.Header.Values("X-Api-Key")...)
		mu.Unlock()
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, &mcp.StreamableHTTPOptions{Stateless: true}).ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	mover := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(mover.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: mover.URL + "/mcp",
		Headers: map[string]config.Secret{"Authorization": "Bearer s3cret", "X-Api-Key": "k3y"}}}})
	if tools := p.Tools(); len(tools) != 1 {
		t.Errorf("tools through the redirect: %v, want the echo tool", tools)
	}
	mu.Lock()
	defer mu.Unlock()
	if reached == 0 {
		t.Fatal("the redirect was not followed")
	}
	if slices.Contains(seen, "Bearer s3cret") || slices.Contains(seen, "k3y") {
		t.Errorf("the host the upstream redirected to got its credentials: %q", seen)
	}
}
