package mcpwire

// The wire client's HTTP/1.1 exchange with a plain-HTTP upstream. net/http's
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
)

// Conns is a pool of keep-alive connections to one plain-HTTP MCP
// endpoint. Make one with NewConns; its methods are safe for concurrent
// use.
type Conns struct {
	addr   string // host:port to dial
	header []byte // the request head after the request line, up to the session headers
	path   string // the request target

	mu     sync.Mutex
	idle   []*conn
	closed bool

	redirected atomic.Bool // the endpoint answered a redirect: calls go through net/http
}

// maxIdle bounds the idle connections kept per endpoint: enough for 64
// concurrent clients with room to spare.
const maxIdle = 128

type conn struct {
	nc    net.Conn
	br    *bufio.Reader   // nil while the connection is idle (readers)
	rc    syscall.RawConn // nc's, for the liveness probe; nil if it has none
	probe *idleProbe      // rc's
	cut   func()          // ends an exchange on it: its deadline passes (see RoundTrip)
	x     Exchange        // its exchange, one at a time

	// An idle connection whose last answer's end had not arrived when it
	// was released (late): what was left of that body to read (rest, its
	// reader nil), and the bytes of it that had arrived (tail[:tailN]).
	// The next get reads the rest as it finds it, without waiting
	// (takeLate), rather than a goroutine reading it meanwhile.
	late   bool
	lateAt time.Time
	rest   Body
	tail   [lateTail]byte
	tailN  int
	tr     tailReader
}

// lateTail bounds what a late connection keeps of its answer's end: the
// last chunk and its trailer, or what arrives with them. An answer with
// more left is read in the background at its release.
const lateTail = 64

// tailReader reads a late connection's tail, then its socket.
type tailReader struct {
	c   *conn
	off int
}

func (r *tailReader) Read(p []byte) (int, error) {
	if c := r.c; r.off < c.tailN {
		n := copy(p, c.tail[r.off:c.tailN])
		r.off += n
		return n, nil
	}
	return r.c.nc.Read(p)
}

// Session is the MCP session a request is sent on: its id and protocol
// version, sent as headers.
type Session struct {
	ID, Protocol string
}

// NewConns returns a pool for the endpoint rawURL with headers sent on
// every request, or nil when the endpoint is not one the wire client
// takes: not plain http, reached through a proxy, or with headers that
// net/http's client would refuse or override. Close it when done.
func NewConns(rawURL string, headers map[string]string) *Conns {
	pu, err := url.Parse(rawURL)
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
	for k, s := range headers {
		if k == "" || strings.ContainsAny(k, " \t:") || !validHeader(k) || !validHeader(s) || ownHeader[strings.ToLower(k)] {
			return nil // net/http's client refuses or overrides these: let it
		}
		h.WriteString(k + ": " + s + "\r\n")
	}
	return &Conns{addr: addr, header: h.Bytes(), path: pu.RequestURI()}
}

// Redirected reports whether the endpoint answered a redirect (see
// MarkRedirected).
func (p *Conns) Redirected() bool { return p.redirected.Load() }

// MarkRedirected records that the endpoint answered a redirect: its calls
// then go through net/http, which follows it. It reports whether it was
// the first to.
func (p *Conns) MarkRedirected() bool { return p.redirected.CompareAndSwap(false, true) }

