package upstream

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
)

// TestRequiredUpstreamDownSaysWhatToCheck: a required upstream that does
// not answer fails the start with what to do, in words: "check its url,
// or ...", "check its command, or ...". It read "check its url:, or".
func TestRequiredUpstreamDownSaysWhatToCheck(t *testing.T) {
	gone := httptest.NewServer(nil)
	gone.Close()
	for _, tc := range []struct {
		name string
		up   config.Upstream
		all  bool
		want string
	}{
		{"url, required", config.Upstream{Name: "up", URL: gone.URL + "/mcp", Required: true}, false,
			"; start it or check its url, or drop required: true to serve without it"},
		{"url, validate", config.Upstream{Name: "up", URL: gone.URL + "/mcp"}, true,
			"; start it or check its url, or check the rest without contacting upstreams: reach validate --offline"},
		{"command, required", config.Upstream{Name: "up", Command: []string{"/nonexistent/mcp-server"}, Required: true}, false,
			"; start it or check its command, or drop required: true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			life, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := &host{}
			defer h.close()
			p, err := Connect(t.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{tc.up}},
				Runner: h, Catalog: h, Levels: h, Models: reach.New(nil), RequireAll: tc.all})
			if err == nil {
				p.Close()
				t.Fatal("an upstream that does not answer connected")
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, ":,") {
				t.Fatalf("the start failed with %q; want it to say %q", msg, tc.want)
			}
		})
	}
}
