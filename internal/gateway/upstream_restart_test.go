//go:build unix

package gateway

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHealthzSaysWhenAnUpstreamIsDown: a call that cannot reach an HTTP
// upstream (it went down; the gateway's session still looks open) makes
// /healthz degraded, naming the upstream and why; a call that reaches it
// again makes it ok.
func TestHealthzSaysWhenAnUpstreamIsDown(t *testing.T) {
	p := newUpstreamProbe()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	up := &http.Server{Handler: h}
	go up.Serve(ln)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: http://"+addr+"/mcp\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	call := func() map[string]any {
		_, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"c","tool":"up__echo","arguments":{"text":"hi"}}]}`, nil)
		return out
	}
	health := func() (string, any) {
		_, out := do(t, "GET", srv.URL+"/healthz", "", nil)
		return fmt.Sprint(out["status"]), path(out, "upstreams", 0)
	}
	if out := call(); path(out, "results", 0, "status") != "success" {
		t.Fatalf("the call while the upstream is up = %v", out)
	}
	if st, u := health(); st != "ok" {
		t.Fatalf("healthz while the upstream is up = %s %v", st, u)
	}
	up.Close() // the upstream goes down
	if out := call(); path(out, "results", 0, "status") == "success" {
		t.Fatalf("the call while the upstream is down = %v", out)
	}
	if st, u := health(); st != "degraded" || path(u, "connected") != false || path(u, "error") == nil {
		t.Errorf("healthz while the upstream is down = %s %v, want degraded with why", st, u)
	}
	ln, err = net.Listen("tcp", addr) // back, on the same address
	if err != nil {
		t.Skipf("the upstream's address was taken meanwhile: %v", err)
	}
	up = &http.Server{Handler: h}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })
	if out := call(); path(out, "results", 0, "status") != "success" {
		t.Fatalf("the call once the upstream is back = %v", out)
	}
	if st, u := health(); st != "ok" {
		t.Errorf("healthz once the upstream is back = %s %v", st, u)
	}
}
