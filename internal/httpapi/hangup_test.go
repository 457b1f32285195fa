//go:build unix

package httpapi

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair is a server's end of a loopback TCP connection and its client's.
func tcpPair(t *testing.T) (server *net.TCPConn, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); client.Close() })
	return c.(*net.TCPConn), client
}

// TestHangupOnClose: the client's close ends the context, as net/http's
// request's ends (context.Canceled).
func TestHangupOnClose(t *testing.T) {
	srv, client := tcpPair(t)
	ctx, h, ok := watchHangup(context.Background(), srv)
	if !ok {
		t.Fatal("a TCP connection was not watched")
	}
	defer h.stop()
	client.Close()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client's close did not end the context")
	}
	if context.Cause(ctx) != context.Canceled {
		t.Errorf("cause %v, want context.Canceled", context.Cause(ctx))
	}
}

// TestHangupKeepsWhatFollows: bytes the client sends while the request is
// served are not taken for a close nor read; after stop the connection
// reads them, with no deadline left.
func TestHangupKeepsWhatFollows(t *testing.T) {
	srv, client := tcpPair(t)
	srv.SetReadDeadline(time.Now().Add(time.Millisecond)) // fasthttp's, for the body: the watch must outlast it
	ctx, h, ok := watchHangup(context.Background(), srv)
	if !ok {
		t.Fatal("a TCP connection was not watched")
	}
	time.Sleep(20 * time.Millisecond)
	io.WriteString(client, "next")
	time.Sleep(20 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("the context ended (%v) without a close", context.Cause(ctx))
	}
	h.stop()
	if ctx.Err() == nil {
		t.Error("the context outlived stop")
	}
	buf := make([]byte, 8)
	n, err := io.ReadAtLeast(srv, buf, 4)
	if err != nil || string(buf[:n]) != "next" {
		t.Errorf("after stop the connection read %q, %v; want what the client sent", buf[:n], err)
	}
	// No deadline in the past is left: a read waits for the client.
	go func() { time.Sleep(20 * time.Millisecond); io.WriteString(client, "more") }()
	if n, err := io.ReadAtLeast(srv, buf, 4); err != nil || string(buf[:n]) != "more" {
		t.Errorf("a read after stop: %q, %v", buf[:n], err)
	}
}

// TestHangupNotTCP: a connection that is not TCP is not watched.
func TestHangupNotTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, ok := watchHangup(context.Background(), a); ok {
		t.Error("a pipe was watched")
	}
}

// BenchmarkHangup: what watching a connection costs a call: the watch
// started and stopped, on an idle loopback TCP connection.
func BenchmarkHangup(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		ctx, h, ok := watchHangup(context.Background(), c)
		if !ok {
			b.Fatal("not watched")
		}
		h.stop()
		if ctx.Err() == nil {
			b.Fatal("the context outlived stop")
		}
	}
}
