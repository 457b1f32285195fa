package httpapi

// The server in front of the handler. net/http's server costs a gateway
// call more than anything the gateway does but the upstream's and the
// store's work: a goroutine reading in the background under every request,
// a header map each way, a context per connection and per request (CPU
// profile of `reach serve` under 64 clients, docs/BENCHMARKS.md). fasthttp
// reads every request on the listener instead, and the requests go three
// ways:
//
//   - the fast lane: a POST /mcp holding a single tools/call that the MCP
//     server's fast path answers (Options.Fast) is answered on fasthttp's
//     goroutine, after the checks the handler's middleware makes — and
//     only when each of them lets it through as it is: no Origin or
//     Sec-Fetch-Site header (cross-origin protection), a loopback Host
//     when nobody authenticates, credentials that authenticate when
//     somebody does. Anything else, refusals included, takes another lane,
//     whose handler answers as it always has;
//   - the inline lane: any other POST or DELETE to /mcp that is answered
//     at once (initialize, notifications, lists, responses to the
//     server's requests) runs the whole handler on fasthttp's goroutine,
//     its answer buffered;
//   - net/http: every other request — streams (GET /mcp, tools/call
//     through the SDK), the API, the UI, the model proxy, A2A — hands its
//     connection over to net/http's server, which serves it and the
//     connection's later requests with the handler, exactly as when it
//     served the listener alone.
//
// The sessionless protocol's client cancels a request by closing the
// connection, which net/http sees with a read in the background. Its
// requests take the fast and inline lanes only on a TCP connection, which
// a peek watches while they are served (hangup): anything else is
// net/http's.
//
// The handler is the same in all three; only the fast lane does not run
// it, and it answers nothing the handler would answer otherwise.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/strview"
	"github.com/valyala/fasthttp"
)

// FastMCP answers the POSTs to /mcp that the fast lane takes: an
// *front.Server.
type FastMCP interface {
	// AnswerMessage answers a POST /mcp (its headers, its body and the
	// envelope mcpwire.ParseEnvelope read of it; ctx carries the caller's
	// identity) when it holds a tools/call it takes, writing the answer
	// to out; it reports false, having done nothing, otherwise. (msg is a
	// value: a pointer given through the interface went to the heap on
	// every call.)
	AnswerMessage(ctx context.Context, h link.Headers, body []byte, msg mcpwire.Message, out *bytes.Buffer) (contentType string, ok bool)
}

// Limits of the server, as net/http's were.
const (
	readHeaderTimeout = 10 * time.Second
	readBodyTimeout   = 5 * time.Minute // the most a body may take (a chunked one), whatever its size
	idleTimeout       = 2 * time.Minute
	// maxHeaderBytes bounds a request's line and headers. fasthttp reads
	// them into a buffer of this size that each of its connections keeps:
	// 64 connections at 64 KiB (net/http's limit as the gateway had set it)
	// held 4 MB more than at 16 KiB (docs/BENCHMARKS.md).
	maxHeaderBytes = 16 << 10
)

// A body's time: bodyGrace, then minBodyRate, at most readBodyTimeout.
// A client that trickled a body held its connection and what was read of it
// for 5 minutes on fasthttp's lanes, and with no bound at all on net/http's
// (a connection handed over serves its later requests there). Variables
// only so that a test can shorten them.
var (
	bodyGrace   = 10 * time.Second
	minBodyRate = int64(16 << 10) // bytes a second: 4 MiB in 4.5 minutes
)

// bodyTimeout is how long a body of n bytes (-1: chunked, its length not
// told) may take to arrive, at most max bytes counted.
func bodyTimeout(n, max int64) time.Duration {
	if n < 0 || n > max {
		n = max
	}
	return min(bodyGrace+time.Duration(n)*time.Second/time.Duration(minBodyRate), readBodyTimeout)
}

