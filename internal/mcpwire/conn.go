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
//
// The connection's control is the client's own (its pool, deadlines from
// the context, the late end of an answer, the look at an idle socket);
// the answer is parsed by fasthttp: its ResponseHeader reads the head and
// its reader of the body the body (by length, chunked, or to the close).
// The request is written by hand: its head is the pool's fixed bytes and
// the session's two headers, checked when the pool is made.

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
	"github.com/valyala/fasthttp"
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

	src  source            // br's source
	resp fasthttp.Response // the head of its answer, and fasthttp's reader of the body
}

// lateTail bounds what a late connection keeps of its answer's end: the
// last chunk and its trailer, or what arrives with them. An answer with
// more left is read in the background at its release.
const lateTail = 64

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
			c.src = source{c: c}
			c.br.Reset(&c.src)
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
	c := &conn{nc: nc, br: br}
	c.src = source{c: c}
	br.Reset(&c.src)
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
	resp        *fasthttp.Response

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
	p.writeRequest(head, s, body)
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
	*x = Exchange{pool: p, c: c, stop: stop, deadline: deadline, resp: &c.resp}
	if err := readHead(c.br, x); err != nil {
		stop()
		c.nc.Close()
		return nil, err
	}
	x.Body.src = &c.src
	return x, nil
}

