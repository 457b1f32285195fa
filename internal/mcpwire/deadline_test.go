package mcpwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// deadlineCtx is a DeadlineContext as the runtime's attempt is one: it
// counts the calls of Done (which would make its timer) and hooks its
// parent's end for AfterCancel.
type deadlineCtx struct {
	context.Context // the parent
	deadline        time.Time
	dones           atomic.Int32
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{} {
	c.dones.Add(1)
	return c.Context.Done()
}
func (c *deadlineCtx) AfterCancel(f func()) func() bool { return context.AfterFunc(c.Context, f) }

// TestRoundTripDeadlineContext: under a DeadlineContext an exchange on a
// pooled connection waits on nothing of the context's (Done is never
// called: no timer is made for it; a dial waits on it), fails at the context's deadline on the connection when the
// answer does not come, ends when the context is cancelled, and gives its
// connection back to the pool without the deadline.
func TestRoundTripDeadlineContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	answered := []byte(`"answer"`)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // answers the requests that ask for an answer; the others, never
				defer c.Close()
				var in [4096]byte
				for n := 0; ; {
					k, err := c.Read(in[n:])
					if err != nil {
						return
					}
					n += k
					if !bytes.HasSuffix(in[:n], []byte("}")) {
						continue
					}
					ask := bytes.Contains(in[:n], answered)
					n = 0
					if ask {
						if _, err := c.Write([]byte(answer)); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	s := Session{ID: "s1", Protocol: SessionProtocol}
	exchange := func(ctx context.Context, body string) error {
		x, err := p.RoundTrip(ctx, s, []byte(body))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(&x.Body, 2))
		x.Release(ctx.Err() != nil)
		if err == nil && string(b) != "{}" {
			t.Errorf("body %q", b)
		}
		return err
	}

	if err := exchange(context.Background(), `{"id":"answer"}`); err != nil { // dials: the pool has a connection
		t.Fatal(err)
	}
	ctx := &deadlineCtx{Context: context.Background(), deadline: time.Now().Add(50 * time.Millisecond)}
	if err := exchange(ctx, `{"id":"answer"}`); err != nil {
		t.Fatal(err)
	}
	if n := ctx.dones.Load(); n != 0 {
		t.Errorf("on a pooled connection, Done was called %d times, want none", n)
	}
	time.Sleep(100 * time.Millisecond) // the deadline passes: the pooled connection must not keep it
	if err := exchange(context.Background(), `{"id":"answer"}`); err != nil {
		t.Errorf("the connection given back kept the deadline: %v", err)
	}

	ctx = &deadlineCtx{Context: context.Background(), deadline: time.Now().Add(50 * time.Millisecond)}
	if err := exchange(ctx, `{"id":"none"}`); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an exchange past its deadline: %v, want the connection's deadline exceeded", err)
	}

	parent, cancel := context.WithCancel(context.Background())
	ctx = &deadlineCtx{Context: parent, deadline: time.Now().Add(time.Hour)}
	errc := make(chan error, 1)
	go func() { errc <- exchange(ctx, `{"id":"none"}`) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errc; err == nil {
		t.Error("an exchange whose context was cancelled did not fail")
	}
}

// TestRoundTripCallerGoneHoldsBack: an exchange whose context ended
// before any of it was written is held back (HeldBack: the runtime takes
// it for a call not sent, whose retry runs it), and the upstream reads
// nothing of it, on a pooled connection and on a new one. Before, the
// request was written, or its write failed as a send does, and the
// caller's retry was told the call may have taken effect.
func TestRoundTripCallerGoneHoldsBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var in [4096]byte
				for {
					k, err := c.Read(in[:])
					got.Add(int64(k))
					if err != nil {
						return
					}
					if bytes.HasSuffix(in[:k], []byte("}")) {
						c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"))
					}
				}
			}()
		}
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	s := Session{ID: "s1", Protocol: SessionProtocol}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	var hb *HeldBack
	if _, err := p.RoundTrip(gone, s, []byte(`{"id":"new"}`)); !errors.As(err, &hb) {
		t.Fatalf("an exchange on a new connection whose caller went away: %v; want HeldBack", err)
	}
	x, err := p.RoundTrip(context.Background(), s, []byte(`{"id":"first"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(&x.Body)
	x.Release(false)
	sent := got.Load()
	if sent == 0 {
		t.Fatal("the upstream read nothing of an exchange that was sent")
	}
	for range 20 { // on the pooled connection; its cut (AfterCancel) races the write
		ctx := &deadlineCtx{Context: gone, deadline: time.Now().Add(time.Minute)}
		if _, err := p.RoundTrip(ctx, s, []byte(`{"id":"gone"}`)); !errors.As(err, &hb) {
			t.Fatalf("an exchange whose caller went away: %v; want HeldBack", err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := got.Load(); n != sent {
		t.Fatalf("the upstream read %d bytes of exchanges whose caller had gone; want none", n-sent)
	}
}