// bodyTimedOut answers a request whose headers or body did not arrive in
// time, and closes its connection.
func bodyTimedOut(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	httpjson.WriteError(w, http.StatusRequestTimeout, "body_timeout",
		fmt.Sprintf("The request did not arrive in time: its headers may take %s, its body %s and then %d KiB a second.",
			readHeaderTimeout, bodyGrace, minBodyRate>>10),
		"Send the request whole at once, once it is ready; a large body on a slow link as several smaller requests.")
}

// bodyDeadline reads the body of each request net/http serves within
// bodyTimeout before the handler runs (as fasthttp reads its lanes'), and
// answers 408 past it; a request without a body (a GET stream) has no
// deadline. It reads at most max_body_bytes and one more (the handler
// answers 413), or preAuthBody and one more for a request its headers do
// not authenticate (the handler answers 401).
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(bodyTimeout(r.ContentLength, s.maxBody))) != nil {
			next.ServeHTTP(w, r)
			return
		}
		limit := s.maxBody
		if n := r.ContentLength; (n > preAuthBody || n < 0) && limit > preAuthBody {
			// As headerReceived: a request its headers do not
			// authenticate is read no further than preAuthBody before its 401.
			if a := s.api.authn; a != nil && a.Enabled() {
				if _, err := a.Authenticate(r); err != nil {
					limit = preAuthBody
				}
			}
		}
		var read []byte
		var err error
		if n := r.ContentLength; n > 0 && n <= limit {
			read = make([]byte, n) // told: read in one allocation
			var got int
			got, err = io.ReadFull(r.Body, read)
			read = read[:got]
		} else {
			read, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
		}
		if err == nil && int64(len(read)) <= limit {
			// Read to its end. A body read no further than the limit keeps
			// its deadline: net/http reads what the handler left of it
			// (up to 256 KiB) before it answers.
			rc.SetReadDeadline(time.Time{})
		}
		if err != nil {
			if te, ok := err.(interface{ Timeout() bool }); ok && te.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				bodyTimedOut(w)
				return
			}
		}
		rest := io.Reader(r.Body)
		if err != nil {
			rest = errReader{err}
		}
		// On a copy of the request: net/http looks at its own request's
		// Body after the handler to tell how much of it is left, and
		// closes the connection rather than read a large rest; given
		// another Body, it read up to 256 KiB more first, with no deadline:
		// a 401 or 413 waited for bytes a client need never send.
		// net/http also removes the temporary files of the multipart form
		// its own request holds, after the handler: the copy's, which a
		// handler parsed (FormValue does), are removed here.
		cp := r.WithContext(r.Context())
		cp.Body = readCloser{io.MultiReader(bytes.NewReader(read), rest), r.Body}
		next.ServeHTTP(w, cp)
		if cp.MultipartForm != nil && cp.MultipartForm != r.MultipartForm {
			cp.MultipartForm.RemoveAll()
		}
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type readCloser struct {
	io.Reader
	io.Closer
}

// preAuthBody bounds the body of a request whose headers do not
// authenticate it, when somebody authenticates: fasthttp reads a body
// whole before the handler runs, and a client without credentials made
// the gateway hold max_body_bytes for each connection it opened (40
// connections, 160 MB) before any answered 401. Such a request gets its
// 401 once this much of its body is read (the UI's forms, which
// authenticate by a cookie, are smaller).
const preAuthBody = 64 << 10

// Server serves the handler New builds on a listener (see above). Make
// one with NewServer; Serve it once.
type Server struct {
	api     *API
	handler http.Handler // the whole handler
	large   http.Handler // what answers a body over the limit
	fast    FastMCP
	maxBody int64
	base    context.Context

	fh      *fasthttp.Server
	std     *http.Server
	handed  connQueue
	stdOnce sync.Once
	stdErr  chan error

	mu     sync.Mutex
	lns    []net.Listener
	closed bool

	// What each lane served, for tests and benchmarks.
	fastN, inlineN, handedN atomic.Int64
}

