//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio upstream of TestStdioUpstreamsEndWithServe: this test binary
// started with REACH_TEST_STDIO_AFTER_FIRST=1 (before TestMain runs) is a
// go-sdk MCP server on stdin and stdout, one tool, in its first process
// (its PIDFILE lists one id); later processes never answer and do not end
// at the end of their stdin, as a server still starting does not (a
// package being fetched). A SIGTERM ends them.
func init() {
	if os.Getenv("REACH_TEST_STDIO_AFTER_FIRST") != "1" {
		return
	}
	b, _ := os.ReadFile(os.Getenv("PIDFILE"))
	if len(strings.Fields(string(b))) > 1 {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "first", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestStdioUpstreamsEndWithServe: `reach serve` with a stdio upstream
// whose process died, and whose new process is starting (reach dials it
// again in the background, its handshake under way) when a SIGTERM comes,
// exits 0, and no process of the upstream outlives it. Before, the
// handshake cut short by the shutdown closed its session on a goroutine
// nothing waited for: reach exited, and the process it had started went
// on (for ever, for one that does not end at the end of its stdin).
func TestStdioUpstreamsEndWithServe(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	t.Cleanup(func() {
		for _, pid := range pidsOf(pidFile) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cfg := writeConfig(t, fmt.Sprintf(`upstreams:
  - name: io
    command: [sh, -c, 'echo $$ >> "$PIDFILE"; exec "$0"', %q]
    env: {REACH_TEST_STDIO_AFTER_FIRST: "1", PIDFILE: %q}
`, exe(t), pidFile))
	addr := freeAddr(t)
	cmd := startReach(t, cfg, addr, filepath.Join(dir, "data"))
	first := waitForPIDs(t, pidFile, 1)[0]
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pids := waitForPIDs(t, pidFile, 2) // dialled again: a process that never answers
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reach serve after SIGTERM: %v; want exit 0", err)
	}
	for _, pid := range pids {
		if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			t.Errorf("the upstream's process %d outlived reach serve (processes %v)", pid, pids)
		}
	}
}

func pidsOf(file string) []int {
	b, _ := os.ReadFile(file)
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// waitForPIDs waits until the file lists n processes, and returns them.
func waitForPIDs(t *testing.T, file string, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(file); strings.HasSuffix(string(b), "\n") {
			if pids := pidsOf(file); len(pids) >= n {
				return pids
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not start %d processes (it started %v)", n, pidsOf(file))
		}
	}
}

// TestServeUnderLoadEndsClean: `reach serve` with a stdio upstream (a
// go-sdk server), SIGTERM while 8 clients call its tool without pause,
// exits 0; its audit log verifies (reach audit verify), and the upstream's
// process is gone.
func TestServeUnderLoadEndsClean(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	t.Cleanup(func() {
		for _, pid := range pidsOf(pidFile) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cfg := writeConfig(t, fmt.Sprintf(`upstreams:
  - name: io
    command: [sh, -c, 'echo $$ >> "$PIDFILE"; exec "$0"', %q]
    env: {REACH_TEST_STDIO_AFTER_FIRST: "1", PIDFILE: %q}
budgets:
  default: {tool_calls: 100000, wall: 1h}
`, exe(t), pidFile))
	addr, data := freeAddr(t), filepath.Join(dir, "data")
	cmd := startReach(t, cfg, addr, data)
	base := "http://" + addr
	served := make(chan struct{}, 1024)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			client := &http.Client{Timeout: time.Minute}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"request_id":"load-%d-%d","tool_calls":[{"call_id":"c","tool":"io__ping","arguments":{}}]}`, c, i)
				resp, err := client.Post(base+"/v1/calls", "application/json", strings.NewReader(body))
				if err != nil {
					return // the gateway stopped
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(b), `"pong"`) {
					select {
					case served <- struct{}{}:
					default:
					}
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for range 64 {
		<-served
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reach serve after SIGTERM under load: %v; want exit 0", err)
	}
	if out, err := runCLI(t, "audit", "verify", "--data", data); err != nil {
		t.Errorf("reach audit verify after the shutdown: %v\n%s", err, out)
	}
	for _, pid := range pidsOf(pidFile) {
		if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			t.Errorf("the upstream's process %d outlived reach serve", pid)
		}
	}
}
