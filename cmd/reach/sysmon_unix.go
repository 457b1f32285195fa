//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// execve replaces the process (syscall.Exec; a test records the call).
var execve = syscall.Exec

// awakeSysmon runs this process's executable again, with the same
// arguments, under sysmonAwake (same process id: execve), before anything
// is opened; it returns only when it did not (GODEBUG sets schedtrace, or
// the executable could not be run again, which costs nothing but the
// wake-ups). It does not when ctx is done: a stop signal (Ctrl-C, a
// supervisor's SIGTERM) that came before, taken by main's handler, would
// be lost with this image, and the process would serve on; serve then
// stops at once. Nor does it when the executable is not the program that
// os.Args[0] names (run by the dynamic loader, "ld-linux.so reach serve",
// the executable is the loader, which would take "serve" for the program
// to load; or the program was deleted or replaced since it started: it
// would run another version). Nor as PID 1 (a container's first
// process): the kernel drops a signal sent to PID 1 that it has no handler
// for, and from the execve until the new image's runtime has its handlers
// it has none: a SIGTERM then was lost, and the process served on until
// killed. GODEBUG=schedtrace=... in the image's environment (the
// Dockerfile sets it) keeps sysmon awake there without running again.
func awakeSysmon(ctx context.Context) {
	if !reexecServe || ctx.Err() != nil || os.Getpid() == 1 {
		return
	}
	env, ok := sysmonEnv(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil || !sameProgram(exe, os.Args[0]) {
		return
	}
	execve(exe, os.Args, env)
}

// sameProgram reports whether exe and the file arg0 names (a path, or a
// name looked up in PATH as a shell would have) are the running image:
// where /proc/self/exe is, that file (a binary replaced at exe's path since
// the process started is another file), else the file at exe.
func sameProgram(exe, arg0 string) bool {
	if !strings.Contains(arg0, "/") {
		p, err := exec.LookPath(arg0)
		if err != nil {
			return false
		}
		arg0 = p
	}
	running, err := os.Stat("/proc/self/exe")
	if err != nil {
		if running, err = os.Stat(exe); err != nil {
			return false
		}
	}
	for _, p := range []string{exe, arg0} {
		if f, err := os.Stat(p); err != nil || !os.SameFile(f, running) {
			return false
		}
	}
	return true
}
