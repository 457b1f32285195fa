package gateway

import (
	"context"
	"github.com/agentreach/reach/internal/config"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// freeAddr returns a loopback address nobody listens on (for now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestStartsDegraded: an upstream that cannot be reached at start does not
// stop the gateway: it starts without that upstream's tools, /healthz says
// degraded, /readyz is ready, a call to one of its tools says the upstream
// is not reachable yet, and once the upstream comes up its tools join and
// answer. A required upstream that cannot be reached fails the start,
// naming it and its line.
func TestStartsDegraded(t *testing.T) {
	addr := freeAddr(t)
	cfg, err := config.Parse([]byte("examples: true\nupstreams:\n  - name: up\n    url: http://"+addr+"/mcp\n    timeout: 2s\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("a gateway whose upstream is down did not start: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	srv := serveTest(t, g)
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || !strings.Contains(body, `"status":"degraded"`) {
		t.Errorf("/healthz = %d %s, want degraded", code, body)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d %s, want ready: the upstream is not required", code, body)
	}
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"up__echo","arguments":{"text":"hi"}}]}`, nil)
	if path(out, "results", 0, "error", "code") != "upstream_unavailable" || !strings.Contains(path(out, "results", 0, "error", "message").(string), "upstream up") {
		t.Errorf("a call to the down upstream's tool = %v, want upstream_unavailable naming it", out)
	}
	if _, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"b","tool":"search_kb","arguments":{"query":"q"}}]}`, nil); path(out, "results", 0, "status") != "success" {
		t.Errorf("the other tools do not work while the upstream is down: %v", out)
	}

	// The upstream comes up on its address: its tools join.
	p := newUpstreamProbe()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the address was taken meanwhile: %v", err)
	}
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil))
	up.Listener.Close()
	up.Listener = ln
	up.Start()
	t.Cleanup(up.Close)
	t.Cleanup(func() { g.Close() }) // first: its session to the upstream ends before the upstream closes
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, out = do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"c","tool":"up__echo","arguments":{"text":"hi"}}]}`, nil)
		if path(out, "results", 0, "status") == "success" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream's tool never joined: %v", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("/healthz after the upstream came = %d %s, want ok", code, body)
	}

	// Required: the start fails.
	cfg, err = config.Parse([]byte("upstreams:\n  - name: up\n    url: http://"+freeAddr(t)+"/mcp\n    timeout: 2s\n    required: true\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	if g, err := New(context.Background(), cfg, nil); err == nil {
		g.Close()
		t.Error("a gateway whose required upstream is down started")
	} else if !strings.Contains(err.Error(), "upstream up") || !strings.Contains(err.Error(), "line 2") ||
		!strings.Contains(err.Error(), "or drop required: true to serve without it") {
		t.Errorf("the start failed with %v, want the upstream, its line and what to do", err)
	}
}
