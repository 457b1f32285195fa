package mcpwire

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// An answer released with more of its body to come than its last chunk's
// framing (here a Content-Length body read in part, the rest not sent
// yet) is read in the background, as lateTail says, not left in the pool
// late for the next calls to read 64 bytes at a time.
func TestLateOnlyForAnAnswersEnd(t *testing.T) {
	if newIdleProbe() == nil {
		t.Skip("no look at a socket without blocking on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rest := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var in [4096]byte
		for n := 0; !bytes.HasSuffix(in[:n], lateBody); {
			k, err := c.Read(in[n:])
			if err != nil {
				return
			}
			n += k
		}
		body := bytes.Repeat([]byte("x"), 1000)
		c.Write(append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"), body[:10]...))
		c.Write(<-rest)
		io.Copy(io.Discard, c)
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	late0 := lateDrains.Load()
	x, err := p.RoundTrip(context.Background(), Session{ID: "s1", Protocol: SessionProtocol}, lateBody)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(&x.Body, buf); err != nil {
		t.Fatal(err)
	}
	c := x.c
	x.Release(false)
	for _, i := range idleConns(p) {
		if i.late {
			t.Fatal("a connection with 990 bytes of its answer to come was put back late")
		}
	}
	rest <- bytes.Repeat([]byte("x"), 990)
	for deadline := time.Now().Add(5 * time.Second); len(idleConns(p)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the connection did not come back to the pool once its answer was read")
		}
	}
	if idle := idleConns(p); idle[0] != c || c.late {
		t.Error("the connection came back late, or another did")
	}
	if n := lateDrains.Load() - late0; n != 1 {
		t.Errorf("%d answers' ends read in the background, want 1", n)
	}
}
