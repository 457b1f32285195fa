package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKill23SessionBeforeAnswer kills `reach serve` (kill -9) while the
// TypeScript SDK 1.x's client opens its MCP session, at the two points of
// the session's record: in the transaction that writes it, before its
// commit (session.storing), and once it is committed (session.stored),
// both before the initialize is answered. Then starts it again over the
// same data: a client never holds a session id the gateway does not know.
// The client either had no answer (its connect failed, and a new client
// opens a session and calls), or the session it was given is served after
// the restart. Before, the answer did not wait for the record, and a kill
// in the milliseconds before its commit left the client on an id answered
// 404 (session.storing: the client connected, then every call failed, as
// the 1.x client never initializes again).
func TestKill23SessionBeforeAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, point := range []string{"session.storing", "session.stored"} {
		t.Run(point, func(t *testing.T) { killSessionBeforeAnswer(t, "", point) })
	}
}

// killSessionBeforeAnswer is a case of TestKill23SessionBeforeAnswer over
// the PostgreSQL database url, or SQLite if "": the gateway killed at
// point, a session's initialize in flight from the TypeScript SDK's client.
func killSessionBeforeAnswer(t *testing.T, url, point string) {
	dir, node := nodeSDK(t)
	src, err := os.ReadFile("testdata/session-kill.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "reach-session-kill.mjs") // beside node_modules, so that its imports resolve
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, data, addr := sessionsConfig(t), t.TempDir(), freeAddr(t)
	if url != "" {
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg = writeConfig(t, storeHead(url)+string(b))
	}
	base := "http://" + addr
	cmd, reached := startReachAt(t, cfg, addr, data, point)
	killAtEnd(t, cmd)
	for i := 0; ; i++ {
		if status, _ := getStatus(base + "/healthz"); status == 200 {
			break
		}
		if i == 3000 {
			t.Fatal("the gateway never served")
		}
		time.Sleep(20 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	client := exec.CommandContext(ctx, node, script, base+"/mcp")
	stdin, _ := client.StdinPipe()
	stdout, _ := client.StdoutPipe()
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Process.Kill(); client.Wait() })
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatalf("the gateway never reached %s", point)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	lines := bufio.NewScanner(stdout)
	var first struct {
		Connected bool
		Session   string
		Error     string
	}
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &first) != nil {
		t.Fatalf("the client said nothing of its connect: %s", lines.Text())
	}
	cmd = startReach(t, cfg, addr, data)
	killAtEnd(t, cmd)
	if first.Session != "" {
		if code := postOn(t, base, first.Session); code != http.StatusOK {
			t.Errorf("the client was answered session %s (connected: %v); a call on it after the restart = %d, want 200",
				first.Session, first.Connected, code)
		}
	}
	stdin.Write([]byte("go\n"))
	if !lines.Scan() {
		t.Fatal("the client printed nothing after the restart")
	}
	var got struct {
		After, Again struct {
			IsError bool
			Text    string
			Thrown  string
		}
		Error string
	}
	if err := json.Unmarshal(lines.Bytes(), &got); err != nil || got.Error != "" {
		t.Fatalf("the client after the restart: %s", lines.Bytes())
	}
	for what, r := range map[string]struct {
		IsError bool
		Text    string
		Thrown  string
	}{"after the restart": got.After, "again after it": got.Again} {
		if r.Thrown != "" || r.IsError || !strings.Contains(r.Text, "search") {
			t.Errorf("the call %s (connected before the kill: %v) = %+v", what, first.Connected, r)
		}
	}
}

// TestKill23EntitiesAtRestartOnPostgres is TestKill22bEntitiesRanOnPostgres
// with an instance_ttl (10m) that no recovery of a's killed life comes
// within: a is killed at entities.ran, its write of doc:d run and not
// claimed again, while a request on b read doc:d; a is started again
// under its name. Its start moves doc:d on at once, as its earlier life's
// open write writes it, though that life is not judged dead before the
// TTL: the request's next write of doc:d on b, based on what it read
// while the write ran, is refused stale_read and does not run. Before,
// nothing moved doc:d until the TTL had passed and a recovery came, and
// the stale write ran.
func TestKill23EntitiesAtRestartOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := killedAtEntitiesRan(t, "10m")
	f.start(0)
	if got := storedRequest(t, f.url, "r-write"); !got.Ended.IsZero() {
		t.Fatalf("r-write is stored ended %+v: a's earlier life was recovered, which a TTL of 10m should not allow yet", got)
	}
	r := callHTTP(t, f.base(1), "r-read", "c2", "up__count", `{"key":"d"}`, "")
	if e, _ := r["error"].(map[string]any); r["status"] == "success" || e["code"] != "stale_read" {
		t.Errorf("a write of doc:d based on the read made while a's write ran, after a's restart: %v; want it refused stale_read", r)
	}
	if n := f.up.count("count d"); n != 0 {
		t.Errorf("the stale write ran %d times; want never", n)
	}
}
