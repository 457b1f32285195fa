package main

import (
	"os"
	"os/exec"
	"testing"
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
	return startServeCmd(t, exec.Command(bin, "serve", "--listen", addr, "--data", data, "--config", cfg), addr)
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
	f, _ := freezeB(t, func(f *fleet) { f.cmd[0] = startBinary(t, old, f.cfg[0], f.addr[0], f.data[0]) }, "the older a")
	if r := callHTTP(t, f.base(0), "r-new", "c", "up__count", `{"key":"new"}`, ""); r["status"] != "success" {
		t.Errorf("a call on the older a after b froze: %v", r)
	}
	verifyAudit(t, f.url)
}
