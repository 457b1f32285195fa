package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamThatIsNotMCPSaysWhy: an upstream url that answers HTTP but
// does not connect says what it answered, when that names the fix: a
// server of the HTTP+SSE transport of 2024-11-05 (the SDK's SSE handler),
// which reach does not speak to upstreams, and a Streamable HTTP server's
// base URL with its /mcp left out (404 to an MCP POST). Both read
// `sending "initialize": Not Found; start it or check its url`, and the
// server was running. One that is down still says only to start it.
func TestUpstreamThatIsNotMCPSaysWhy(t *testing.T) {
	server := func() *mcp.Server { return mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil) }
	sse := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server() }, nil))
	defer sse.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server() }, nil))
	streamable := httptest.NewServer(mux)
	defer streamable.Close()
	gone := httptest.NewServer(nil)
	gone.Close()
	for _, tc := range []struct {
		name, url, want, not string
	}{
		{"HTTP+SSE", sse.URL + "/sse", "it serves the HTTP+SSE transport of 2024-11-05 at /sse", ""},
		{"the base URL", streamable.URL, "it answers 404 Not Found to an MCP POST at /: no MCP endpoint is at that path; check the url's path (a Streamable HTTP server often serves /mcp)", ""},
		{"down", gone.URL + "/mcp", "start it or check its url", "it answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			life, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := &host{}
			defer h.close()
			p, err := Connect(t.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: tc.url}}},
				Runner: h, Catalog: h, Levels: h, Models: reach.New(nil), RequireAll: true})
			if err == nil {
				p.Close()
				t.Fatal("it connected")
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || tc.not != "" && strings.Contains(msg, tc.not) {
				t.Errorf("the start failed with %q; want it to say %q", msg, tc.want)
			}
		})
	}
	// The right url connects.
	life, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &host{}
	defer h.close()
	p, err := Connect(t.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: streamable.URL + "/mcp"}}},
		Runner: h, Catalog: h, Levels: h, Models: reach.New(nil), RequireAll: true})
	if err != nil {
		t.Fatalf("the server's /mcp: %v", err)
	}
	p.Close()
}
