//go:build linux

package crashpoint

import (
	"runtime"
	"syscall"
)

// pause stops every thread of the process, until it is continued. The
// stop is sent to this thread, which stops before it returns from the
// call: sent to the process, another thread could take it, and this
// goroutine go on past the point for a moment.
func pause() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}
