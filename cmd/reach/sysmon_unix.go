//go:build unix

package main

import (
	"context"
	"os"
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
// stops at once.
func awakeSysmon(ctx context.Context) {
	if !reexecServe || ctx.Err() != nil {
		return
	}
	env, ok := sysmonEnv(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	execve(exe, os.Args, env)
}
