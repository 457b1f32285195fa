//go:build unix

package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// firstBytePair returns a firstByteConn accepted by firstBytes and the
// client's end of its connection.
func firstBytePair(t *testing.T) (*firstByteConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := firstBytes(ln).Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fc, ok := c.(*firstByteConn)
	if !ok {
		t.Fatalf("firstBytes accepted a %T, want a *firstByteConn", c)
	}
	return fc, client
}

// The one-byte read reads what has arrived: the rest of the request is
// then read from it, not from the socket (whose read a deadline in the
// past would fail), and the buffer is given back once read.
func TestFirstByteReadsWhatArrived(t *testing.T) {
	fc, client := firstBytePair(t)
	req := []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
	if _, err := client.Write(req); err != nil {
		t.Fatal(err)
	}
	var one [1]byte
	if n, err := fc.Read(one[:]); n != 1 || err != nil || one[0] != 'P' {
		t.Fatalf("the first byte: %d %q %v", n, one[:n], err)
	}
	fc.TCPConn.SetReadDeadline(time.Unix(1, 0))
	rest := make([]byte, 0, len(req))
	buf := make([]byte, 16)
	for len(rest) < len(req)-1 {
		n, err := fc.Read(buf)
		rest = append(rest, buf[:n]...)
		if err != nil {
			t.Fatalf("after %q: %v (the rest was read from the socket, not from the first read)", rest, err)
		}
	}
	if !bytes.Equal(rest, req[1:]) {
		t.Errorf("the rest = %q, want %q", rest, req[1:])
	}
	if fc.buf != nil || fc.rest != nil {
		t.Errorf("the buffer is held once read (%d bytes left)", len(fc.rest))
	}
	// Nothing more: the socket's read fails at its deadline, as a TCP
	// connection's.
	_, err := fc.Read(buf)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a read past the deadline: %v, want a timeout", err)
	}
}

// A one-byte read waits for the request, holding no buffer while it
// waits, and honours the read deadline; the end of the stream is io.EOF.
func TestFirstByteWaitsAndEnds(t *testing.T) {
	fc, client := firstBytePair(t)
	fc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var one [1]byte
	_, err := fc.Read(one[:])
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a one-byte read with nothing sent: %v, want a timeout", err)
	}
	if fc.buf != nil {
		t.Errorf("a buffer is held by a connection waiting for a request")
	}
	fc.SetReadDeadline(time.Time{})

	done := make(chan error, 1)
	go func() {
		n, err := fc.Read(one[:])
		if err == nil && (n != 1 || one[0] != 'G') {
			err = errors.New("not the request's first byte")
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	if _, err := client.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a one-byte read waiting for the request: %v", err)
	}
	rest, _ := bufio.NewReader(io.LimitReader(fc, 15)).ReadString('\n')
	if rest != "ET / HTTP/1.1\r\n" {
		t.Errorf("the rest of the line: %q", rest)
	}
	client.Close()
	var all []byte
	buf := make([]byte, 64)
	for {
		n, err := fc.Read(buf[:1])
		all = append(all, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading to the end: %v", err)
		}
	}
	if string(all) != "\r\n" {
		t.Errorf("read to the end: %q, want the request's last line", all)
	}
}

// A connection holding bytes of its first read is not watched for its
// client's going (those bytes are past what a peek of the socket sees);
// one that holds none is, as its TCP connection.
func TestFirstByteConnWatched(t *testing.T) {
	fc, client := firstBytePair(t)
	if tc, ok := tcp(fc); !ok || tc != fc.TCPConn {
		t.Errorf("tcp of an idle firstByteConn: %v %v", tc, ok)
	}
	if _, err := client.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	var one [1]byte
	if _, err := fc.Read(one[:]); err != nil {
		t.Fatal(err)
	}
	if _, ok := tcp(fc); ok {
		t.Errorf("a firstByteConn holding %q is watched", fc.rest)
	}
	if _, err := fc.Read(one[:]); err != nil || one[0] != 'b' {
		t.Fatalf("the second byte: %q %v", one, err)
	}
	if _, ok := tcp(fc); !ok {
		t.Errorf("a firstByteConn holding nothing is not watched")
	}
}
