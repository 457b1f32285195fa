// Package cputime reads the CPU time of this process, for benchmarks that
// report CPU per call (the work of every goroutine, the store's writer and
// checkpointer included, not only the benchmark loop's).
package cputime

import (
	"syscall"
	"time"
)

// Self returns the user and system CPU time this process has used, or 0 if
// the system does not say.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
