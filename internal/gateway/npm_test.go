package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/testport"
)

// npmCache finds the folder scripts/npm-deps.sh installs into, or skips,
// saying why; under REACH_CI (make test) it fails instead, as a2aCache
// does, so that CI never passes by skipping.
func npmCache(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed: skipping the npm interoperability test (install node and npm, then run scripts/npm-deps.sh)")
	}
	dir := os.Getenv("REACH_NPM_CACHE")
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "npm")
	}
	for _, pkg := range []string{"server-everything", "server-memory", "sdk"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "package.json")); err != nil {
			missing("@modelcontextprotocol/%s is not installed in %s: run scripts/npm-deps.sh (make test does)", pkg, dir)
		}
	}
	return dir
}

// freePort returns a loopback port for a server that another process
// binds later: below the kernel's ephemeral range, which the listeners and
// outbound connections of the tests running beside may take meanwhile
// (testport).
func freePort(t *testing.T) int {
	p, err := testport.Free()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startEverything runs server-everything's Streamable HTTP transport on a
// free loopback port (its PORT variable chooses the port; the preloaded
// testdata/loopback.cjs makes it bind 127.0.0.1 instead of every interface).
func startEverything(t *testing.T, cache string) string {
	t.Helper()
	return startEverythingOn(t, cache, "streamableHttp") + "/mcp"
}

// startEverythingOn runs server-everything's transport (streamableHttp or
// sse) as startEverything does, and returns its base URL.
func startEverythingOn(t *testing.T, cache, transport string) string {
	t.Helper()
	preload, err := filepath.Abs("testdata/loopback.cjs")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cmd := exec.Command("node", "--require", preload,
		filepath.Join(cache, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s within 30s:\n%s", addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr
}

// TestNPMInterop runs reach in front of the real MCP servers from npm,
// server-memory over stdio and server-everything over Streamable HTTP, and
// calls tools through reach with the official TypeScript SDK client.
func TestNPMInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	everything := startEverything(t, cache)
	memory := filepath.Join(cache, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	cfgText := fmt.Sprintf(`upstreams:
  - name: everything
    url: %s
  - name: memory
    command: [node, %s]
    env: {MEMORY_FILE_PATH: %s}
tools:
  memory__delete_entities: {access: high_risk}
  everything__trigger-long-running-operation: {timeout: 30s}
`, everything, memory, filepath.Join(t.TempDir(), "memory.jsonl"))
	cfg, err := config.Parse([]byte(cfgText), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()

	src, err := os.ReadFile("testdata/npm-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, cache, "reach-npm-client", src) // beside node_modules, so that its imports resolve
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	out, err := exec.CommandContext(cctx, "node", script, "http://"+ln.Addr().String()+"/mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	t.Logf("node client: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("node client printed %s", out)
	}
	text := func(key string) string {
		s, _ := path(got, key, "content", 0, "text").(string)
		return s
	}
	isError := func(key string) bool { b, _ := path(got, key, "isError").(bool); return b }

	// tools/list: both upstreams, with annotations mapped from access levels.
	for name, readOnly := range map[string]bool{"everything__echo": true, "memory__create_entities": false, "memory__read_graph": true} {
		if ann, ok := path(got, "tools", name).(map[string]any); !ok || ann["readOnlyHint"] != readOnly {
			t.Errorf("tools/list %s annotations = %v, want readOnlyHint %v", name, path(got, "tools", name), readOnly)
		}
	}
	if d := path(got, "tools", "memory__delete_entities", "destructiveHint"); d != true {
		t.Errorf("memory__delete_entities destructiveHint = %v", d)
	}
	if isError("echo") || text("echo") != "Echo: hi from node" {
		t.Errorf("everything__echo = %v", got["echo"])
	}
	if isError("sum") || !strings.Contains(text("sum"), "5") {
		t.Errorf("everything__get-sum = %v", got["sum"])
	}
	if !isError("badSum") || !strings.Contains(text("badSum"), "/a") {
		t.Errorf("everything__get-sum with a bad argument = %v, want reach's validation error", got["badSum"])
	}
	if isError("create") || path(got, "create", "structuredContent", "entities", 0, "name") != "reach" {
		t.Errorf("memory__create_entities = %v", got["create"])
	}
	if isError("read") || !strings.Contains(text("read"), "a gateway between agents and tools") {
		t.Errorf("memory__read_graph = %v", got["read"])
	}
	if !isError("remove") || !strings.Contains(text("remove"), "approval") {
		t.Errorf("memory__delete_entities = %v, want a refusal (high_risk needs approval)", got["remove"])
	}
	// write -> pending -> approved through the API -> the retried call runs once.
	if got["approvalTool"] != "memory__delete_entities" || got["approveStatus"] != float64(200) {
		t.Errorf("approval: tool %v, approve status %v", got["approvalTool"], got["approveStatus"])
	}
	if isError("removeApproved") || isError("removeRetried") {
		t.Errorf("after approval: %v / %v", got["removeApproved"], got["removeRetried"])
	}
	if !strings.Contains(text("removeRetried"), "nothing ran again") {
		t.Errorf("the retried approved call ran again: %v", got["removeRetried"])
	}
	if strings.Contains(text("readAfter"), "a gateway between agents and tools") {
		t.Errorf("the approved delete did not run: %v", got["readAfter"])
	}
	if isError("long") {
		t.Errorf("everything__trigger-long-running-operation = %v", got["long"])
	}
	if p, _ := got["progress"].([]any); len(p) == 0 {
		t.Errorf("no progress reached the TypeScript client through reach (got %v)", got["progress"])
	}
}
