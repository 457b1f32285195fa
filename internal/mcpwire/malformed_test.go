package mcpwire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// cannedServer answers every POST on a connection with answer, then keeps
// the connection open until the test ends: a reader that waits for more
// than the answer has waits for good.
func cannedServer(t *testing.T, answer string) *Conns {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go func() { <-done; c.Close() }()
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
					if _, err := c.Write([]byte(answer)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	t.Cleanup(p.Close)
	return p
}

// TestMalformedAnswersRefused: an answer whose head or body fasthttp's
// parser refuses, or the client does not take from an upstream, fails the
// call with errHead and a reason, at once (not at the call's deadline,
// which is far off: the connection stays open after the answer), and its
// connection is not reused.
func TestMalformedAnswersRefused(t *testing.T) {
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	ok := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	for _, tc := range []struct{ name, answer, why string }{
		{"bare LF head", "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", "bare LF"},
		{"a bare LF line", "HTTP/1.1 200 OK\r\nContent-Length: 2\nX-A: b\r\n\r\n{}", "bare LF"},
		{"huge head", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 9000) + "\r\nContent-Length: 2\r\n\r\n{}", "longer than"},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "duplicate content-length"},
		{"the same length twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "duplicate content-length"},
		{"chunked and a length", ok + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk("{}") + "0\r\n\r\n", "both Transfer-Encoding and Content-Length"},
		{"a length and chunked", ok + "Transfer-Encoding: chunked\r\ncontent-length: 2\r\n\r\n" + chunk("{}") + "0\r\n\r\n", "both Transfer-Encoding and Content-Length"},
		{"another coding", ok + "Transfer-Encoding: gzip, chunked\r\n\r\n" + chunk("{}") + "0\r\n\r\n", "transfer-encoding"},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}", "content-length"},
		{"no status", "HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\n{}", "malformed HTTP answer"},
		{"status 0", "HTTP/1.1 000 OK\r\nContent-Length: 2\r\n\r\n{}", "no status"},
		{"bare CR", "HTTP/1.1 200 OK\r\nX-A: b\rContent-Length: 9\r\nContent-Length: 2\r\n\r\n{}", "bare CR"},
		{"endless interim answers", strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", maxInterim+2), "interim"},
		{"bad chunk size", ok + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "its body"},
		{"huge chunk size", ok + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n0\r\n\r\n", "its body"},
		{"bare LF after a chunk size", ok + "Transfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n", "its body"},
		{"no CRLF after a chunk", ok + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n", "its body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cannedServer(t, tc.answer)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
			if err == nil {
				_, err = io.ReadAll(&x.Body)
				x.Release(false)
			}
			if !errors.Is(err, errHead) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.why)) {
				t.Fatalf("error %v, want %v saying %q", err, errHead, tc.why)
			}
			if strings.Contains(err.Error(), "buffer size") || len(err.Error()) > 200 {
				t.Errorf("the error carries the answer's bytes: %.300s", err)
			}
			if n := len(idleConns(p)); n != 0 {
				t.Errorf("%d connections kept after a malformed answer", n)
			}
		})
	}
}

// TestWellFormedAnswersRead: what the malformed cases are next to reads:
// a chunk extension, a trailer, one length sent twice in one field's
// place is not (above), an interim answer, header names in any case.
func TestWellFormedAnswersRead(t *testing.T) {
	for _, tc := range []struct{ name, answer, body string }{
		{"chunk extension and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\n{}\r\n0\r\nX-T: 1\r\n\r\n", "{}"},
		{"interim answers", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInterim) + "HTTP/1.1 200 OK\r\ncontent-LENGTH: 2\r\n\r\n{}", "{}"},
		{"no reason phrase", "HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\n{}", "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cannedServer(t, tc.answer)
			x, err := p.RoundTrip(context.Background(), Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(&x.Body)
			if err != nil || string(b) != tc.body || x.Status != 200 {
				t.Errorf("%d %q, %v; want 200 %q", x.Status, b, err, tc.body)
			}
			c := x.c
			x.Release(false)
			if idle := idleConns(p); len(idle) != 1 || idle[0] != c {
				t.Error("the connection was not kept after a well-formed answer")
			}
		})
	}
}

// FuzzHTTPAnswer feeds any bytes to the wire client's reader of an answer
// (fasthttp's parser under it), read in pieces of any size: it never
// panics; an answer it reads to the end, net/http's ReadResponse reads
// with the same status and body; and the answer, all of it arrived,
// drains without blocking to the same end.
func FuzzHTTPAnswer(f *testing.F) {
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(lateEvent) + "0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk("ab") + chunk("cde") + "0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nrest",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\n{}\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		var r io.Reader = bytes.NewReader(data)
		if piece%4 == 1 {
			r = iotest.OneByteReader(r)
		} else if piece%4 == 2 {
			r = iotest.HalfReader(r)
		}
		x := &Exchange{}
		if readHead(bufio.NewReaderSize(r, 4096), x) != nil {
			return
		}
		body, err := io.ReadAll(&x.Body)
		if err != nil || x.Body.toClose {
			return
		}
		resp, herr := readNetHTTP(data)
		if herr != nil {
			t.Fatalf("read %d %q; net/http refuses the answer: %v", x.Status, body, herr)
		}
		if resp.status != x.Status || !bytes.Equal(resp.body, body) {
			t.Fatalf("read %d %q; net/http reads %d %q", x.Status, body, resp.status, resp.body)
		}
		// All of it arrived: the drain reads it to its end.
		br := bufio.NewReaderSize(bytes.NewReader(data), 1<<16)
		br.Peek(len(data))
		y := &Exchange{}
		if err := readHead(br, y); err != nil {
			t.Fatalf("read once, refused with all of it buffered: %v", err)
		}
		if d := y.Body.drainBuffered(); d != drainDone {
			t.Fatalf("drainBuffered = %d with the whole answer buffered", d)
		}
	})
}

