package gateway

// The lean client's HTTP/1.1 exchange with a plain-HTTP upstream. net/http's
// client hands every request to two goroutines per connection (one writes,
// one reads and passes the response back), builds header maps both ways,
// and closes a connection whose body was not read to the end — which an SSE
// answer often is not when its response event arrives before the final
// chunk. For one POST and its answer the gateway needs none of that: it
// writes the request in one write on a pooled keep-alive connection and
// reads the answer on the calling goroutine. https upstreams keep using
// net/http.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// leanConns is a pool of keep-alive connections to one plain-HTTP upstream.
type leanConns struct {
	addr   string // host:port to dial
	header []byte // the request head after the request line, up to the session headers
	path   string // the request target

	mu     sync.Mutex
	idle   []*leanConn
	closed bool

	redirected atomic.Bool // the endpoint answered a redirect: calls go through net/http
}

// maxIdleLean bounds the idle connections kept per upstream: enough for
// 64 concurrent clients with room to spare.
const maxIdleLean = 128

type leanConn struct {
	nc net.Conn
	br *bufio.Reader
	rc syscall.RawConn // nc's, for the liveness probe; nil if it has none
}

var leanPools sync.Map // *upstream -> *leanConns

// leanConnsOf returns the connection pool of u, or nil when u is not a
// plain-HTTP upstream. The pool closes when the gateway does.
func (u *upstream) leanConnsOf() *leanConns {
	if v, ok := leanPools.Load(u); ok {
		return v.(*leanConns)
	}
	p := newLeanConns(u)
	v, loaded := leanPools.LoadOrStore(u, p)
	if !loaded {
		context.AfterFunc(u.g.ctx, func() {
			leanPools.Delete(u)
			if p != nil {
				p.close()
			}
		})
	}
	lc, _ := v.(*leanConns)
	return lc
}

func newLeanConns(u *upstream) *leanConns {
	pu, err := url.Parse(u.cfg.URL)
	if err != nil || pu.Scheme != "http" || pu.User != nil || pu.Host == "" {
		return nil
	}
	if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: pu}); err != nil || proxy != nil {
		return nil // through the proxy, as net/http goes
	}
	addr := pu.Host
	if pu.Port() == "" {
		addr = net.JoinHostPort(pu.Hostname(), "80")
	}
	var h bytes.Buffer
	h.WriteString("Host: " + pu.Host + "\r\n")
	h.WriteString("User-Agent: reach\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
	for k, v := range u.cfg.Headers {
		s := v.Reveal()
		if k == "" || strings.ContainsAny(k, " \t:") || !validHeader(k) || !validHeader(s) || leanOwnHeader[strings.ToLower(k)] {
			return nil // net/http's client refuses or overrides these: let it
		}
		h.WriteString(k + ": " + s + "\r\n")
	}
	return &leanConns{addr: addr, header: h.Bytes(), path: pu.RequestURI()}
}

// leanOwnHeader are the headers the lean client writes itself (or must
// not send twice).
var leanOwnHeader = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"content-type": true, "accept": true, "user-agent": true,
	"mcp-session-id": true, "mcp-protocol-version": true,
}

func validHeader(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' || s[i] == 0 {
			return false
		}
	}
	return true
}

// get returns an idle connection the server has not closed (checked
// without blocking, as net/http's client notices such a close and dials
// again), or a new one.
func (p *leanConns) get(ctx context.Context) (*leanConn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if c.alive() {
			return c, nil
		}
		c.nc.Close()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	c := &leanConn{nc: nc, br: bufio.NewReaderSize(nc, 8<<10)}
	if sc, ok := nc.(syscall.Conn); ok {
		c.rc, _ = sc.SyscallConn()
	}
	return c, nil
}

// alive reports whether an idle connection is still open: nothing is
// buffered and the socket has neither data (nothing was asked, so that
// would be a close notice or garbage) nor an end of stream. It looks
// without blocking, in one non-blocking peek (peekIdle); a read with a
// past deadline would not do, as Go fails it before reading.
func (c *leanConn) alive() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	return c.rc == nil || peekIdle(c.rc)
}

