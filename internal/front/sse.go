package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP+SSE transport of protocol 2024-11-05, which reach offers:
// clients pinned to it (the TypeScript SDK 1.x's SSEClientTransport, an
// agent's "type": "sse") GET /sse for their session's stream and POST to
// the URL its first event names. A session there is one request, as on
// /mcp. Its messages come without their HTTP requests (the SDK queues the
// POSTs' bodies for the stream's session), so a call is placed by its
// _meta, and runs as who opened the stream.

// SSEPath is where the HTTP+SSE transport is served; Handler serves it.
const SSEPath = "/sse"

// resumeID is the id of the initialize reach sends for a client that did
// not (resume); its answer is kept off the stream.
const resumeID = "reach/resume"

// SSEPing is how often reach pings the client of an initialized GET /sse
// stream, and how long it waits for the answer: a client that has answered
// a ping and then does not answer one in time (its process hung, or the
// network dropped without a word, which leaves the connection half-open
// and nothing to read) has its stream ended, which frees its slot among
// sessions_per_principal and ends its session. A client that has answered
// none is not taken for gone (pingSSE). A variable for tests.
var SSEPing = 30 * time.Second

func (s *Server) sseHandler() http.Handler {
	sdk := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.SSEOptions{
		MaxRequestBodyBytes: s.bodyLimit,
	})
	var streams sync.Map // session id of the endpoint -> *sseStream
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := ""
		var who *auth.Identity
		if s.authn != nil {
			id, ok := auth.IdentityFrom(r.Context())
			if !ok {
				auth.Unauthorized(w, auth.ErrNoCredentials)
				return
			}
			owner, who = sessionOwner(id), id
		}
		if r.Method == http.MethodGet {
			s.serveSSEStream(sdk, &streams, owner, who, w, r)
			return
		}
		v, ok := streams.Load(r.URL.Query().Get("sessionid"))
		if !ok {
			sdk.ServeHTTP(w, r) // the SDK answers: no such session
			return
		}
		st := v.(*sseStream)
		// The session's messages run as who opened the stream: another
		// key of the same principal, with other roles or attributes (or
		// the opener's revoked, another of its principal's sent instead),
		// would run its calls with the opener's.
		if st.owner != owner {
			notYourSession(w)
			return
		}
		if !link.SameAuthority(st.who, who) {
			httpjson.WriteError(w, http.StatusForbidden, "other_credentials",
				"This MCP session was opened with credentials of other roles or attributes than these (another key of the principal's, or roles changed since); its calls run as who opened it.",
				"Open a session with these credentials: GET "+SSEPath+" again.")
			return
		}
		if r.Method == http.MethodPost && r.Body != nil {
			limit := s.bodyLimit
			if limit <= 0 {
				limit = mcp.DefaultMaxRequestBodyBytes
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, limit+1)) // the SDK answers one too large
			if err != nil {
				http.Error(w, "failed to read body", http.StatusBadRequest)
				return
			}
			// A number id the SDK would answer as another (1.5 as 1):
			// refused before it runs, as on /mcp (withMessage); its
			// answer would come on the stream under an id its client
			// never matches.
			var msg mcpwire.Message
			if mcpwire.ParseEnvelope(body, &msg) && mcpwire.MangledID(msg.ID) {
				http.Error(w, mangledIDText, http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.resumeSSE(sdk, st, r, body)
		}
		sdk.ServeHTTP(w, r)
	})
}

// sseStreamKey keys the sseStream of a GET /sse in its context, which the
// messages of its session are handled in.
type sseStreamKey struct{}

// sseStream is one GET /sse: who opened it, and its session once its
// client (or reach, resuming it) initialized it.
type sseStream struct {
	owner string         // sessionOwner of who opened it; "" without auth
	who   *auth.Identity // who opened it; nil without auth
	mu    sync.Mutex
	ss    *mcp.ServerSession
	// resume serializes the POSTs' look at init: the client's messages
	// reach the session after the initialize reach sends for it.
	resume sync.Mutex
	init   bool // an initialize was posted
}

func (st *sseStream) opened(s mcp.Session) {
	if ss, ok := s.(*mcp.ServerSession); ok {
		st.mu.Lock()
		st.ss = ss
		st.mu.Unlock()
	}
}

