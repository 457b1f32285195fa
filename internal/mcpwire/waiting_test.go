package mcpwire

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// waitingCtx is a WaitingContext that counts its Waiting calls and, in
// the first, waits until the server has the whole request and tells it
// that Waiting ran.
type waitingCtx struct {
	context.Context
	received <-chan struct{}
	ran      chan<- struct{}
	calls    int
	got      bool // the server had the request when Waiting ran
}

func (c *waitingCtx) Waiting() {
	c.calls++
	if c.calls > 1 {
		return
	}
	select {
	case <-c.received:
		c.got = true
	case <-time.After(5 * time.Second):
	}
	close(c.ran)
}

// TestRoundTripWaiting: RoundTrip runs a WaitingContext's Waiting once,
// on the caller's goroutine, after the request was written (the server
// has it) and before the answer is read: a server that answers only once
// Waiting ran answers 200, one that had to give up waiting 503.
func TestRoundTripWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received, ran := make(chan struct{}), make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var in [4096]byte
		for n := 0; ; {
			k, err := c.Read(in[n:])
			if err != nil {
				return
			}
			n += k
			if bytes.HasSuffix(in[:n], []byte("}")) {
				break
			}
		}
		close(received)
		status := "200 OK"
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			status = "503 Service Unavailable"
		}
		c.Write([]byte("HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"))
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	ctx := &waitingCtx{Context: context.Background(), received: received, ran: ran}
	x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, []byte(`{"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	status := x.Status
	b, _ := io.ReadAll(io.LimitReader(&x.Body, 2))
	x.Release(false)
	if status != 200 {
		t.Errorf("status %d: the server had no word that Waiting ran before RoundTrip read its answer", status)
	}
	if ctx.calls != 1 {
		t.Errorf("Waiting ran %d times, want once", ctx.calls)
	}
	if !ctx.got {
		t.Error("Waiting ran before the request was written")
	}
	if string(b) != "{}" {
		t.Errorf("body %q", b)
	}
}
