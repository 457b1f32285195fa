package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pid1Serve is `reach serve` (this test binary as the CLI) as PID 1 of a
// new PID namespace, as in a container; it skips the test where the
// system makes no such namespace for this user.
func pid1Serve(t *testing.T, env string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(exe(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1", "GODEBUG=", env)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
			t.Skipf("no PID namespace for this user: %v", err)
		}
		t.Fatal(err)
	}
	return cmd, out
}

// started waits until the file exists (the test binary as the CLI writes
// it as its main starts), and reports whether it came within 30 s.
func started(file string) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
		if _, err := os.Stat(file); err == nil {
			return true
		}
	}
	return false
}

// endsCleanly waits for cmd, stopped by SIGTERM, and says what was wrong
// with its end, or "": it must end (a lost signal left it serving), with
// exit 0 or the signal's own status, having said that it stopped.
func endsCleanly(cmd *exec.Cmd, out *lockedBuffer) string {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Sprintf("still running 30 s after SIGTERM (the signal was lost); its output:\n%s", out.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			return fmt.Sprintf("ended %v, want exit 0 or SIGTERM's; its output:\n%s", err, out.String())
		}
		return ""
	}
	if err != nil {
		return err.Error()
	}
	if !strings.Contains(out.String(), "reach stopped") {
		return fmt.Sprintf("exit 0 without saying it stopped; its output:\n%s", out.String())
	}
	return ""
}

// TestServeAsPID1StopsOnSIGTERM: `reach serve` as PID 1 (a container's
// process) that gets SIGTERM at any moment of its start ends cleanly: exit
// 0 saying it stopped (before serving, or after), never exit 2 with no
// output (a signal before main's handler: the runtime's own ended it, and
// the kernel does not end PID 1 so, so the runtime exited 2), nor serving
// on (a signal around serve running itself again, which PID 1 no longer
// does: the kernel drops it while the new image has no handler). The
// signal comes at delays from main's start (of the first image, where
// serve ran itself again), from 0 doubling until one comes after it
// served. (A signal before the first package initializations still ends
// PID 1 with exit 2: no Go program can act on it; a container runtime's
// init, docker run --init, can.)
func TestServeAsPID1StopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts reach serve a dozen times")
	}
	for delay := time.Duration(0); ; delay = max(2*delay, 500*time.Microsecond) {
		addr := freeAddr(t)
		started1 := filepath.Join(t.TempDir(), "started")
		cmd, out := pid1Serve(t, "REACH_TEST_STARTED="+started1, "--listen", addr, "--data", t.TempDir())
		// From the execve until the Go runtime has its signal handlers,
		// and then until the first package initializations, no program
		// can act on a SIGTERM to PID 1 (the kernel drops it; then the
		// runtime exits 2). The delays count from main's start.
		if !started(started1) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the process never started; its output:\n%s", out.String())
		}
		time.Sleep(delay)
		served := strings.Contains(out.String(), "reach is serving")
		if served {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
			if err == nil && bytes.Contains(env, []byte(sysmonAwake)) {
				t.Errorf("as PID 1, serve ran itself again (under %s): a SIGTERM around the execve is lost", sysmonAwake)
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if what := endsCleanly(cmd, out); what != "" {
			t.Fatalf("SIGTERM %v after the start: %s", delay, what)
		}
		if served || delay > time.Minute {
			return
		}
	}
}

// TestServeStoppedBeforeServing: a stop signal that comes while serve
// starts (here: while it reads its configuration, a FIFO the test writes
// only after the signal) stops it before it serves, saying so, exit 0:
// no banner, nothing served.
func TestServeStoppedBeforeServing(t *testing.T) {
	fifo := t.TempDir() + "/reach.yaml"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	addr := freeAddr(t)
	cmd := serveCmd(t, fifo, addr, t.TempDir())
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Opening the FIFO returns once serve opened it to read: it has its
	// signal handler then, and waits for the configuration.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond) // not needed for the assertion: the signal is delivered by the time it reads on
	w.WriteString("examples: true\n")
	w.Close()
	if what := endsCleanly(cmd, out); what != "" {
		t.Fatal(what)
	}
	if s := out.String(); !strings.Contains(s, "reach stopped before serving") || strings.Contains(s, "reach is serving") {
		t.Errorf("serve stopped by a signal as it started said:\n%s\nwant that it stopped before serving, and no banner", s)
	}
}