func (p *leanConns) put(c *leanConn) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdleLean {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

func (p *leanConns) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.closed = true
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// leanResponse is an upstream's answer on a lean connection.
type leanResponse struct {
	status      int
	statusText  string
	contentType string
	close       bool // the server closes the connection after it
	body        leanBody
}

// roundTrip writes one POST of body with the session's headers and reads
// the head of the answer. The caller reads resp.body and then calls
// p.release(c, resp, stop, failed). When ctx ends, the connection's
// deadline passes and the exchange fails; stop reports false once that
// happened (the connection is then closed, not reused).
func (p *leanConns) roundTrip(ctx context.Context, ls *leanSession, body []byte) (*leanConn, *leanResponse, func() bool, error) {
	c, err := p.get(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		nc := c.nc
		stop = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	}
	head := bufPool.Get().(*bytes.Buffer)
	head.Reset()
	head.WriteString("POST ")
	head.WriteString(p.path)
	head.WriteString(" HTTP/1.1\r\n")
	head.Write(p.header)
	head.WriteString(headerSession + ": " + ls.id + "\r\n")
	head.WriteString(headerProtocol + ": " + ls.protocol + "\r\n")
	head.WriteString("Content-Length: ")
	head.WriteString(strconv.Itoa(len(body)))
	head.WriteString("\r\n\r\n")
	head.Write(body)
	_, err = c.nc.Write(head.Bytes())
	bufPool.Put(head)
	if err != nil {
		stop()
		c.nc.Close()
		return nil, nil, nil, err
	}
	resp, err := readLeanHead(c.br)
	if err != nil {
		stop()
		c.nc.Close()
		return nil, nil, nil, err
	}
	return c, resp, stop, nil
}

// release returns c to the pool when its answer was read to the end, or
// can be without waiting; else it finishes reading in the background (an
// SSE stream usually ends right after the response event; one kept open
// is dropped after 5 s), or closes c.
func (p *leanConns) release(c *leanConn, resp *leanResponse, stop func() bool, failed bool) {
	if !stop() || failed || resp.close {
		c.nc.Close()
		return
	}
	switch resp.body.drainBuffered() {
	case drainDone:
		p.put(c)
	case drainMore:
		go func() {
			c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.Copy(io.Discard, io.LimitReader(&resp.body, 1<<20))
			c.nc.SetReadDeadline(time.Time{})
			if err == nil && resp.body.eof {
				p.put(c)
				return
			}
			c.nc.Close()
		}()
	default:
		c.nc.Close()
	}
}

var errLeanHead = errors.New("malformed HTTP answer")

// readLeanHead reads the status line and the headers the lean client uses.
func readLeanHead(br *bufio.Reader) (*leanResponse, error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return nil, err
		}
		// HTTP/1.x NNN text
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return nil, errLeanHead
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 {
			return nil, errLeanHead
		}
		r := &leanResponse{status: status, statusText: string(bytes.TrimSpace(line[9:]))}
		if bytes.HasPrefix(line, []byte("HTTP/1.0")) {
			r.close = true
		}
		length, chunked := int64(-1), false
		for {
			line, err := readLine(br)
			if err != nil {
				return nil, err
			}
			if len(line) == 0 {
				break
			}
			k, v, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return nil, errLeanHead
			}
			v = bytes.TrimSpace(v)
			switch {
			case asciiEqualFold(k, "content-type"):
				r.contentType = string(v)
			case asciiEqualFold(k, "content-length"):
				n, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || n < 0 {
					return nil, errLeanHead
				}
				length = n
			case asciiEqualFold(k, "transfer-encoding"):
				if !asciiEqualFold(v, "chunked") {
					return nil, errLeanHead // no other coding was asked for
				}
				chunked = true
			case asciiEqualFold(k, "connection"):
				if asciiEqualFold(v, "close") {
					r.close = true
				}
			}
		}
		if status >= 100 && status < 200 {
			continue // 100 Continue and other interim answers
		}
		r.body.br = br
		switch {
		case status == 204 || status == 304:
			r.body.eof = true
		case chunked:
			r.body.chunked = true
		case length >= 0:
			r.body.left = length
			r.body.eof = length == 0
		default:
			r.body.left = -1 // to the close
			r.close = true
		}
		return r, nil
	}
}