// writeRequest writes the POST of body on session s to head: written by
// hand, as fasthttp's Request.Write costs six times as much for the same
// bytes (BenchmarkRequestWrite), and nothing in it is parsed: the pool's
// headers were checked when it was made.
func (p *Conns) writeRequest(head *bytes.Buffer, s Session, body []byte) {
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
		if k := c.br.Buffered(); c.probe != nil && k <= lateTail/2 && resp.Body.boundary {
			// The rest (an SSE answer's last chunk, mostly) is read by
			// the next get, which finds it arrived: no goroutine to wake
			// for it on every call. Only between two chunks, where a new
			// reader of the body goes on as this one would: a body with
			// bytes of its data to come (a Content-Length one read in
			// part, a chunk cut short) has more left than a tail holds.
			b, _ := c.br.Peek(k)
			c.tailN = copy(c.tail[:], b)
			c.rest = resp.Body
			c.rest.dropStream()
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
	c.src = source{c: c}
	br.Reset(&c.src)
	br.Peek(c.tailN) // reads the tail alone: it is all there
	body := c.rest
	body.br, body.src = br, &c.src
	if err := c.resp.ReadBody(br, 0); err != nil { // a new reader of the body, between two chunks as the last one was
		c.nc.Close()
		return nil, false
	}
	body.s = c.resp.BodyStream()
	switch body.drainBuffered() {
	case drainDone:
		c.late, c.rest, c.tailN = false, Body{}, 0
		if br.Buffered() == 0 {
			return br, false
		}
		// Sent more than its answer: closed, as put closes one.
	case drainMore:
		left, _ := br.Peek(br.Buffered())
		if len(left) < lateTail && body.boundary && time.Since(c.lateAt) < lateFor {
			// Kept as it is now, for a later get.
			c.tailN = copy(c.tail[:], left)
			c.rest = body
			c.rest.dropStream()
			br.Reset(nil)
			readers.Put(br)
			p.putBack(c)
			return nil, true
		}
		if len(left) >= lateTail || !body.boundary && time.Since(c.lateAt) < lateFor {
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

// errHead is the error of an answer the client refuses: one fasthttp's
// parser refuses, or one it takes and the client does not from an
// upstream (a line ended by a bare LF, a Content-Length beside a chunked
// coding, a head longer than the reader, endless interim answers).
var errHead = errors.New("malformed HTTP answer")

// maxInterim bounds the interim (1xx) answers read before the answer.
const maxInterim = 16

// headError is errHead with fasthttp's reason, without the copy of the
// head its message carries.
func headError(why error) error {
	return fmt.Errorf("%w from the upstream: %s", errHead, reason(why))
}

// reason is fasthttp's error without the copy of the upstream's bytes its
// message carries (a head's, a trailer's), which an error of a call does
// not quote.
func reason(why error) string {
	s := why.Error()
	if i := strings.Index(s, ": buffer size="); i >= 0 {
		s = s[:i]
	}
	return strings.TrimPrefix(s, "error when reading response headers: ")
}

// readHead reads the status line and the headers into r with fasthttp's
// parser (interim answers skipped), and starts r.Body on fasthttp's
// reader of the body: by its length, chunked, or to the close.
func readHead(br *bufio.Reader, r *Exchange) error {
	if r.resp == nil {
		r.resp = new(fasthttp.Response)
	}
	resp := r.resp
	resp.ResetBody() // the last answer's stream, if left open
	resp.StreamBody = true
	for interim := 0; ; interim++ {
		if interim > maxInterim {
			return fmt.Errorf("%w from the upstream: more than %d interim (1xx) answers", errHead, maxInterim)
		}
		head, err := peekHead(br)
		if err != nil {
			return err
		}
		if err := resp.Header.Read(br); err != nil {
			return headError(err)
		}
		status := resp.Header.StatusCode()
		if !bytes.HasPrefix(head, []byte("HTTP/1.")) || len(head) < 9 || head[7] != '0' && head[7] != '1' || head[8] != ' ' {
			// fasthttp skips empty lines before the status line and takes
			// any version (HTTP/0.0, HTTP/2.0), as net/http does not.
			return fmt.Errorf("%w from the upstream: its status line is not HTTP/1.0 or HTTP/1.1", errHead)
		}
		if i := bytes.IndexByte(head, ' '); i < 0 || i+1 >= len(head) || head[i+1] < '1' || head[i+1] > '9' {
			// fasthttp reads a status of 0 as 200.
			return fmt.Errorf("%w from the upstream: its status line has no status from 100 to 999", errHead)
		}
		if status < 200 {
			continue // 100 Continue and other interim answers
		}
		length := resp.Header.ContentLength() // -1 chunked, -2 to the close
		if !resp.Header.IsHTTP11() && hasField(head, "transfer-encoding") {
			// RFC 9112 6.1: faulty framing. fasthttp would read the body
			// to the close, its chunk sizes as data, of a connection the
			// upstream may keep open until the call's deadline.
			return fmt.Errorf("%w from the upstream: a Transfer-Encoding in an HTTP/1.0 answer", errHead)
		}
		if length == -1 && hasField(head, "content-length") {
			// RFC 9112 6.3: a smuggling attempt as likely as a mistake.
			return fmt.Errorf("%w from the upstream: both Transfer-Encoding and Content-Length", errHead)
		}
		r.Status, r.StatusText, r.ContentType = status, statusText(status, resp.Header.StatusMessage()), contentType(resp.Header.ContentType())
		r.close = resp.Header.ConnectionClose()
		r.Body = Body{br: br, resp: resp}
		if status == 204 || status == 304 || length == 0 {
			r.Body.eof = true
			return nil
		}
		if err := resp.ReadBody(br, 0); err != nil {
			return headError(err)
		}
		r.Body.s = resp.BodyStream()
		r.Body.chunked = length == -1
		if length == -2 {
			r.Body.toClose, r.close = true, true
		}
		return nil
	}
}

// peekHead waits until a whole head (up to its blank line) is in br and
// returns it, unread. A head with a line ended by a bare LF is refused
// here: fasthttp's parser would wait for a CRLF that is not coming. So is
// one with a bare CR, which some read as a line's end and others not.
func peekHead(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; {
		if _, err := br.Peek(n); err != nil {
			if err == bufio.ErrBufferFull {
				return nil, fmt.Errorf("%w from the upstream: a head longer than %d bytes", errHead, br.Size())
			}
			if n > 1 && err == io.EOF {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		b, _ := br.Peek(br.Buffered())
		end := bytes.Index(b, []byte("\r\n\r\n"))
		h := b
		if end >= 0 {
			h = b[:end+4]
		} else if h[len(h)-1] == '\r' {
			h = h[:len(h)-1] // its LF to come
		}
		// Every LF after a CR and every CR before an LF: as many of
		// each as of CRLF.
		if crlf := bytes.Count(h, []byte("\r\n")); crlf != bytes.Count(h, []byte("\n")) {
			return nil, fmt.Errorf("%w from the upstream: a line of its head ends in a bare LF", errHead)
		} else if crlf != bytes.Count(h, []byte("\r")) {
			return nil, fmt.Errorf("%w from the upstream: its head has a bare CR", errHead)
		}
		if end >= 0 {
			return h, nil
		}
		n = len(b) + 1
	}
}

// hasField reports whether head has a field named name, spaces or tabs
// before its colon or not: fasthttp reads "Transfer-Encoding :" as the
// field, and a proxy on the way must (RFC 9112 5.1).
func hasField(head []byte, name string) bool {
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			return false
		}
		head = head[i+1:]
		if len(head) <= len(name) || !asciiEqualFold(head[:len(name)], name) {
			continue
		}
		rest := bytes.TrimLeft(head[len(name):], " \t")
		if len(rest) > 0 && rest[0] == ':' {
			return true
		}
	}
	return false
}

// statusText is the status and its text, without a copy for a success.
func statusText(status int, text []byte) string {
	if status == 200 && string(text) == "OK" {
		return "200 OK"
	}
	if len(text) == 0 {
		return strconv.Itoa(status)
	}
	return strconv.Itoa(status) + " " + string(text)
}

// contentType is v as a string, without a copy for the two an MCP
// server answers with (and fasthttp's default when none was sent).
func contentType(v []byte) string {
	switch string(v) {
	case "text/event-stream":
		return "text/event-stream"
	case "application/json":
		return "application/json"
	case "text/plain; charset=utf-8":
		return "text/plain; charset=utf-8"
	}
	return string(v)
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

// errWouldBlock is a source's answer while a drain looks only at what has
// arrived.
var errWouldBlock = errors.New("nothing more has arrived")

// source is what a connection's reader reads: the tail of its last answer
// kept while it was late (tail[off:tailN]), then its socket; while a drain
// looks without waiting (nowait), nothing past the tail.
type source struct {
	c      *conn
	off    int
	nowait bool
	hit    bool  // asked for more while nowait
	err    error // the socket's last error
}

func (s *source) Read(p []byte) (int, error) {
	c := s.c
	if s.off < c.tailN {
		n := copy(p, c.tail[s.off:c.tailN])
		s.off += n
		return n, nil
	}
	if s.nowait {
		s.hit = true
		return 0, errWouldBlock
	}
	n, err := c.nc.Read(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// Body reads an answer's body through fasthttp's reader of it (by its
// length, chunked, or to the close).
type Body struct {
	br       *bufio.Reader
	s        io.Reader          // fasthttp's stream of the body; nil at its end
	resp     *fasthttp.Response // whose stream s is
	src      *source            // br's source when it is a connection's
	chunked  bool
	toClose  bool  // read to the close
	boundary bool  // chunked, between two chunks (as drainBuffered left it): a new stream goes on from here
	eof      bool  // read to its end
	err      error // the error that ended it
}

func (b *Body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.s.Read(p)
	switch err {
	case nil:
		return n, nil
	case io.EOF:
		b.end()
		if n > 0 {
			return n, nil
		}
		return 0, io.EOF
	}
	b.fail(err)
	return n, b.err
}

// dropStream gives fasthttp back its reader of the body, and br to
// readers: the body is kept, between two chunks, for a new reader to go
// on with (see takeLate).
func (b *Body) dropStream() {
	b.s, b.br, b.src = nil, nil, nil
	if b.resp != nil {
		b.resp.ResetBody() // the stream and fasthttp's body buffer back to their pools: an idle connection holds neither
	}
}

// end marks the body read and gives fasthttp back its stream.
func (b *Body) end() {
	b.eof, b.s = true, nil
	if b.resp != nil {
		b.resp.ResetBody() // as dropStream
	}
}

// fail keeps the error that ended the body: the socket's (a deadline, a
// reset, its close before the end), or the body's framing refused.
func (b *Body) fail(err error) {
	switch {
	case b.src != nil && b.src.err != nil:
		err = b.src.err
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	case err == io.ErrUnexpectedEOF:
	case b.src == nil && errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	default:
		err = fmt.Errorf("%w from the upstream: its body: %s", errHead, reason(err))
	}
	b.err = err
}

const (
	drainDone = iota // the body was read to its end
	drainMore        // the rest has not arrived yet
	drainNo          // the body cannot be drained (to the close, too much, or malformed)
)

// drainBuffered reads what is left of the body from what has already
// arrived, without blocking: fasthttp's reader reads from br, whose source
// says nothing more has arrived. A chunk's size line or the trailer cut
// short leaves fasthttp's reader between two chunks, as it was, and br as
// it was (restored), so that the body can go on when the rest arrives.
func (b *Body) drainBuffered() int {
	if b.eof {
		return drainDone
	}
	if b.err != nil || b.toClose {
		return drainNo
	}
	if b.src != nil {
		b.src.nowait, b.src.hit = true, false
	}
	r := b.drain()
	if b.src != nil {
		b.src.nowait = false
	}
	return r
}

// drainScratch holds the buffers drain reads the rest of a body into and
// throws away: a local array escapes (fasthttp's stream is read through an
// interface), which cost a call 512 bytes on the heap.
var drainScratch = sync.Pool{New: func() any { return new([512]byte) }}

func (b *Body) drain() int {
	scratch := drainScratch.Get().(*[512]byte)
	defer drainScratch.Put(scratch)
	var saved [512]byte
	b.boundary = false
	for n := 0; n <= 64; n++ {
		k := b.br.Buffered()
		if b.chunked {
			// At a chunk's end, fasthttp's reader reads the next size
			// line (and at the last chunk the trailer) on a read of
			// nothing; within a chunk, such a read reads nothing.
			if k > len(saved) {
				k = len(saved) // more than a size line and trailer: should they be cut short, not restorable
			}
			peek, _ := b.br.Peek(k)
			copy(saved[:], peek)
			before := *b.br
			_, err := b.s.Read(scratch[:0])
			if err == io.EOF {
				b.end()
				return drainDone
			}
			if err != nil {
				needMore := b.src != nil && b.src.hit || b.src == nil && b.br.Buffered() == 0
				if !needMore || before.Buffered() > len(saved) {
					b.fail(err)
					return drainNo
				}
				*b.br = before
				peek, _ := b.br.Peek(k)
				copy(peek, saved[:k])
				b.boundary = true
				return drainMore
			}
			// Data of a chunk: read what leaves its CRLF here.
			if k = b.br.Buffered() - 2; k <= 0 {
				return drainMore
			}
		} else if k == 0 {
			if _, err := b.s.Read(scratch[:0]); err == io.EOF {
				b.end()
				return drainDone
			}
			return drainMore
		}
		_, err := b.s.Read(scratch[:min(k, len(scratch))])
		if err == io.EOF {
			b.end()
			return drainDone
		}
		if err != nil {
			b.fail(err)
			return drainNo
		}
	}
	return drainMore
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
