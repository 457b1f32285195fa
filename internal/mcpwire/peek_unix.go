//go:build unix

package mcpwire

import "syscall"

// idleProbe looks at an idle socket without blocking: a recv with
// MSG_PEEK|MSG_DONTWAIT. A connection has one, made with it, so that a
// look allocates nothing.
type idleProbe struct {
	idle bool
	b    [1]byte
	fn   func(fd uintptr) bool // probe, bound once
}

func newIdleProbe() *idleProbe {
	p := &idleProbe{}
	p.fn = p.probe
	return p
}

func (p *idleProbe) probe(fd uintptr) bool {
	for {
		_, _, err := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == syscall.EINTR {
			continue
		}
		p.idle = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // done either way: never wait for the socket
	}
}

// peekIdle reports whether the idle socket rc has nothing to read and has
// not reached its end: a recv that would block. The connection's
// goroutine alone calls it.
func (p *idleProbe) peekIdle(rc syscall.RawConn) bool {
	p.idle = false
	err := rc.Read(p.fn)
	return err == nil && p.idle
}