// readLine reads a line without its CRLF; lines longer than the buffer
// are cut (the head's long lines are ones the client ignores).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, isPrefix, err := br.ReadLine()
	if err != nil {
		return nil, err
	}
	for isPrefix {
		_, isPrefix, err = br.ReadLine()
		if err != nil {
			return nil, err
		}
	}
	return line, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// leanBody reads a body with a length, chunked, or to the close.
type leanBody struct {
	br      *bufio.Reader
	chunked bool
	left    int64 // bytes left in the body (not chunked; -1: to the close) or in the chunk
	inChunk bool  // chunked: a chunk's data was read, its CRLF was not
	eof     bool
}

func (b *leanBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if !b.chunked {
		if b.left < 0 {
			n, err := b.br.Read(p)
			if err == io.EOF {
				b.eof = true
			}
			return n, err
		}
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err := b.br.Read(p)
		b.left -= int64(n)
		if b.left == 0 {
			b.eof = true
			if err == nil || err == io.EOF {
				return n, nil
			}
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	for b.left == 0 {
		if err := b.nextChunk(); err != nil {
			return 0, err
		}
		if b.eof {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// nextChunk reads the CRLF after the last chunk's data, the next chunk's
// size line, and at the last chunk the trailer.
func (b *leanBody) nextChunk() error {
	if b.inChunk {
		line, err := readLine(b.br)
		if err != nil {
			return unexpected(err)
		}
		if len(line) != 0 {
			return errors.New("malformed chunked encoding")
		}
		b.inChunk = false
	}
	line, err := readLine(b.br)
	if err != nil {
		return unexpected(err)
	}
	size, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	if size == 0 {
		for { // the trailer, up to an empty line
			line, err := readLine(b.br)
			if err != nil {
				return unexpected(err)
			}
			if len(line) == 0 {
				break
			}
		}
		b.eof = true
		return nil
	}
	b.left, b.inChunk = size, true
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parseChunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i] // chunk extensions
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || len(line) > 16 {
		return 0, errors.New("malformed chunk size")
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("malformed chunk size %q", line)
	}
	return n, nil
}

const (
	drainDone = iota // the body was read to its end
	drainMore        // the rest has not arrived yet
	drainNo          // the body cannot be drained (to the close, or too much)
)

// drainBuffered reads what is left of the body from what has already
// arrived, without blocking.
func (b *leanBody) drainBuffered() int {
	for n := 0; !b.eof; n++ {
		if !b.chunked && b.left < 0 {
			return drainNo
		}
		if n > 64 {
			return drainMore
		}
		buffered := b.br.Buffered()
		if b.left > 0 {
			if buffered == 0 {
				return drainMore
			}
			k, _ := b.br.Discard(int(min(int64(buffered), b.left)))
			b.left -= int64(k)
			if !b.chunked && b.left == 0 {
				b.eof = true
			}
			continue
		}
		// A chunk boundary: go on only if the lines it needs are here.
		peek, _ := b.br.Peek(buffered)
		need := 1
		if b.inChunk {
			need = 2 // the CRLF after the data, then the size line
		}
		if bytes.Count(peek, []byte("\n")) < need {
			return drainMore
		}
		if len(peek) > 0 && bytes.HasPrefix(peek[bytes.IndexByte(peek, '\n')+1:], []byte("0")) || !b.inChunk && bytes.HasPrefix(peek, []byte("0")) {
			// The last chunk: its trailer must be here too.
			if !bytes.Contains(peek, []byte("\r\n\r\n")) && !bytes.Contains(peek, []byte("\n\n")) {
				return drainMore
			}
		}
		if err := b.nextChunk(); err != nil {
			return drainNo
		}
	}
	return drainDone
}