// NewServer returns a server of the handler New(opts) makes; requests'
// contexts derive from base. Handler returns that handler.
func NewServer(opts *Options, base context.Context) *Server {
	a := newAPI(opts)
	// A body over the limit is answered after the checks that come before
	// it in the handler, the authentication too.
	var large http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := opts.MaxBody
		if _, ok := auth.IdentityFrom(r.Context()); !ok && a.authn != nil && a.authn.Enabled() {
			limit = min(limit, preAuthBody) // an open path's
		}
		bodyTooLarge(w, r.ContentLength, limit)
	})
	if a.authn != nil {
		large = a.authn.Middleware(large)
	}
	s := &Server{api: a, handler: a.handler, large: a.wrapOuter(large), fast: opts.Fast, maxBody: opts.MaxBody, base: base}
	s.std = &http.Server{
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes - 4<<10, // net/http reads 4 KiB more
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	s.std.Handler = s.bodyDeadline(a.handler)
	s.fh = &fasthttp.Server{
		Handler:                      s.serve,
		ErrorHandler:                 s.serveError,
		HeaderReceived:               s.headerReceived,
		ReadTimeout:                  readHeaderTimeout,
		IdleTimeout:                  idleTimeout,
		ReadBufferSize:               maxHeaderBytes,
		MaxRequestBodySize:           int(min(opts.MaxBody, 1<<30)),
		DisablePreParseMultipartForm: true,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		KeepHijackedConns:            true,
		// An idle keep-alive connection gives its reader (maxHeaderBytes),
		// writer and request context back to their pools until its next
		// request's first byte: a client keeps a connection per concurrent
		// call, and 128 held 3 MB of live heap (TestIdleConnectionHoldsNoBuffers).
		ReduceMemoryUsage: true,
		CloseOnShutdown:   true,
		Logger:            fastLogger{a.log},
	}
	s.handed.ready = make(chan net.Conn)
	s.handed.done = make(chan struct{})
	return s
}

// Handler returns the handler the server serves.
func (s *Server) Handler() http.Handler { return s.handler }

// Served returns how many requests each lane served: the fast lane, the
// inline lane, and those that handed their connection over to net/http
// (not the requests net/http served on them after).
func (s *Server) Served() (fast, inline, handed int64) {
	return s.fastN.Load(), s.inlineN.Load(), s.handedN.Load()
}

// Serve serves on ln until Shutdown or Close; it then returns
// http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.lns = append(s.lns, ln)
	s.stdOnce.Do(func() {
		s.handed.addr = ln.Addr()
		s.stdErr = make(chan error, 1)
		go func() { s.stdErr <- s.std.Serve(&s.handed) }()
	})
	s.mu.Unlock()
	err := s.fh.Serve(ln)
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return http.ErrServerClosed
	}
	return err
}

// Shutdown stops taking requests and waits, until ctx ends, for those in
// flight to finish.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	err := s.fh.ShutdownWithContext(ctx)
	if errors.Is(err, net.ErrClosed) {
		err = nil // a listener stop closed
	}
	s.handed.Close()
	if e := s.std.Shutdown(ctx); err == nil {
		err = e
	}
	return err
}

// Close closes the listener and every connection.
func (s *Server) Close() error {
	s.stop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.fh.ShutdownWithContext(ctx)
	s.handed.Close()
	return s.std.Close()
}

// stop closes the listeners (fasthttp closes those it has begun to serve;
// one Serve was given just now may not be among them yet).
func (s *Server) stop() {
	s.mu.Lock()
	s.closed = true
	lns := s.lns
	s.lns = nil
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
}

// headerReceived is the configuration of a request whose headers fasthttp
// read: the body's time (readBodyTimeout), and its bound, which is
// preAuthBody for a body that may be larger (declared so, or chunked)
// when the headers do not authenticate the request.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	c := fasthttp.RequestConfig{ReadTimeout: bodyTimeout(int64(h.ContentLength()), s.maxBody)}
	if n := h.ContentLength(); (n > preAuthBody || n == -1) && s.maxBody > preAuthBody {
		if a := s.api.authn; a != nil && a.Enabled() {
			if _, err := s.authenticate(h); err != nil {
				c.MaxRequestBodySize = preAuthBody
			}
		}
	}
	return c
}

