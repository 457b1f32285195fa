package pgtest

import (
	"bytes"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy relays TCP connections to a cluster, for tests of what a client
// does when the network between it and the server fails without a word:
// Freeze makes one connection drop everything it carries, both ways,
// without closing it, as a cut network path (or a firewall that forgot the
// connection) does.
type Proxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	links map[int]*link // by the port of the connection to the server, as pg_stat_activity's client_port says
	wg    sync.WaitGroup
	on    []byte        // FreezeOn's bytes, until a connection carries them
	froze chan struct{} // closed when it did
}

type link struct {
	client, server net.Conn
	frozen         atomic.Bool
}

// NewProxy relays connections made to it to addr (host:port), until t ends.
func NewProxy(t testing.TB, addr string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("starting a proxy: %v", err)
	}
	p := &Proxy{ln: ln, to: addr, links: map[int]*link{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Via returns u (a cluster's URL, as Database returns it) with the proxy
// in the place of the server.
func (p *Proxy) Via(u string) string {
	v, err := url.Parse(u)
	if err != nil {
		return u
	}
	v.Host = p.Addr()
	return v.String()
}

// Freeze makes the connection whose end at the server has client port
// port (pg_stat_activity.client_port) drop all it carries from now on,
// both ways, and stay open. It reports whether the proxy relays such a
// connection.
func (p *Proxy) Freeze(port int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.links[port]
	if l == nil {
		return false
	}
	l.frozen.Store(true)
	return true
}

// FreezeOn makes the next connection that sends the server data holding
// sent (a statement, say) drop that data and all it carries after, both
// ways, and stay open: a connection cut at a chosen point of its
// conversation. The channel returned is closed once it is. One FreezeOn
// at a time.
func (p *Proxy) FreezeOn(sent string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on, p.froze = []byte(sent), make(chan struct{})
	return p.froze
}

// freezeOn freezes l if data, which its client sent, holds FreezeOn's
// bytes.
func (p *Proxy) freezeOn(l *link, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on != nil && bytes.Contains(data, p.on) {
		l.frozen.Store(true)
		p.on = nil
		close(p.froze)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		_, port, _ := net.SplitHostPort(s.LocalAddr().String())
		n, _ := strconv.Atoi(port)
		l := &link{client: c, server: s}
		p.mu.Lock()
		p.links[n] = l
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, s)
		go p.pipe(l, s, c)
	}
}

// pipe copies from src to dst until either closes, dropping what it reads
// once the link is frozen.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	defer p.wg.Done()
	defer l.client.Close()
	defer l.server.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && src == l.client {
			p.freezeOn(l, buf[:n])
		}
		if n > 0 && !l.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, l := range p.links {
		l.client.Close()
		l.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
