//go:build unix

package upstream

import (
	"fmt"
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

// stdioWithPIDs configures a stdio upstream (the echo server) that appends
// the id of each process of it to a file, and returns the file.
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
	p := newPool(t, cfg)
	u := p.ups[0]
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
	waitUntil(t, "the upstream to be seen disconnected", func() bool { return !p.Statuses()[0].Connected })

	const n = 16
	var wg sync.WaitGroup
	texts := make([]string, n)
	for i := range n {
		wg.Go(func() {
			texts[i] = echo(t, p, "io__echo", strconv.Itoa(i))
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
	p := newPool(t, cfg)
	u := p.ups[0]
	u.mu.Lock()
	first := u.cs
	u.mu.Unlock()
	if err := syscall.Kill(readPIDs(t, pidFile)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	waitUntil(t, "the upstream to be seen disconnected", func() bool { return !p.Statuses()[0].Connected })
	if text := echo(t, p, "io__echo", "a"); text != "echo: a" {
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
	if text := echo(t, p, "io__echo", "b"); text != "echo: b" {
		t.Fatalf("io__echo = %q", text)
	}
	if got := readPIDs(t, pidFile); len(got) != 2 {
		t.Errorf("processes started = %d, want 2 (the first, and the one after it died)", len(got))
	}
}

// TestStdioUpstreamRedialledWithoutACall: a stdio upstream whose process
// exits while no call runs is started again in the background, with no
// call to it, so that /healthz and /readyz see it connected again (a load
// balancer that saw /readyz answer 503 sends no call).
func TestStdioUpstreamRedialledWithoutACall(t *testing.T) {
	cfg, pidFile := stdioWithPIDs(t)
	p := newPool(t, cfg)
	u := p.ups[0]
	u.mu.Lock()
	first := u.cs
	u.mu.Unlock()
	if err := syscall.Kill(readPIDs(t, pidFile)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	// The background dial tries 1 s after the loss: within waitUntil's
	// deadline, which bounds a failure only.
	waitUntil(t, "the upstream's process to be started again with no call", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.cs != nil && u.cs != first
	})
	if got := readPIDs(t, pidFile); len(got) != 2 {
		t.Errorf("processes started = %d, want 2 (the first, and the one after it died)", len(got))
	}
	if text := echo(t, p, "io__echo", "a"); text != "echo: a" {
		t.Errorf("io__echo after the background restart = %q", text)
	}
}
