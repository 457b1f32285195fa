package gateway

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestNPMUpstreamNotMCPSaysWhy: the real server-everything from npm,
// given as a required upstream by the URLs a new user tries first: its
// HTTP+SSE transport's /sse, and its Streamable HTTP server's base URL
// without /mcp. The start failed with `sending "initialize": Not Found;
// start it or check its url` while the server ran; now it says that the
// first is the HTTP+SSE transport, which reach does not speak to upstreams,
// and that the second has no MCP endpoint at its path.
func TestNPMUpstreamNotMCPSaysWhy(t *testing.T) {
	cache := npmCache(t)
	sse := startEverythingOn(t, cache, "sse")
	streamable := startEverythingOn(t, cache, "streamableHttp")
	for _, tc := range []struct{ url, want string }{
		{sse + "/sse", "it serves the HTTP+SSE transport of 2024-11-05 at /sse (its stream names an endpoint to post to), which reach does not speak to upstreams"},
		{streamable, "it answers 404 Not Found to an MCP POST at /: no MCP endpoint is at that path; check the url's path"},
	} {
		cfg, err := config.Parse([]byte(fmt.Sprintf("data: %s\nupstreams:\n  - {name: every, url: '%s', required: true, timeout: 20s}\n", t.TempDir(), tc.url)), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(context.Background(), cfg, nil)
		if err == nil {
			g.Close()
			t.Fatalf("%s: the gateway started", tc.url)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: the start failed with %q; want it to say %q", tc.url, err, tc.want)
		}
	}
	// Its /mcp is the one that connects.
	cfg, err := config.Parse([]byte(fmt.Sprintf("data: %s\nupstreams:\n  - {name: every, url: '%s/mcp', required: true, timeout: 20s}\n", t.TempDir(), streamable)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("its /mcp: %v", err)
	}
	g.Close()
}
