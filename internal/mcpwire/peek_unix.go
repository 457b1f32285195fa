//go:build unix

package mcpwire

import "syscall"

// idleProbe looks at an idle socket without blocking: a recv with
// MSG_PEEK|MSG_DONTWAIT, or one with MSG_DONTWAIT alone that takes what
// has arrived (readIdle). A connection has one, made with it, so that a
// look allocates nothing.
type idleProbe struct {
	idle bool
	b    [1]byte
	fn   func(fd uintptr) bool // probe, bound once

	dst  []byte                // readIdle's buffer
	n    int                   // what readIdle read into dst
	end  bool                  // readIdle met the end of the stream or an error
	take func(fd uintptr) bool // takeArrived, bound once
}

func newIdleProbe() *idleProbe {
	p := &idleProbe{}
	p.fn = p.probe
	p.take = p.takeArrived
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

func (p *idleProbe) takeArrived(fd uintptr) bool {
	for {
		n, _, err := syscall.Recvfrom(int(fd), p.dst, syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		case err != nil || n <= 0:
			p.end = true // an error, or the end of the stream (n == 0)
		default:
			p.n = n
		}
		return true // done either way: never wait for the socket
	}
}

// readIdle reads into dst what has arrived on the idle socket rc, without
// waiting for more: it returns how much, and ok false when the socket met
// its end or an error. The connection's goroutine alone calls it.
func (p *idleProbe) readIdle(rc syscall.RawConn, dst []byte) (n int, ok bool) {
	p.dst, p.n, p.end = dst, 0, false
	err := rc.Read(p.take)
	n, ok = p.n, err == nil && !p.end
	p.dst = nil
	return n, ok
}
