//go:build unix

package httpapi

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// hangup watches, while a request is served on fasthttp's goroutine, for
// its client to close the connection, and then ends the request's
// context, as net/http's background read does: the sessionless
// protocol's client cancels a call so. It looks with a recv that peeks
// (MSG_PEEK), so that a request the client sends behind this one stays
// for fasthttp to read: data means the client is still there, and the
// watch stops, as net/http's does.
type hangup struct {
	conn   *net.TCPConn
	cancel context.CancelFunc
	gone   bool                  // the peer closed or reset the connection
	b      [1]byte               // what a peek reads into
	peek   func(fd uintptr) bool // h.look, bound once (pooled with h)
	done   chan struct{}         // the watch has ended; buffered, reused
}

var hangups = sync.Pool{New: func() any {
	h := &hangup{done: make(chan struct{}, 1)}
	h.peek = h.look
	return h
}}

// aLongTimeAgo is a read deadline that stops a read at once.
var aLongTimeAgo = time.Unix(1, 0)

// watchHangup returns a context of parent that is cancelled (as net/http
// cancels its request's, context.Canceled) when the peer of c closes it,
// and the watch, which stop ends. It reports false, having done nothing,
// when c is not a TCP connection (TLS, a unix socket, a wrapped
// connection): that request goes to net/http.
func watchHangup(parent context.Context, c net.Conn) (context.Context, *hangup, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, nil, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	// No deadline while the call lasts: fasthttp's for the body
	// (readBodyTimeout) would end the watch of a long call, and
	// net/http's background read has none either.
	if tc.SetReadDeadline(time.Time{}) != nil {
		return nil, nil, false
	}
	h := hangups.Get().(*hangup)
	h.conn, h.gone = tc, false
	ctx, cancel := context.WithCancel(parent)
	h.cancel = cancel
	go h.watch(rc)
	return ctx, h, true
}

// watch waits for the connection to turn readable: closed, or more
// requests. It ends on either, or when stop puts the read deadline in the
// past; the connection's close (the server's) cancels too.
func (h *hangup) watch(rc syscall.RawConn) {
	err := rc.Read(h.peek)
	if h.gone || err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		h.cancel()
	}
	h.done <- struct{}{}
}

// look peeks at the socket without blocking: false (wait) when there is
// nothing to read yet.
func (h *hangup) look(fd uintptr) bool {
	for {
		n, _, err := syscall.Recvfrom(int(fd), h.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			return false
		case err != nil || n == 0:
			h.gone = true // reset, or the end of the stream
		}
		return true
	}
}

// stop ends the watch and the context, once the request is answered; the
// connection is fasthttp's again, its reads as before: with no deadline,
// until fasthttp sets the idle one before it reads the next request (or
// hijacks the connection, clearing them).
func (h *hangup) stop() {
	h.conn.SetReadDeadline(aLongTimeAgo)
	<-h.done
	h.conn.SetReadDeadline(time.Time{})
	h.cancel()
	h.conn, h.cancel = nil, nil
	hangups.Put(h)
}