// ownHeader are the headers the wire client writes itself (or must not
// send twice).
var ownHeader = map[string]bool{
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
func (p *Conns) get(ctx context.Context) (*conn, error) {
	for waiting := 0; ; {
		p.mu.Lock()
		n := len(p.idle)
		if n <= waiting {
			// None, or only late ones put back below (see takeLate): a
			// new connection, as when they were read in the background.
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		var br *bufio.Reader
		if c.late {
			var later bool
			if br, later = p.takeLate(c); later {
				waiting++
			}
			if br == nil {
				continue // closed, put back, or read in the background
			}
		}
		if c.alive() {
			if br == nil {
				br = readers.Get().(*bufio.Reader)
			}
			c.br = br
			c.br.Reset(c.nc)
			return c, nil
		}
		if br != nil {
			readers.Put(br)
		}
		c.nc.Close()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(nc)
	c := &conn{nc: nc, br: br}
	if sc, ok := nc.(syscall.Conn); ok {
		c.rc, _ = sc.SyscallConn()
		c.probe = newIdleProbe()
	}
	c.cut = func() { nc.SetDeadline(time.Unix(1, 0)) }
	return c, nil
}

// alive reports whether an idle connection is still open: the socket has
// neither data (nothing was asked, so that would be a close notice or
// garbage) nor an end of stream. It looks without blocking, in one
// non-blocking peek (peekIdle); a read with a past deadline would not do,
// as Go fails it before reading.
func (c *conn) alive() bool {
	return c.rc == nil || c.probe.peekIdle(c.rc)
}

// readers are the connections' readers, held only during an exchange: a
// pool keeps up to maxIdle connections to each upstream, and an idle one
// holding its 8 KiB reader held 1 MB of live heap under 128 concurrent
// calls (TestIdleConnectionHoldsNoReader).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}

// put gives c back to the pool, its reader to readers: a connection with
// bytes buffered past its answer is closed, as net/http's client closes
// one the server wrote to unasked.
func (p *Conns) put(c *conn) {
	if c.br.Buffered() > 0 {
		c.nc.Close()
		return
	}
	// The exchange's body read the reader: once released it reads nothing
	// (not another connection's answer, should a caller read it again).
	c.x.Body = Body{eof: true}
	c.br.Reset(nil)
	readers.Put(c.br)
	c.br = nil
	c.tailN = 0
	p.pool(c)
}

// pool keeps c, idle, or closes it when the pool is closed or full.
func (p *Conns) pool(c *conn) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdle {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// putLate gives c, late, back to the pool, its reader to readers.
func (p *Conns) putLate(c *conn) {
	c.x.Body = Body{eof: true}
	c.br.Reset(nil)
	readers.Put(c.br)
	c.br = nil
	p.pool(c)
}

// Close closes the idle connections; those in use close when released.
func (p *Conns) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.closed = true
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// Exchange is one request and the head of its answer on a pooled
// connection: read Body, then Release it. It belongs to the connection:
// once released, it is not to be read again.
type Exchange struct {
	Status      int
	StatusText  string
	ContentType string
	Body        Body
	close       bool // the server closes the connection after it

	pool     *Conns
	c        *conn
	stop     func() bool // reports false once the call's context ended (see RoundTrip)
	deadline bool        // the context's deadline is the connection's (a DeadlineContext's)
}

// A DeadlineContext is a context that leaves its deadline to whoever
// waits for it (the runtime's context of a tool's attempt, which makes a
// timer only for a caller that waits on Done): RoundTrip enforces its
// Deadline on the connection, for the request and for reading the
// answer until Release, and ends the exchange when AfterCancel runs its
// function, as context.AfterFunc would when the context is cancelled
// before its deadline. The exchange is released before the context's
// owner ends it.
type DeadlineContext interface {
	context.Context
	AfterCancel(f func()) (stop func() bool)
}

// RoundTrip writes one POST of body on session s and reads the head of the
// answer. When ctx ends, the connection's deadline passes and the exchange
// fails; the connection is then closed, not reused.
func (p *Conns) RoundTrip(ctx context.Context, s Session, body []byte) (*Exchange, error) {
	c, err := p.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// Its caller went away before a connection was had:
			// nothing was sent.
			return nil, &HeldBack{Err: err}
		}
		return nil, err
	}
	stop, deadline := noStop, false
	if dc, ok := ctx.(DeadlineContext); ok {
		if d, ok := ctx.Deadline(); ok {
			c.nc.SetDeadline(d)
			deadline = true
		}
		stop = dc.AfterCancel(c.cut)
	} else if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.cut)
	}
	head := GetBuffer()
	head.WriteString("POST ")
	head.WriteString(p.path)
	head.WriteString(" HTTP/1.1\r\n")
	head.Write(p.header)
	head.WriteString(HeaderSession + ": ")
	head.WriteString(s.ID)
	head.WriteString("\r\n" + HeaderProtocol + ": ")
	head.WriteString(s.Protocol)
	head.WriteString("\r\nContent-Length: ")
	head.WriteString(strconv.Itoa(len(body)))
	head.WriteString("\r\n\r\n")
	head.Write(body)
	crashpoint.Reached("wire.ready")
	if f, ok := ctx.Value(beforeSendKey{}).(func(context.Context) error); ok {
		// The connection is ready and nothing was written on it: the
		// last moment to hold the call back (WithBeforeSend).
		if err := f(ctx); err != nil {
			PutBuffer(head)
			stop()
			c.nc.Close()
			return nil, &HeldBack{Err: err}
		}
	}
	if err := ctx.Err(); err != nil {
		// Its caller went away before a byte of it was written: held
		// back, so that the runtime knows the call was not sent (its
		// retry runs it, instead of being told it may have run).
		PutBuffer(head)
		stop()
		c.nc.Close()
		return nil, &HeldBack{Err: err}
	}
	_, err = c.nc.Write(head.Bytes())
	PutBuffer(head)
	if err != nil {
		stop()
		c.nc.Close()
		return nil, err
	}
	// The connection's own: it is not used again before Release gives
	// it back (or its background read ends).
	x := &c.x
	*x = Exchange{pool: p, c: c, stop: stop, deadline: deadline}
	if err := readHead(c.br, x); err != nil {
		stop()
		c.nc.Close()
		return nil, err
	}
	return x, nil
}

