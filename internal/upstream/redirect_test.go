package upstream

import (
	"net/http"
	"net/http/httptest"
	"net/url"
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

// headerSeen is a base transport that records the Authorization header of
// the last request it took.
type headerSeen struct{ auth string }

func (h *headerSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	h.auth = r.Header.Get("Authorization")
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// An upstream's headers go to its own origin and to the upgrade to https
// of the same host, which an http upstream's redirect to https asks for
// (its default port 80 to https's 443, any other port to itself): sent
// to the origin's exact scheme and host alone, the redirected request went
// without them and got the upstream's 401. Never to another host or port,
// never down from https to http.
func TestUpstreamHeadersFollowRedirectToHTTPS(t *testing.T) {
	for _, c := range []struct {
		upstream, to string
		sent         bool
	}{
		{"http://h.example/mcp", "http://h.example/mcp", true},
		{"http://h.example/mcp", "https://h.example/mcp", true},
		{"http://h.example/mcp", "https://H.example:443/mcp", true},
		{"http://h.example:80/mcp", "https://h.example/mcp", true},
		{"http://h.example:8080/mcp", "https://h.example:8080/mcp", true},
		{"https://h.example/mcp", "https://h.example:443/x", true},
		{"http://h.example/mcp", "https://h.example:8443/mcp", false},
		{"http://h.example:8080/mcp", "https://h.example/mcp", false},
		{"http://h.example/mcp", "https://other.example/mcp", false},
		{"http://h.example/mcp", "https://h.example.other.example/mcp", false},
		{"https://h.example/mcp", "http://h.example/mcp", false},
		{"https://h.example:8443/mcp", "http://h.example:8443/mcp", false},
		{"http://h.example:8080/mcp", "http://h.example:8081/mcp", false},
	} {
		o, _ := url.Parse(c.upstream)
		base := &headerSeen{}
		ht := &headerTransport{base: base, headers: map[string]config.Secret{"Authorization": "Bearer s3cret"}, scheme: o.Scheme, host: o.Host}
		req, err := http.NewRequest(http.MethodPost, c.to, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ht.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if sent := base.auth == "Bearer s3cret"; sent != c.sent {
			t.Errorf("upstream %s, request to %s: headers sent %v, want %v", c.upstream, c.to, sent, c.sent)
		}
	}
}
