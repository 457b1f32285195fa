//go:build unix

package httpapi

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// firstByteConn is a TCP connection fasthttp serves. With
// ReduceMemoryUsage, fasthttp waits for an idle keep-alive connection's
// next request with a read of one byte, so that the connection holds no
// reader meanwhile, and then reads the rest of the request with another
// read: two reads of the socket for a request that arrived in one
// segment, the first of them after the wait. Here that one-byte read waits
// for the socket to turn readable holding nothing either, and then reads
// what has arrived in one system call, into a buffer taken from a pool
// only for that call; fasthttp's next read is given the rest from it,
// and the buffer goes back to the pool once read. An idle connection
// holds no buffer; a request costs one read of the socket after the wait,
// as without ReduceMemoryUsage.
type firstByteConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	buf  *[]byte // what arrived behind the first byte; nil when read
	rest []byte  // its part not yet read

	// The read of readable, bound once.
	readable func(fd uintptr) bool
	got      *[]byte
	n        int
	err      error
}

// arrivals are the buffers a first byte's read reads into.
var arrivals = sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}

// firstBytes returns ln with each TCP connection it accepts made a
// firstByteConn.
func firstBytes(ln net.Listener) net.Listener { return firstByteListener{ln} }

type firstByteListener struct{ net.Listener }

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	tc, ok := c.(*net.TCPConn)
	if err != nil || !ok {
		return c, err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	fc := &firstByteConn{TCPConn: tc, rc: rc}
	fc.readable = fc.read
	return fc, nil
}

// tcp returns the TCP connection under c, if c is one or a firstByteConn
// that holds no bytes read from it: a watch of the socket would not see
// those.
func tcp(c net.Conn) (*net.TCPConn, bool) {
	switch c := c.(type) {
	case *net.TCPConn:
		return c, true
	case *firstByteConn:
		return c.TCPConn, c.buf == nil
	}
	return nil, false
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	if c.buf != nil {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		if len(c.rest) == 0 {
			c.release()
		}
		return n, nil
	}
	if len(p) != 1 {
		return c.TCPConn.Read(p)
	}
	c.got, c.n, c.err = nil, 0, nil
	if err := c.rc.Read(c.readable); err != nil {
		return 0, c.opError(err) // its deadline, or the connection closed
	}
	if c.err != nil {
		return 0, c.opError(c.err)
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	p[0] = (*c.got)[0]
	c.buf, c.rest = c.got, (*c.got)[1:c.n]
	c.got = nil
	if len(c.rest) == 0 {
		c.release()
	}
	return 1, nil
}

// read reads what has arrived on the socket into a buffer of arrivals;
// false (wait) when nothing has, the buffer given back.
func (c *firstByteConn) read(fd uintptr) bool {
	b := arrivals.Get().(*[]byte)
	for {
		n, err := syscall.Read(int(fd), *b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			arrivals.Put(b)
			return false
		case err != nil:
			arrivals.Put(b)
			c.err = err
		case n > 0:
			c.got, c.n = b, n
		default: // the end of the stream
			arrivals.Put(b)
		}
		return true
	}
}

func (c *firstByteConn) release() {
	arrivals.Put(c.buf)
	c.buf, c.rest = nil, nil
}

// opError is err as a net.TCPConn's Read returns it.
func (c *firstByteConn) opError(err error) error {
	if e, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError("read", e)
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// WriteTo copies what c reads to w through Read: the TCP connection's own
// would read the socket past what c holds.
func (c *firstByteConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}
