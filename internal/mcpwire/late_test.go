package mcpwire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lateServer answers each POST with a chunked SSE answer whose last chunk
// it sends only when told (end), followed by what it is told to, and counts
// its connections.
type lateServer struct {
	ln       net.Listener
	accepted chan net.Conn
	ends     chan string // what to send as the answer's end (and after it)
}

const lateEvent = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"

// lateClose, at the end of what lateServer is told to send, has it close
// the connection after.
const lateClose = "\x00close"

var lateBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)

func startLateServer(t *testing.T) *lateServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &lateServer{ln: ln, accepted: make(chan net.Conn, 8), ends: make(chan string, 8)}
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(lateEvent)), 16) + "\r\n" + lateEvent + "\r\n"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- c
			go func() {
				defer c.Close()
				var in [4096]byte
				for n := 0; ; {
					k, err := c.Read(in[n:])
					if err != nil {
						return
					}
					if n += k; !bytes.HasSuffix(in[:n], lateBody) {
						continue
					}
					n = 0
					if _, err := c.Write([]byte(head)); err != nil {
						return
					}
					end, ok := <-s.ends
					if !ok {
						return
					}
					end, closing := strings.CutSuffix(end, lateClose)
					if _, err := c.Write([]byte(end)); err != nil || closing {
						return
					}
				}
			}()
		}
	}()
	return s
}

// dialled waits until s accepts a new connection, and fails the test if
// none comes: a call that reused a connection it should not have makes
// none, and an unbounded wait would hang the run instead of failing.
func (s *lateServer) dialled(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.accepted:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no new connection was made", what)
	}
}

// lateCall makes one call on p and reads its event, not the answer's end.
func lateCall(t *testing.T, p *Conns) *Exchange {
	t.Helper()
	x, err := p.RoundTrip(context.Background(), Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(lateEvent))
	if _, err := io.ReadFull(&x.Body, buf); err != nil || string(buf) != lateEvent {
		t.Fatalf("event %q, %v", buf, err)
	}
	return x
}

// arrived waits until the idle connection c has something to read.
func arrived(t *testing.T, c *conn) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.probe.peekIdle(c.rc); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the answer's end did not arrive")
		}
	}
}

func idleConns(p *Conns) []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*conn(nil), p.idle...)
}

// TestLateEndReadByTheNextCall: an answer whose last chunk had not arrived
// when it was released leaves its connection in the pool, holding no
// reader and with no goroutine reading it; the next call reads the end
// it finds arrived and reuses the connection. An end that has not arrived
// by then is read in the background, and the call takes another
// connection; a connection closed, or sent more than the end, is not
// reused.
func TestLateEndReadByTheNextCall(t *testing.T) {
	if newIdleProbe() == nil {
		t.Skip("no look at a socket without blocking on this system")
	}
	s := startLateServer(t)
	p := NewConns("http://"+s.ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	late0 := lateDrains.Load()

	lateCall(t, p).Release(false)
	s.dialled(t, "the first call")
	idle := idleConns(p)
	if len(idle) != 1 || !idle[0].late || idle[0].br != nil {
		t.Fatalf("after a release before the answer's end: %d idle, want 1 late without a reader", len(idle))
	}
	s.ends <- "0\r\n\r\n"
	arrived(t, idle[0])
	x := lateCall(t, p) // the same connection, its last answer's end read
	if x.c != idle[0] {
		t.Error("the call did not reuse the connection whose answer's end had arrived")
	}
	s.ends <- "0\r\n\r\n"
	if rest, err := io.ReadAll(&x.Body); err != nil || len(rest) != 0 {
		t.Errorf("the second answer's rest: %q, %v", rest, err)
	}
	x.Release(false)
	if n := lateDrains.Load() - late0; n != 0 {
		t.Errorf("%d answers' ends read in the background, want none", n)
	}
	select {
	case <-s.accepted:
		t.Error("a second connection was made")
	default:
	}

	// The end not there yet: the next call takes a new connection, and
	// the late one waits at the bottom of the pool for its end, which a
	// later call reads.
	first := lateCall(t, p)
	first.Release(false)
	c1 := first.c
	second := lateCall(t, p)
	s.dialled(t, "a call while the late connection's end had not arrived")
	if second.c == c1 {
		t.Fatal("the call took a connection whose answer's end had not arrived")
	}
	if idle := idleConns(p); len(idle) != 1 || idle[0] != c1 || !c1.late {
		t.Fatalf("%d idle connections, want the late one alone", len(idle))
	}
	s.ends <- "0\r\n\r\n" // both connections' ends
	s.ends <- "0\r\n\r\n"
	if rest, err := io.ReadAll(&second.Body); err != nil || len(rest) != 0 {
		t.Errorf("the answer's rest: %q, %v", rest, err)
	}
	second.Release(false)
	arrived(t, c1)
	if second.c.late {
		arrived(t, second.c)
	}
	for range 2 { // the two connections, one after the other
		x := lateCall(t, p)
		s.ends <- "0\r\n\r\n"
		io.ReadAll(&x.Body)
		x.Release(false)
	}
	select {
	case <-s.accepted:
		t.Error("a third connection was made")
	default:
	}
	if n := lateDrains.Load() - late0; n != 0 {
		t.Errorf("%d answers' ends read in the background, want none", n)
	}

	// A connection late for longer than an answer's end is waited for is
	// closed when a call finds it, as drainLate gave one up.
	for _, c := range idleConns(p) {
		c.nc.Close()
	}
	p.mu.Lock()
	p.idle = nil
	p.mu.Unlock()
	lateCall(t, p).Release(false)
	s.dialled(t, "the first call on an empty pool")
	stale := idleConns(p)[0]
	stale.lateAt = time.Now().Add(-lateFor)
	x = lateCall(t, p)
	s.dialled(t, "a call finding only a connection late past lateFor")
	if x.c == stale || len(idleConns(p)) != 0 {
		t.Error("a connection late for longer than lateFor was kept")
	}
	s.ends <- "0\r\n\r\n"
	s.ends <- "0\r\n\r\n" // the stale connection's: its server goroutine waits for one
	io.ReadAll(&x.Body)
	x.Release(false)
	// Wait until the stale connection's server goroutine has taken its end:
	// on a loaded machine it can come to the channel after x's did, and an
	// end left there would be the next connection's, which then is not late.
	for deadline := time.Now().Add(10 * time.Second); len(s.ends) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stale connection's server never took its end")
		}
	}

	// An end followed by bytes unasked, or by the close: the connection
	// is closed, and the call dials another.
	for _, end := range []string{"0\r\n\r\nHTTP/1.1 200 OK\r\n", "0\r\n\r\n" + lateClose} {
		for _, c := range idleConns(p) {
			c.nc.Close() // start from a pool of one connection
		}
		p.mu.Lock()
		p.idle = nil
		p.mu.Unlock()
		lateCall(t, p).Release(false)
		s.dialled(t, fmt.Sprintf("%q: the first call on an empty pool", end))
		idle := idleConns(p)
		if len(idle) != 1 || !idle[0].late {
			t.Fatalf("%q: %d idle, want 1 late", end, len(idle))
		}
		s.ends <- end
		arrived(t, idle[0])
		x := lateCall(t, p)
		if x.c == idle[0] {
			t.Errorf("%q: the call reused the connection", end)
		}
		s.dialled(t, fmt.Sprintf("%q: a call after the end and more, or the close", end))
		s.ends <- "0\r\n\r\n"
		io.ReadAll(&x.Body)
		x.Release(false)
	}
}