// Release returns the connection to the pool when its answer was read to
// the end, or can be without waiting; else it finishes reading in the
// background (an SSE stream usually ends right after the response event;
// one kept open is dropped after 5 s), or closes it. failed closes it.
func (x *Exchange) Release(failed bool) { x.pool.release(x, failed) }

func (p *Conns) release(resp *Exchange, failed bool) {
	c := resp.c
	if !resp.stop() || failed || resp.close {
		c.nc.Close()
		return
	}
	if resp.deadline {
		c.nc.SetDeadline(time.Time{})
	}
	switch resp.Body.drainBuffered() {
	case drainDone:
		p.put(c)
	case drainMore:
		if k := c.br.Buffered(); c.probe != nil && k <= lateTail/2 && resp.Body.chunked && resp.Body.left == 0 {
			// The rest (an SSE answer's last chunk, mostly) is read by
			// the next get, which finds it arrived: no goroutine to wake
			// for it on every call. Only at a chunk's end: a body with
			// bytes of its data to come (a Content-Length one read in
			// part, a chunk cut short) has more left than a tail holds.
			b, _ := c.br.Peek(k)
			c.tailN = copy(c.tail[:], b)
			c.rest, c.rest.br = resp.Body, nil
			c.late, c.lateAt = true, time.Now()
			p.putLate(c)
			return
		}
		go p.drainLate(c, &resp.Body)
	default:
		c.nc.Close()
	}
}

// drainLate reads the rest of c's answer (body) in the background, for up
// to 5 s, then gives c back to the pool, or closes it.
func (p *Conns) drainLate(c *conn, body *Body) {
	lateDrains.Add(1)
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	c.nc.SetReadDeadline(time.Time{})
	if err == nil && body.eof {
		p.put(c)
		return
	}
	c.nc.Close()
}

// lateDrains counts the answers whose end was read in the background.
var lateDrains atomic.Int64

// takeLate reads what has arrived of the rest of a late connection's
// answer, without waiting, and returns the reader it used when that was
// the answer's end and nothing after it: c is then as a connection whose
// answer was read to its end. Otherwise it returns nil, having closed c
// (closed by the server, sent more than its answer, or late for longer
// than lateFor), put it back at the bottom of the pool, late still (later:
// its end has not arrived yet), or left it to drainLate (more is left
// than its tail holds).
func (p *Conns) takeLate(c *conn) (br *bufio.Reader, later bool) {
	n, ok := c.probe.readIdle(c.rc, c.tail[c.tailN:])
	if !ok {
		c.nc.Close() // the server closed it
		return nil, false
	}
	c.tailN += n
	br = readers.Get().(*bufio.Reader)
	c.tr = tailReader{c: c}
	br.Reset(&c.tr)
	br.Peek(c.tailN) // reads the tail alone: it is all there
	body := c.rest
	body.br = br
	switch body.drainBuffered() {
	case drainDone:
		c.late, c.rest, c.tailN = false, Body{}, 0
		if br.Buffered() == 0 {
			return br, false
		}
		// Sent more than its answer: closed, as put closes one.
	case drainMore:
		left, _ := br.Peek(br.Buffered())
		if len(left) < lateTail && time.Since(c.lateAt) < lateFor {
			// Kept as it is now, for a later get.
			c.tailN = copy(c.tail[:], left)
			c.rest, c.rest.br = body, nil
			br.Reset(nil)
			readers.Put(br)
			p.putBack(c)
			return nil, true
		}
		if len(left) >= lateTail {
			c.late, c.rest, c.br, c.x.Body = false, Body{}, br, body
			go p.drainLate(c, &c.x.Body)
			return nil, false
		}
	}
	br.Reset(nil)
	readers.Put(br)
	c.nc.Close()
	return nil, false
}