// authenticate returns the identity a request's headers carry (the
// authentication is on).
func (s *Server) authenticate(rh *fasthttp.RequestHeader) (*auth.Identity, error) {
	r := (&http.Request{Header: http.Header{}}).WithContext(s.base)
	for _, k := range []string{"X-Reach-Key", "Authorization"} {
		if v := rh.Peek(k); len(v) > 0 {
			r.Header[k] = []string{string(v)}
		}
	}
	return s.api.authn.Authenticate(r)
}

// serve is fasthttp's handler: each request to its lane.
func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	rh := &ctx.Request.Header
	if rh.ContentLength() == -1 && sentContentLength(rh.RawHeaders()) {
		twoFramings(ctx)
		return
	}
	if !isMCP(rh.RequestURI()) || len(rh.Peek("Content-Encoding")) > 0 {
		s.handOver(ctx) // an encoded body: net/http's lane refuses it (limitBody)
		return
	}
	switch {
	case ctx.IsPost():
		var msg mcpwire.Message
		body := ctx.PostBody()
		if !mcpwire.ParseEnvelope(body, &msg) {
			s.handOver(ctx) // a batch, not JSON: the SDK answers
			return
		}
		if msg.Method == "tools/call" {
			switch s.answerFast(ctx, body, &msg) {
			case answered:
			case refused:
				s.inline(ctx) // the handler answers the refusal at once
			default:
				s.handOver(ctx) // through the SDK: it may stream
			}
			return
		}
		if !answeredAtOnce(msg.Method) {
			s.handOver(ctx) // it may take long
			return
		}
		if sessionless(rh) {
			s.inlineWatched(ctx)
			return
		}
		s.inline(ctx)
	case ctx.IsDelete():
		s.inline(ctx)
	default:
		s.handOver(ctx)
	}
}

// sessionless reports whether a request to /mcp is of the sessionless
// protocol: its version in the Mcp-Protocol-Version header, no session.
// Its client cancels a request by closing the connection.
func sessionless(rh *fasthttp.RequestHeader) bool {
	v := rh.Peek(mcpwire.HeaderProtocol)
	return len(rh.Peek(mcpwire.HeaderSession)) == 0 && len(v) > 0 && string(v) >= mcpwire.StatelessProtocol
}

// isMCP reports whether a request target is /mcp, with or without a query.
func isMCP(uri []byte) bool {
	path, _, _ := bytes.Cut(uri, []byte("?"))
	return string(path) == "/mcp"
}