type netAnswer struct {
	status int
	body   []byte
}

// readNetHTTP reads data with net/http's ReadResponse, interim answers
// skipped.
func readNetHTTP(data []byte) (netAnswer, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return netAnswer{}, err
		}
		if resp.StatusCode < 200 {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		return netAnswer{resp.StatusCode, b}, err
	}
}

// TestLateEndInPieces: an answer's end that arrives in pieces, cut
// anywhere in the last chunk's size line or the trailer, leaves the late
// connection as it was after each piece (fasthttp's reader between two
// chunks, the bytes kept): a call finding the end cut short takes another
// connection, and the next one, once the rest arrived, reuses it, with no
// read in the background.
func TestLateEndInPieces(t *testing.T) {
	if newIdleProbe() == nil {
		t.Skip("no look at a socket without blocking on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(lateEvent)), 16) + "\r\n" + lateEvent + "\r\n"
	accepted := make(chan chan string, 16) // each connection's pieces to send, "" to end its answer
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			pieces := make(chan string, 4)
			accepted <- pieces
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
					for piece := range pieces {
						if piece == "" {
							break
						}
						if _, err := c.Write([]byte(piece)); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	conn := func(what string) chan string {
		t.Helper()
		select {
		case ch := <-accepted:
			return ch
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no new connection was made", what)
			return nil
		}
	}
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	late0 := lateDrains.Load()
	for _, end := range []string{"0\r\n\r\n", "0\r\nX-Trailer: 1\r\n\r\n"} {
		for k := 1; k < len(end); k++ {
			for _, c := range idleConns(p) {
				c.nc.Close()
			}
			p.mu.Lock()
			p.idle = nil
			p.mu.Unlock()
			lateCall(t, p).Release(false)
			chA := conn("the first call")
			idle := idleConns(p)
			if len(idle) != 1 || !idle[0].late {
				t.Fatalf("%q: %d idle, want 1 late", end, len(idle))
			}
			a := idle[0]
			chA <- end[:k]
			arrived(t, a)
			x2 := lateCall(t, p) // A's end cut short: another connection
			chB := conn("a call while the end had arrived in part")
			if x2.c == a {
				t.Fatalf("%q cut at %d: the call took the connection whose end is cut short", end, k)
			}
			if idle := idleConns(p); len(idle) != 1 || idle[0] != a || !a.late {
				t.Fatalf("%q cut at %d: the late connection was not kept", end, k)
			}
			chA <- end[k:]
			chA <- ""
			arrived(t, a)
			x3 := lateCall(t, p) // A's end whole: A again
			if x3.c != a {
				t.Fatalf("%q cut at %d: the call did not reuse the connection whose end arrived in two pieces", end, k)
			}
			for _, x := range []struct {
				x  *Exchange
				ch chan string
			}{{x2, chB}, {x3, chA}} {
				x.ch <- end
				x.ch <- ""
				if rest, err := io.ReadAll(&x.x.Body); err != nil || len(rest) != 0 {
					t.Fatalf("%q cut at %d: the answer's rest %q, %v", end, k, rest, err)
				}
				x.x.Release(false)
			}
		}
	}
	if n := lateDrains.Load() - late0; n != 0 {
		t.Errorf("%d answers' ends read in the background, want none", n)
	}
}

// TestDrainAllocations: the drain that Release runs on an answer whose
// rest has arrived (an SSE answer's last chunk, a JSON body unread)
// allocates nothing: its scratch buffer is the pool's, not a local array
// that escapes through fasthttp's stream (512 bytes a call before).
func TestDrainAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	chunk := strconv.FormatInt(int64(len(lateEvent)), 16) + "\r\n" + lateEvent + "\r\n"
	const result = `{"jsonrpc":"2.0","id":1,"result":{"content":[],"ok":true}}`
	for _, tc := range []struct{ name, answer string }{
		{"sse", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + "0\r\n\r\n"},
		{"json", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(result)) + "\r\n\r\n" + result},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := []byte(tc.answer)
			var r bytes.Reader
			br := bufio.NewReaderSize(&r, 8<<10)
			x := &Exchange{}
			var drained, got int
			read := func() {
				r.Reset(answer)
				br.Reset(&r)
				if err := readHead(br, x); err != nil {
					t.Fatal(err)
				}
				br.Peek(br.Buffered() + r.Len()) // all of it arrived
			}
			drain := func() {
				if got = x.Body.drainBuffered(); got == drainDone {
					drained++
				}
			}
			read()
			drain()
			if got != drainDone {
				t.Fatalf("drainBuffered = %d with the whole answer buffered", got)
			}
			// AllocsPerRun runs its function once before it counts.
			n := testing.AllocsPerRun(100, func() { read(); drain() })
			head := testing.AllocsPerRun(100, read)
			if drained != 102 {
				t.Fatalf("drained %d answers of 102", drained)
			}
			if n > head {
				t.Errorf("a drain allocates %v times, want none (%v with the head's read, %v without)", n-head, n, head)
			}
		})
	}
}