// lateFor bounds how long a late connection waits in the pool for the end
// of its answer, as drainLate reads one for at most 5 s.
const lateFor = 5 * time.Second

// putBack puts c, idle, at the bottom of the pool: the last to be taken.
func (p *Conns) putBack(c *conn) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdle {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle = slices.Insert(p.idle, 0, c)
	p.mu.Unlock()
}

// noStop is the stop of an exchange whose context never ends.
func noStop() bool { return true }

var errHead = errors.New("malformed HTTP answer")

// readHead reads the status line and the headers the wire client uses
// into r.
func readHead(br *bufio.Reader, r *Exchange) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		// HTTP/1.x NNN text
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return errHead
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 {
			return errHead
		}
		r.Status, r.StatusText, r.ContentType, r.close = status, statusText(bytes.TrimSpace(line[9:])), "", false
		if bytes.HasPrefix(line, []byte("HTTP/1.0")) {
			r.close = true
		}
		length, chunked := int64(-1), false
		for {
			line, err := readLine(br)
			if err != nil {
				return err
			}
			if len(line) == 0 {
				break
			}
			k, v, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return errHead
			}
			v = bytes.TrimSpace(v)
			switch {
			case asciiEqualFold(k, "content-type"):
				r.ContentType = contentType(v)
			case asciiEqualFold(k, "content-length"):
				n, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || n < 0 {
					return errHead
				}
				length = n
			case asciiEqualFold(k, "transfer-encoding"):
				if !asciiEqualFold(v, "chunked") {
					return errHead // no other coding was asked for
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
		r.Body = Body{br: br}
		switch {
		case status == 204 || status == 304:
			r.Body.eof = true
		case chunked:
			r.Body.chunked = true
		case length >= 0:
			r.Body.left = length
			r.Body.eof = length == 0
		default:
			r.Body.left = -1 // to the close
			r.close = true
		}
		return nil
	}
}

// statusText is v as a string, without a copy for a success.
func statusText(v []byte) string {
	if string(v) == "200 OK" {
		return "200 OK"
	}
	return string(v)
}

// contentType is v as a string, without a copy for the two an MCP
// server answers with.
func contentType(v []byte) string {
	switch string(v) {
	case "text/event-stream":
		return "text/event-stream"
	case "application/json":
		return "application/json"
	}
	return string(v)
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

// Body reads an answer's body with a length, chunked, or to the close.
type Body struct {
	br      *bufio.Reader
	chunked bool
	left    int64 // bytes left in the body (not chunked; -1: to the close) or in the chunk
	inChunk bool  // chunked: a chunk's data was read, its CRLF was not
	eof     bool
}

func (b *Body) Read(p []byte) (int, error) {
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
func (b *Body) nextChunk() error {
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
func (b *Body) drainBuffered() int {
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

type beforeSendKey struct{}

// WithBeforeSend has RoundTrip call f once the exchange's connection is
// ready, just before the request's bytes are written: an error of f is
// RoundTrip's (the connection is closed, nothing was sent). Several gateway
// instances re-check their lease there (internal/cluster): a process paused
// between the lease check at dispatch and this point, taken for dead
// meanwhile, does not send the call when it goes on.
func WithBeforeSend(ctx context.Context, f func(context.Context) error) context.Context {
	return context.WithValue(ctx, beforeSendKey{}, f)
}

// HeldBack is RoundTrip's error when WithBeforeSend's function refused the
// exchange, or when its context ended before any of it was written:
// nothing was sent. Err is that function's error, or the context's.
type HeldBack struct{ Err error }

func (h *HeldBack) Error() string { return h.Err.Error() }
func (h *HeldBack) Unwrap() error { return h.Err }
