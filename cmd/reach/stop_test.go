package main

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// stopServe sends sig (SIGTERM or an interrupt) to the reach serve process
// cmd and waits for it to exit, at most a minute: it then kills it, and
// the test fails saying so. An unbounded cmd.Wait after the signal hung the
// whole test run until go test's timeout (30 minutes in CI) when a graceful
// stop hung; reach serve gives its HTTP servers 5 s.
func stopServe(t testing.TB, cmd *exec.Cmd, sig os.Signal) error {
	t.Helper()
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Errorf("reach serve (pid %d) had not exited a minute after %v: killed", cmd.Process.Pid, sig)
		return errors.New("killed: it did not stop in a minute")
	}
}

// killAtEnd kills the reach serve process cmd when the test ends, if it
// still runs. A test that failed (t.Fatal) between a process's start and
// its stop left it running, holding its connections to the test's
// upstream, whose httptest server's Close (a cleanup registered before)
// then waited for them: the run hung until go test's timeout instead of
// failing the test (checked: a t.Fatal in crashRun.checkAll).
func killAtEnd(t testing.TB, cmd *exec.Cmd) {
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
}
