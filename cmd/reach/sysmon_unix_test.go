//go:build unix

package main

import (
	"context"
	"slices"
	"testing"
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
