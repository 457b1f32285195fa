//go:build unix

package main

import (
	"os"
	"syscall"
)

// awakeSysmon runs this process's executable again, with the same
// arguments, under sysmonAwake (same process id: execve), before anything
// is opened; it returns only when it did not (GODEBUG sets schedtrace, or
// the executable could not be run again, which costs nothing but the
// wake-ups).
func awakeSysmon() {
	if !reexecServe {
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
	syscall.Exec(exe, os.Args, env)
}
