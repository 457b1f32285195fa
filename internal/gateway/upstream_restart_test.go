//go:build unix

package gateway

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioWithPIDs configures a stdio upstream (the probe) that appends the
// id of each process of it to a file, and returns the file.
func stdioWithPIDs(t *testing.T) (*config.Config, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(t.TempDir(), "pids")
	return &config.Config{Upstreams: []config.Upstream{{Name: "io", Command: []string{"sh", "-c", `echo $$ >> "$PIDFILE"; exec "$0"`, exe},
		Env: map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": "1", "PIDFILE": config.Secret(pids)}}}}, pids
}

func readPIDs(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pid)
	}
	return out
}

// TestStdioUpstreamRestartsOnceForConcurrentCalls: after a stdio upstream's
// process exits, the calls that come in together start one new process
// between them, not one each.
func TestStdioUpstreamRestartsOnceForConcurrentCalls(t *testing.T) {
	cfg, pidFile := stdioWithPIDs(t)
	g := newTestGateway(t, cfg)
	u := g.upstreams[0]
	u.mu.Lock()
	first := u.cs
	u.mu.Unlock()
	pids := readPIDs(t, pidFile)
	if len(pids) != 1 {
		t.Fatalf("processes started = %v, want 1", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	waitUntil(t, "the upstream to be seen disconnected", func() bool { return !g.Upstreams()[0].Connected })

	cs := connectMCP(t, g, nil)
	const n = 16
	var wg sync.WaitGroup
	texts := make([]string, n)
	for i := range n {
		wg.Go(func() {
			_, texts[i] = callText(t, cs, "io__echo", map[string]any{"text": strconv.Itoa(i)}, nil)
		})
	}
	wg.Wait()
	for i, text := range texts {
		if want := "echo: " + strconv.Itoa(i); text != want {
			t.Errorf("call %d = %q, want %q", i, text, want)
		}
	}
	if got := readPIDs(t, pidFile); len(got) != 2 {
		t.Errorf("%d calls after the upstream exited started %d processes, want 1", n, len(got)-1)
	}
}

// TestLateFailureKeepsTheNewSession: a call that was in flight on a stdio
// upstream's process when it died may fail after another call has started
// a new process; that failure must not drop the new session (which nothing
// would then close: its process would outlive the gateway), and the next
// call uses it rather than starting a third process.
func TestLateFailureKeepsTheNewSession(t *testing.T) {
	cfg, pidFile := stdioWithPIDs(t)
	g := newTestGateway(t, cfg)
	u := g.upstreams[0]
	u.mu.Lock()
	first := u.cs
	u.mu.Unlock()
	if err := syscall.Kill(readPIDs(t, pidFile)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	waitUntil(t, "the upstream to be seen disconnected", func() bool { return !g.Upstreams()[0].Connected })
	cs := connectMCP(t, g, nil)
	if _, text := callText(t, cs, "io__echo", map[string]any{"text": "a"}, nil); text != "echo: a" {
		t.Fatalf("io__echo after the restart = %q", text)
	}
	u.mu.Lock()
	second := u.cs
	u.mu.Unlock()
	// The late failure of a call that ran on the first session, as
	// forward sees it.
	late := fmt.Errorf("calling \"tools/call\": %w", mcp.ErrConnectionClosed)
	u.failed(first, late)
	if te, ok := u.callError(late).(*reach.ToolError); !ok || te.Type != "unavailable" {
		t.Errorf("callError = %v, want unavailable", te)
	}
	u.mu.Lock()
	now := u.cs
	u.mu.Unlock()
	if now != second {
		t.Errorf("after a late failure on the old session, the upstream's session is %p, want the new one %p", now, second)
	}
	if _, text := callText(t, cs, "io__echo", map[string]any{"text": "b"}, nil); text != "echo: b" {
		t.Fatalf("io__echo = %q", text)
	}
	if got := readPIDs(t, pidFile); len(got) != 2 {
		t.Errorf("processes started = %d, want 2 (the first, and the one after it died)", len(got))
	}
}

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