// answeredAtOnce reports whether an MCP message to the server is answered
// without a stream that the client needs while it lasts: what a buffered
// answer serves as well. Responses (no method) and notifications are.
func answeredAtOnce(method string) bool {
	switch method {
	case "", "initialize", "server/discover", "ping", "tools/list", "resources/list", "resources/templates/list", "prompts/list",
		"logging/setLevel", "resources/read", "prompts/get", "completion/complete", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return strings.HasPrefix(method, "notifications/")
}

// What answerFast did.
const (
	declined = iota // nothing: the handler serves the request, which may stream
	refused         // nothing: a check refuses the request, which the handler answers at once
	answered
)

// answerFast answers a POST /mcp tools/call (body, its envelope msg) on
// the fast lane. It writes nothing when a check or the MCP server leaves
// the request to the handler.
func (s *Server) answerFast(ctx *fasthttp.RequestCtx, body []byte, msg *mcpwire.Message) (outcome int) {
	if s.fast == nil {
		return declined
	}
	rh := &ctx.Request.Header
	// Cross-origin protection lets a request with neither header through
	// as it is: not a browser's. (With one, the handler decides.)
	if len(rh.Peek("Origin")) > 0 || len(rh.Peek("Sec-Fetch-Site")) > 0 {
		return declined
	}
	c := s.base
	switch a := s.api.authn; {
	case a == nil:
		// The Host is read in place, while the request's bytes stand.
		if !localHost(strview.Of(ctx.Request.Header.Host())) {
			return refused
		}
	case a.Enabled() && !a.Open("/mcp"):
		id, err := s.authenticate(rh)
		if err != nil {
			return refused // the handler answers, and logs, the failure
		}
		key := inFlightKey(id)
		if !s.api.inflight.take(key) {
			return refused // the handler answers past the bound
		}
		defer s.api.inflight.done(key)
		c = auth.WithIdentity(c, id)
	}
	if sessionless(rh) {
		// Its client cancels a call by going: the call's context ends
		// when the connection does, or net/http serves it.
		hc, h, ok := watchHangup(c, ctx.Conn())
		if !ok {
			return declined
		}
		defer h.stop()
		c = hc
	}
	out := mcpwire.GetBuffer()
	defer mcpwire.PutBuffer(out)
	defer func() {
		if v := recover(); v != nil {
			s.api.log.Error("panic serving a request", "path", "/mcp", "panic", fmt.Sprint(v))
			ctx.Response.Reset()
			var w bufferedWriter
			internalError(&w)
			w.copyTo(ctx)
			outcome = answered
		}
	}()
	ctype, ok := s.fast.AnswerMessage(c, fastHeaders{rh}, body, *msg, out)
	if !ok {
		return declined
	}
	s.fastN.Add(1)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(ctype)
	ctx.SetBody(out.Bytes())
	return answered
}

// fastHeaders are a request's headers as link.Headers (and
// front.PrefixedHeaders).
type fastHeaders struct{ h *fasthttp.RequestHeader }

func (f fastHeaders) Prefixed(prefix string) bool {
	for k := range f.h.All() {
		if len(k) > len(prefix) && strings.EqualFold(string(k[:len(prefix)]), prefix) {
			return true
		}
	}
	return false
}

func (f fastHeaders) Get(k string) string { return string(f.h.Peek(k)) }

// Peek is k's value without a copy, valid until the request's answer is
// written (front.HeaderPeeker).
func (f fastHeaders) Peek(k string) []byte { return f.h.Peek(k) }

func (f fastHeaders) Values(k string) []string {
	var out []string
	for _, v := range f.h.PeekAll(k) {
		out = append(out, string(v))
	}
	return out
}

// inline runs the handler on a request read by fasthttp, its answer
// buffered.
func (s *Server) inline(ctx *fasthttp.RequestCtx) {
	s.inlineN.Add(1)
	s.runInline(ctx, s.base, s.handler, int64(len(ctx.PostBody())))
}

// inlineWatched is inline for a request whose context must end when its
// client goes (the sessionless protocol's); one whose connection cannot
// be watched goes to net/http.
func (s *Server) inlineWatched(ctx *fasthttp.RequestCtx) {
	c, h, ok := watchHangup(s.base, ctx.Conn())
	if !ok {
		s.handOver(ctx)
		return
	}
	defer h.stop()
	s.inlineN.Add(1)
	s.runInline(ctx, c, s.handler, int64(len(ctx.PostBody())))
}

// sentContentLength reports whether raw request headers hold a
// Content-Length field (fasthttp forgets it when Transfer-Encoding is
// chunked).
func sentContentLength(raw []byte) bool {
	for len(raw) > 0 {
		line, rest, _ := bytes.Cut(raw, []byte("\n"))
		raw = rest
		if k, _, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(bytes.TrimSpace(k), []byte("Content-Length")) {
			return true
		}
	}
	return false
}

// twoFramings refuses a request framed twice, by Content-Length and
// Transfer-Encoding: chunked, and closes its connection (RFC 9112 §6.3).
// The two say different things about where its body ends, which is how a
// request is smuggled past a proxy that reads the other; fasthttp reads
// the chunks and closes the connection after answering, and reach serves
// none of it.
func twoFramings(ctx *fasthttp.RequestCtx) {
	var w bufferedWriter
	httpjson.WriteError(&w, http.StatusBadRequest, "ambiguous_framing",
		"The request has both Content-Length and Transfer-Encoding, so where its body ends is ambiguous; it was not served and the connection is closed.",
		"Send one of them: Content-Length for a body of known length, or Transfer-Encoding: chunked alone.")
	w.copyTo(ctx)
	ctx.SetConnectionClose()
}

// serveError answers what fasthttp refuses before the handler: a body over
// the limit as the handler does (after the checks that come before the
// limit), anything else as fasthttp does.
func (s *Server) serveError(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		if len(ctx.Request.Header.Host()) == 0 {
			// fasthttp forgets the request when a chunked body runs over:
			// no checks to make before, nor a way to know which bound it
			// ran over (preAuthBody, without credentials).
			var w bufferedWriter
			if a := s.api.authn; a != nil && a.Enabled() && s.maxBody > preAuthBody {
				httpjson.WriteError(&w, http.StatusRequestEntityTooLarge, "body_too_large",
					fmt.Sprintf("The request body is larger than %d bytes, or than %d without credentials that authenticate it.", s.maxBody, preAuthBody),
					"Send credentials (Authorization: Bearer rk_... or X-Reach-Key), and fewer or smaller calls per request.")
			} else {
				bodyTooLarge(&w, -1, s.maxBody)
			}
			w.copyTo(ctx)
			return
		}
		s.runInline(ctx, s.base, s.large, int64(ctx.Request.Header.ContentLength()))
		return
	}
	var small *fasthttp.ErrSmallBuffer
	var te interface{ Timeout() bool }
	switch {
	case errors.As(err, &small):
		ctx.Error("431 Request Header Fields Too Large", fasthttp.StatusRequestHeaderFieldsTooLarge)
	case errors.As(err, &te) && te.Timeout():
		var w bufferedWriter
		bodyTimedOut(&w)
		w.copyTo(ctx)
	default:
		ctx.Error("400 Bad Request", fasthttp.StatusBadRequest)
	}
}

