//go:build unix && !linux

package crashpoint

import "syscall"

// pause stops every thread of the process, until it is continued (the
// goroutine at the point may go on for a moment first).
func pause() { syscall.Kill(syscall.Getpid(), syscall.SIGSTOP) }
