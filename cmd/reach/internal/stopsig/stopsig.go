// Package stopsig takes the stop signals (SIGINT, SIGTERM) from the first
// moment a Go program can: its package initialization, which runs before
// that of the packages sorted after it that it does not import (most of
// the program's, here) and long before main.
//
// Until a program asks for a signal, the Go runtime's own handler ends the
// program on it. A process that is PID 1 (a container's) is not ended by
// the signal the runtime raises again then, and the runtime exits 2 with
// no output: a SIGTERM in the milliseconds before main's signal.Notify
// ended `reach serve` so. Taken here, it cancels Context, and the command
// stops cleanly, saying so. A second stop signal ends the program at once
// (exit status 128 and the signal's number), saying so on stderr.
package stopsig

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Signals are the signals that stop the program gracefully.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

var (
	ctx, cancel = context.WithCancel(context.Background())
	ch          = make(chan os.Signal, 1)
)

func init() {
	signal.Notify(ch, Signals...)
	go func() {
		if _, ok := <-ch; !ok {
			return
		}
		cancel()
		// A second one ends the program at once, as a kill would: the
		// graceful stop of serve waits for the calls in flight (docs/STATE.md
		// bounds it), and one who presses Ctrl-C again wants it over.
		sig, ok := <-ch
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "reach: a second stop signal (%v): ending at once, without waiting for what is in flight; "+
			"a data folder in use is left as a kill leaves it, and the next start settles what was running "+
			"(a retry of a call's idempotency key is answered that it may have run)\n", sig)
		os.Exit(exitStatus(sig))
	}()
}

// exitStatus is the status a shell gives a program a signal ended:
// 128 and the signal's number (130 for SIGINT, 143 for SIGTERM).
func exitStatus(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// Context is done once a stop signal came, since the program started.
func Context() context.Context { return ctx }

// Stop gives the stop signals back to the runtime's default (a test binary
// that is not the CLI: an interrupt ends it).
func Stop() { signal.Stop(ch) }