// runInline runs h on the request in ctx (a body of length n: -1 when it
// was chunked), its context a child of parent, and copies its buffered
// answer into ctx.
func (s *Server) runInline(ctx *fasthttp.RequestCtx, parent context.Context, h http.Handler, n int64) {
	rh := &ctx.Request.Header
	uri := string(rh.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		ctx.Error("400 Bad Request", fasthttp.StatusBadRequest)
		return
	}
	r := &http.Request{Method: string(rh.Method()), URL: u, RequestURI: uri, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, 16), Host: string(ctx.Request.Header.Host()), RemoteAddr: ctx.RemoteAddr().String(), ContentLength: n}
	if !rh.IsHTTP11() {
		r.Proto, r.ProtoMinor = "HTTP/1.0", 0
	}
	for k, v := range rh.All() {
		key := http.CanonicalHeaderKey(string(k))
		if key == "Host" {
			continue
		}
		r.Header[key] = append(r.Header[key], string(v))
	}
	if body := ctx.PostBody(); len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	} else {
		r.Body = http.NoBody
	}
	c, cancel := context.WithCancel(parent)
	defer cancel()
	var w bufferedWriter
	h.ServeHTTP(&w, r.WithContext(c))
	w.copyTo(ctx)
}

// bufferedWriter is an http.ResponseWriter that keeps the answer for
// fasthttp to write. Flush does nothing: the answer goes out whole.
type bufferedWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *bufferedWriter) WriteHeader(status int) {
	if status < 100 || status > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", status))
	}
	if w.status == 0 && status >= 200 {
		w.status = status
	}
}

