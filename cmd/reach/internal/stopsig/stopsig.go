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
// stops cleanly, saying so.
package stopsig

import (
	"context"
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
		if _, ok := <-ch; ok {
			cancel()
		}
	}()
}

// Context is done once a stop signal came, since the program started.
func Context() context.Context { return ctx }

// Stop gives the stop signals back to the runtime's default (a test binary
// that is not the CLI: an interrupt ends it).
func Stop() { signal.Stop(ch) }