// serveSSEStream serves a GET /sse through the SDK, keeping the stream by
// the session id of the endpoint event the SDK writes first. When the
// stream closes, its session and its request end, with the calls still
// running in it: the client is gone (its process ended, the network
// dropped), and the stream was the only way it could still say so. The
// SDK's close of the session, which runs when the stream ends, waits for
// those calls instead; a Streamable HTTP client's call ends with its POST.
func (s *Server) serveSSEStream(sdk http.Handler, streams *sync.Map, owner string, who *auth.Identity, w http.ResponseWriter, r *http.Request) {
	if !s.claimStream(owner) {
		s.tooManyStreams(w)
		return
	}
	if s.maxSessions > 0 {
		defer s.release(owner)
	}
	ctx, end := context.WithCancel(r.Context())
	defer end()
	st := &sseStream{owner: owner, who: who}
	if !s.openStream(st, end) {
		httpjson.WriteError(w, http.StatusServiceUnavailable, "shutting_down",
			"The server is shutting down and opens no stream.", "Connect again once it is back, or to another instance.")
		return
	}
	defer s.closeStream(st)
	sw := &sseStreamWriter{ResponseWriter: w, st: st, streams: streams}
	defer func() {
		if sw.id != "" {
			streams.Delete(sw.id)
		}
	}()
	go s.pingSSE(ctx, st, end, SSEPing)
	stop := context.AfterFunc(ctx, func() {
		st.mu.Lock()
		ss := st.ss
		st.mu.Unlock()
		if ss != nil {
			s.endSession(ss)
		}
	})
	defer stop()
	sdk.ServeHTTP(sw, r.WithContext(context.WithValue(ctx, sseStreamKey{}, st)))
}

// pingSSE pings the client of a GET /sse stream every interval (SSEPing)
// once it has initialized, and ends the stream (end) when a ping is not
// answered within interval by a client that has answered one before. A
// client that has answered no ping does not implement it (the AI SDK 4's
// MCP client takes a request from the server for an error and answers
// nothing), and is alive as far as reach can tell: its stream used to be
// ended a minute after it connected, and its next tool call failed "Not
// connected". Its stream is kept, and still pinged, until its connection
// closes or fails (a write to a network gone fails once TCP gives up).
func (s *Server) pingSSE(ctx context.Context, st *sseStream, end context.CancelFunc, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	answered, told := false, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st.mu.Lock()
		ss := st.ss
		st.mu.Unlock()
		if ss == nil || ss.InitializeParams() == nil {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := ss.Ping(pctx, nil)
		cancel()
		var rpcErr *jsonrpc.Error
		switch {
		case err == nil || errors.As(err, &rpcErr): // an error answered is an answer
			answered = true
		case ctx.Err() != nil:
			return
		case answered:
			s.log.Info("an SSE client did not answer a ping: its stream is ended", "after", interval, "err", err)
			end()
			return
		case !told:
			told = true
			s.log.Info("an SSE client answers no ping: its stream is kept until its connection ends", "after", interval, "err", err)
		}
	}
}

// resumeSSE initializes the session of a stream whose client posts a
// request other than initialize to it without having initialized it: an
// SSE client whose stream broke (a restart of reach, a network drop)
// reopens it as EventSource does, of itself, and goes on with the new
// endpoint; the TypeScript SDK 1.x does, and a server of that SDK answers.
// Without it, the SDK would refuse every call as made during the session's
// initialization.
func (s *Server) resumeSSE(sdk http.Handler, st *sseStream, r *http.Request, body []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return // a response, or not JSON: the SDK answers
	}
	st.resume.Lock()
	defer st.resume.Unlock()
	if st.init {
		return
	}
	if msg.Method == "initialize" {
		st.init = true
		return
	}
	switch msg.Method {
	case "ping", "server/discover", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return // what the SDK takes before initialize; server/discover is how a newer client probes
	}
	if len(msg.ID) == 0 {
		return // a notification needs no session
	}
	st.init = true
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":"` + resumeID + `","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"","version":""}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		post := r.Clone(r.Context())
		post.Body = io.NopCloser(strings.NewReader(m))
		post.ContentLength = int64(len(m))
		sdk.ServeHTTP(discard{}, post)
	}
}

// discard is a ResponseWriter that keeps nothing: the SDK's 202 to a
// message reach posted itself.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

// sseStreamWriter is a GET /sse's stream: it records the session id of the
// endpoint event, the first the SDK writes, and keeps the answer to a
// resuming initialize (resumeSSE) from the client, which never sent it.
type sseStreamWriter struct {
	http.ResponseWriter
	st      *sseStream
	streams *sync.Map
	id      string
}

// resumeAnswer begins the event of the answer to resumeSSE's initialize.
var resumeAnswer = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":"` + resumeID + `"`)

func (w *sseStreamWriter) Write(p []byte) (int, error) {
	if w.id == "" {
		if _, rest, ok := bytes.Cut(p, []byte("sessionid=")); ok {
			end := bytes.IndexAny(rest, "&\r\n")
			if end < 0 {
				end = len(rest)
			}
			w.id = string(rest[:end])
			w.streams.Store(w.id, w.st)
		}
	}
	if bytes.HasPrefix(p, resumeAnswer) {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on to the stream, which the SDK flushes after each event.
func (w *sseStreamWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the stream.
func (w *sseStreamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
