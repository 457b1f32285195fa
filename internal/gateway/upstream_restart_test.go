//go:build unix

package gateway

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

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

// TestUpstreamComesBackWithoutACall: an HTTP upstream whose session was
// lost (it went down; a call found it gone) is dialled again in the
// background, so that once it is back /healthz is ok and /readyz 200 with
// no call to it: a load balancer that saw /readyz answer 503 for a required
// upstream sends none.
func TestUpstreamComesBackWithoutACall(t *testing.T) {
	p := newUpstreamProbe()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	up := &http.Server{Handler: h}
	go up.Serve(ln)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: http://"+addr+"/mcp\n    required: true\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	ready := func() (int, string) {
		st, _ := do(t, "GET", srv.URL+"/readyz", "", nil)
		_, out := do(t, "GET", srv.URL+"/healthz", "", nil)
		return st, fmt.Sprint(out["status"])
	}
	up.Close() // the upstream goes down; a call finds it gone
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"c","tool":"up__echo","arguments":{"text":"hi"}}]}`, nil)
	if path(out, "results", 0, "status") == "success" {
		t.Fatalf("the call while the upstream is down = %v", out)
	}
	if st, h := ready(); st != 503 || h != "degraded" {
		t.Fatalf("while the upstream is down: /readyz %d, /healthz %s; want 503 and degraded", st, h)
	}
	ln, err = net.Listen("tcp", addr) // back, on the same address
	if err != nil {
		t.Skipf("the upstream's address was taken meanwhile: %v", err)
	}
	up = &http.Server{Handler: h}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })
	// No call from here on. The background dial tries after 1 s, 2 s,
	// 4 s, ...: well within the deadline, which bounds a failure only.
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, h := ready()
		if st == 200 && h == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream is back but, with no call, /readyz stays %d and /healthz %s", st, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
