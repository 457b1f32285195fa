package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// oldBinary is the reach binary of an older version that
// REACH_OLD_BINARY names (built from git, say the eighteenth session's:
// `git worktree add DIR 6f1621d && (cd DIR && go build ./cmd/reach)`), or
// skips t.
func oldBinary(t *testing.T) string {
	p := os.Getenv("REACH_OLD_BINARY")
	if p == "" {
		t.Skip("REACH_OLD_BINARY names no older reach binary")
	}
	return p
}

// startBinary starts `reach serve` of the binary bin, as startReach does
// this test binary's, and waits until it answers.
func startBinary(t *testing.T, bin, cfg, addr, data string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--data", data, "--config", cfg)
	logf, err := os.CreateTemp(t.TempDir(), "old-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("the log of the older reach serve on %s:\n%s", addr, b)
		}
	})
	for range 600 {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return cmd
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the older reach on %s did not answer", addr)
	return nil
}

// TestOutage20OlderRecoverer: mixed versions on one PostgreSQL. a runs
// the older binary (REACH_OLD_BINARY: it recovers a dead life without
// marking it first); b, this one, migrates the schema on start and is
// frozen (SIGSTOP) just after it admitted a call, before it dispatched it.
// a takes b for dead, recovers its requests and forgets it. When b goes
// on, the held call is not dispatched and b admits no more work: the
// fence holds beside an older recoverer. (The narrower case, b resuming
// between the older recovery and its forget, is TestFencedByOlderRecoverer
// in internal/cluster: the forget is not in the test's hands here.)
func TestOutage20OlderRecoverer(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	old := oldBinary(t)
	f := &fleet{t: t, pg: pgtest.Own(t), names: [2]string{"a", "b"}}
	var err error
	if f.url, err = f.pg.CreateDatabase(context.Background(), "reach"); err != nil {
		t.Fatal(err)
	}
	var upURL string
	f.up, upURL = sharedUpstream(t)
	g, gateURL := gateUpstream(t)
	for i := range 2 {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
		f.cfg[i] = writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: 2s
upstreams:
  - {name: up, url: '%s'}
  - {name: gate, url: '%s'}
budgets:
  default: {tool_calls: 100000, wall: 1h}
`, f.url, f.names[i], upURL, gateURL))
	}
	f.cmd[0] = startBinary(t, old, f.cfg[0], f.addr[0], f.data[0])
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "budget.admitted#2+go")
	stopped := false
	t.Cleanup(func() {
		if stopped {
			f.cmd[1].Process.Signal(syscall.SIGCONT)
		}
		for i := range 2 {
			f.stop(i)
		}
	})
	owner := f.lifeOf(t, "b")
	running := gateOn(t, f, g, 1, "r-run", "run")
	held := retryOn(t, f, 1, "r-held", "held")
	select {
	case <-reached:
		stopped = true
	case r := <-held:
		t.Fatalf("r-held's call on b answered before b stopped at its admission: %v", r)
	case <-time.After(time.Minute):
		t.Fatal("b did not reach the crash point of r-held's call")
	}
	f.awaitForgotten(t, owner)
	for _, id := range []string{"r-run", "r-held"} {
		if r := storedRequest(t, f.url, id); r == nil || r.State != "interrupted" {
			t.Fatalf("request %s once the older a recovered b's work: %+v; want interrupted", id, r)
		}
	}
	if err := f.cmd[1].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	r := <-held
	if c := errCode(r); c != "instance_stopping" && c != "store_unavailable" {
		t.Errorf("r-held's call, admitted before b froze, once b went on: %v; want refused", r)
	}
	if n := g.count("held"); n != 0 {
		t.Fatalf("r-held's call was dispatched %d times by b after the older a recovered its request", n)
	}
	if r := <-running; r["status"] == "success" {
		t.Errorf("r-run's call on b succeeded after the older a recovered its request: %v", r)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r := callHTTP(t, f.base(1), "r-after", "c", "up__count", `{"key":"after"}`, "")
		if errCode(r) == "instance_stopping" {
			break
		}
		if r["status"] == "success" {
			t.Fatalf("b ran a new call after it was taken for dead: %v", r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("b, taken for dead, still does not refuse new work: %v", r)
		}
	}
	if r := callHTTP(t, f.base(0), "r-new", "c", "up__count", `{"key":"new"}`, ""); r["status"] != "success" {
		t.Errorf("a call on the older a after b froze: %v", r)
	}
	verifyAudit(t, f.url)
}
