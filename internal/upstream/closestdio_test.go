//go:build unix

package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stuckUpstream, in the stdio upstream's process (TestMain), never answers
// and does not end at the end of its stdin, as a server still starting
// (a package being fetched, a slow start) does not: in mode "stuck"
// always, in mode "stuck-after-first" from its second process on (the
// first serves the echo server). A SIGTERM ends it.
func stuckUpstream(mode string) {
	stuck := mode == "stuck"
	if mode == "stuck-after-first" {
		b, _ := os.ReadFile(os.Getenv("PIDFILE"))
		stuck = len(strings.Fields(string(b))) > 1
	}
	if stuck {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
}

// stdioStuck configures a stdio upstream in mode (stuckUpstream) that
// appends the id of each process of it to a file, and returns the file.
// The test's end kills what is left of them.
func stdioStuck(t *testing.T, mode string) (*config.Config, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(t.TempDir(), "pids")
	t.Cleanup(func() {
		b, _ := os.ReadFile(pids)
		for _, pid := range pidsIn(b) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return &config.Config{Upstreams: []config.Upstream{{Name: "io", Command: []string{"sh", "-c", `echo $$ >> "$PIDFILE"; exec "$0"`, exe},
		Env: map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": config.Secret(mode), "PIDFILE": config.Secret(pids)}}}}, pids
}

func pidsIn(b []byte) []int {
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// waitPIDs waits until the file lists n processes, and returns them.
func waitPIDs(t *testing.T, file string, n int) []int {
	t.Helper()
	var pids []int
	waitUntil(t, "the upstream's processes to start", func() bool {
		b, _ := os.ReadFile(file)
		pids = pidsIn(b)
		return len(pids) >= n && strings.HasSuffix(string(b), "\n")
	})
	return pids
}

// exitedProcess reports whether the process pid is gone: exited and
// waited for (no zombie left either).
func exitedProcess(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestCloseEndsAStdioHandshake: a stop signal while a stdio upstream's
// process starts (its handshake under way, the process not answering and
// not ending at the end of its stdin) fails Connect, whose Close returns
// once that process has exited. Before, the handshake went on in a
// goroutine nothing waited for: the process outlived the gateway.
func TestCloseEndsAStdioHandshake(t *testing.T) {
	cfg, pidFile := stdioStuck(t, "stuck")
	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	ctx, stopSignal := context.WithCancel(context.Background())
	h := &host{}
	defer h.close()
	errc := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, life, &Options{Config: cfg, Runner: h, Catalog: h, Levels: h, Models: reach.New(nil)})
		errc <- err
	}()
	pid := waitPIDs(t, pidFile, 1)[0]
	stopSignal()
	if err := <-errc; err == nil {
		t.Fatal("Connect cut short by its context returned no error")
	}
	if !exitedProcess(pid) {
		t.Fatalf("the upstream's process %d outlived the pool that started it", pid)
	}
}

// TestCloseEndsAStdioRedial: the gateway closing while a stdio upstream
// whose process died is dialled again (its new process started, not
// answering yet) ends that process before the pool's Close returns, in
// the order the gateway closes: the pool's life ends, its background work
// is waited for, then the pool is closed.
func TestCloseEndsAStdioRedial(t *testing.T) {
	cfg, pidFile := stdioStuck(t, "stuck-after-first")
	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	h := &host{}
	defer h.close()
	p, err := Connect(t.Context(), life, &Options{Config: cfg, Runner: h, Catalog: h, Levels: h, Models: reach.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Serve(t.Context(), mcp.NewServer(&mcp.Implementation{Name: "gateway"}, nil))
	if err := syscall.Kill(waitPIDs(t, pidFile, 1)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The session's loss is seen, and the upstream dialled again in the
	// background (dialInBackground): a second process starts.
	pids := waitPIDs(t, pidFile, 2)
	endLife()
	h.close()
	p.Close()
	for _, pid := range pids {
		if !exitedProcess(pid) {
			t.Fatalf("the upstream's process %d outlived the pool that started it (processes %v)", pid, pids)
		}
	}
}