func (w *bufferedWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

func (w *bufferedWriter) Flush() {}

// copyTo sets ctx's answer to w's, as net/http would have written it.
func (w *bufferedWriter) copyTo(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(cmpOr(w.status, http.StatusOK))
	typed := false
	for k, vs := range w.h {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Trailer":
			continue // fasthttp frames the body
		case "Connection":
			for _, v := range vs {
				if strings.EqualFold(strings.TrimSpace(v), "close") {
					ctx.SetConnectionClose()
				}
			}
			continue
		case "Content-Type":
			typed = true
		}
		for _, v := range vs {
			ctx.Response.Header.Add(k, v)
		}
	}
	body := w.body.Bytes()
	if !typed && len(body) > 0 {
		ctx.Response.Header.SetContentType(http.DetectContentType(body))
	}
	ctx.SetBody(body)
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// handOver gives the request's connection to net/http's server: the
// request, as fasthttp read it, then whatever follows on the connection.
func (s *Server) handOver(ctx *fasthttp.RequestCtx) {
	s.handedN.Add(1)
	ctx.Request.Header.Del("Expect") // fasthttp answered it
	var head bytes.Buffer
	if _, err := ctx.Request.WriteTo(&head); err != nil {
		ctx.Error("400 Bad Request", fasthttp.StatusBadRequest)
		return
	}
	prefix := head.Bytes()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		s.handed.push(unwrapHijacked(c, prefix))
	})
}

// unwrapHijacked returns the connection fasthttp hijacked, without
// fasthttp's reader: what that reader holds (requests the client sent
// behind this one) is read out and follows prefix. The reader, a buffer
// of maxHeaderBytes, is then garbage, not kept for as long as net/http
// serves the connection (a stream may last hours).
func unwrapHijacked(c net.Conn, prefix []byte) net.Conn {
	u, ok := c.(interface{ UnsafeConn() net.Conn })
	if !ok {
		return &handedConn{Conn: c, prefix: prefix}
	}
	raw := u.UnsafeConn()
	// The reader returns what it holds without reading the connection; once
	// empty, it reads, and the deadline in the past stops it at once.
	if raw.SetReadDeadline(time.Unix(1, 0)) != nil {
		return &handedConn{Conn: c, prefix: prefix}
	}
	buf := make([]byte, 4<<10)
	for {
		n, err := c.Read(buf)
		prefix = append(prefix, buf[:n]...)
		if err != nil {
			var te interface{ Timeout() bool }
			if !errors.As(err, &te) || !te.Timeout() {
				// The connection failed or ended: net/http finds that out.
				return &handedConn{Conn: raw, prefix: prefix, err: err}
			}
			break
		}
	}
	raw.SetReadDeadline(time.Time{})
	return &handedConn{Conn: raw, prefix: prefix}
}

// connQueue is the listener of net/http's server: the connections fasthttp
// handed over.
type connQueue struct {
	ready chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (q *connQueue) push(c net.Conn) {
	select {
	case q.ready <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ready:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr {
	if q.addr == nil {
		return &net.TCPAddr{}
	}
	return q.addr
}

// handedConn is a connection fasthttp handed over: the request it read
// comes first.
type handedConn struct {
	net.Conn
	prefix []byte
	err    error // the connection's, once prefix is read
}

func (c *handedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

// CloseWrite half-closes the TCP connection, as net/http does before it
// closes one whose request it refused.
func (c *handedConn) CloseWrite() error {
	conn := c.Conn
	if u, ok := conn.(interface{ UnsafeConn() net.Conn }); ok {
		conn = u.UnsafeConn()
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// fastLogger is fasthttp's logger: the gateway's, at warning level.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	l.log.Warn(fmt.Sprintf(format, args...), "component", "http")
}

// internalError answers a request whose handler panicked.
func internalError(w http.ResponseWriter) {
	httpjson.WriteError(w, http.StatusInternalServerError, "internal", "The gateway failed while serving this request.",
		"Retry; if it persists, report it with the gateway's log.")
}
