//go:build unix

package mcpwire

import "syscall"

// peekIdle reports whether the idle socket rc has nothing to read and has
// not reached its end: a recv with MSG_PEEK|MSG_DONTWAIT that would block.
func peekIdle(rc syscall.RawConn) bool {
	idle := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err == syscall.EINTR {
				continue
			}
			idle = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
			return true // done either way: never wait for the socket
		}
	})
	return err == nil && idle
}
