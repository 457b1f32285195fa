package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShut34SecondSignalEndsAtOnce stops a real `reach serve` (Ctrl-C)
// while a write runs on its upstream deaf to its cancellation, so that the
// shutdown waits for it (up to its bounds); a second Ctrl-C then ends the
// process at once: it says so on stderr, exits with the signal's status
// (130), and does not finish the shutdown (no "reach stopped"). The data
// folder is left as a kill leaves it: a restart over it answers the
// retry of the write's key interrupted, without running it again. Before,
// the second Ctrl-C was ignored and the process ended only once the
// shutdown's bounds ran out.
func TestShut34SecondSignalEndsAtOnce(t *testing.T) {
	h, upURL := newHeldUpstream(t, true)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\n", upURL))
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := serveCmd(t, cfg, addr, data)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	defer func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}()
	waitFor(t, "reach serve to serve", func() bool { return strings.Contains(stdout.String(), "reach is serving") })
	postAsync(base, `{"request_id":"r-twice","tool_calls":[{"call_id":"t1","tool":"up__hold","idempotency_key":"k-twice","arguments":{}}]}`)
	select {
	case <-h.started:
	case <-time.After(time.Minute):
		t.Fatal("the held call did not reach its upstream")
	}
	cmd.Process.Signal(os.Interrupt)
	waitFor(t, "the first Ctrl-C's shutdown", func() bool { return strings.Contains(stderr.String(), "shutting down") })
	err := stopServe(t, cmd, os.Interrupt)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGINT) {
		t.Errorf("reach serve after a second Ctrl-C exited %v; want status %d", err, 128+int(syscall.SIGINT))
	}
	if !strings.Contains(stderr.String(), "second stop signal") {
		t.Errorf("stderr after a second Ctrl-C does not say it ended at once:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "reach stopped") {
		t.Errorf("reach serve finished its shutdown though a second Ctrl-C came during it:\n%s", stdout.String())
	}
	h.open() // the deaf tool returns only now, its gateway gone

	cmd = startReach(t, cfg, addr, data)
	res := call(t, base, `{"tool_calls":[{"call_id":"t2","tool":"up__hold","idempotency_key":"k-twice","arguments":{}}]}`)
	if res.Error == nil || res.Error.Code != "interrupted" {
		t.Errorf("the retry of the held call's key after the restart: %+v; want interrupted (it may have run)", res)
	}
	stopServe(t, cmd, os.Interrupt)
	if n := h.count(); n != 1 {
		t.Errorf("the held call ran %d times on its upstream; want once", n)
	}
}
