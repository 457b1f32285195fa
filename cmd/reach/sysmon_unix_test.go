//go:build unix

package main

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAwakeSysmonKeepsAStopSignal: a stop signal that came before serve
// ran itself again (main's handler took it: its context is done) is not
// lost with the image: no execve, and serve then stops. With the context
// live it runs itself again, under sysmonAwake.
func TestAwakeSysmonKeepsAStopSignal(t *testing.T) {
	t.Setenv("GODEBUG", "")
	var calls [][]string
	defer func(e func(string, []string, []string) error, r bool) { execve, reexecServe = e, r }(execve, reexecServe)
	execve = func(_ string, _, env []string) error {
		calls = append(calls, env)
		return nil
	}
	reexecServe = true
	stopped, stop := context.WithCancel(t.Context())
	stop()
	awakeSysmon(stopped)
	if len(calls) != 0 {
		t.Fatalf("serve ran itself again after a stop signal (its context done): %d execve", len(calls))
	}
	awakeSysmon(t.Context())
	if len(calls) != 1 || !slices.Contains(calls[0], "GODEBUG="+sysmonAwake) {
		t.Fatalf("serve with its context live: execve calls %q, want one with GODEBUG=%s", calls, sysmonAwake)
	}
}

// TestServeUnderTheDynamicLoader: `reach serve` run by the dynamic loader
// ("ld-linux.so reach serve", as on a noexec mount) serves: its
// executable is then the loader, and running that again with serve's
// arguments made the loader take "serve" for the program to load (exit
// 127).
func TestServeUnderTheDynamicLoader(t *testing.T) {
	f, err := elf.Open(exe(t))
	if err != nil {
		t.Skip("not an ELF executable:", err)
	}
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	f.Close()
	if interp == "" {
		t.Skip("a static executable: no dynamic loader runs it")
	}
	addr := freeAddr(t)
	cmd := serveCmd(t, "", addr, t.TempDir(), "GODEBUG=")
	cmd.Args = append([]string{interp}, cmd.Args...)
	cmd.Args[1] = cmd.Path
	cmd.Path = interp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for range 3000 {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("reach serve run by %s exited (%v) before it served: %s", interp, err, out.String())
		default:
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("reach serve run by %s did not start on %s: %s", interp, addr, out.String())
}

// TestSameProgramIsTheRunningImage: a file at the executable's path that
// is not the running image (the binary replaced since the process
// started: here a copy of it) is not run again; the running image's own
// path, by path or by a PATH lookup, is.
func TestSameProgramIsTheRunningImage(t *testing.T) {
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("no /proc/self/exe to tell the running image by")
	}
	self := exe(t)
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "reach")
	if err := os.WriteFile(other, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if sameProgram(other, other) {
		t.Errorf("sameProgram(%s) of a file that is not the running image = true", other)
	}
	if !sameProgram(self, self) {
		t.Errorf("sameProgram(%s) of the running image = false", self)
	}
	t.Setenv("PATH", filepath.Dir(self))
	if !sameProgram(self, filepath.Base(self)) {
		t.Errorf("sameProgram(%s, %s) looked up in PATH = false", self, filepath.Base(self))
	}
}
