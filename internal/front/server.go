// Package front is the gateway's MCP server: the sessions and sessionless
// clients of its downstream MCP clients and the requests their calls run
// in, tools/call dispatched to the runtime through the SDK or on the fast
// path (internal/mcpwire), tools/list filtered per caller, logging levels,
// approval progress, and who owns a session. The upstream pool relays
// upstreams' progress, log messages, sampling and elicitation to the
// client a call came from, which dispatch names (upstream.KeepFor).
//
//	s := front.New(&front.Options{Runtime: rt, Owned: owned, Choices: choices, Tools: catalog, Levels: levels})
//	s.SyncTools()
//	mux.Handle("/mcp", s.Handler())
package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/shape"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/strview"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Server. Runtime, Owned, Choices, Tools and Levels are
// required.
type Options struct {
	Runtime *reach.Runtime
	Owned   *link.Owned        // the requests the clients' calls are placed in
	Choices *link.ModelChoices // the tool call ids the model proxy saw
	// Authn authenticates the clients of the sessions the SDK answers, and
	// binds each Streamable HTTP session to who opened it; nil when nobody
	// authenticates.
	Authn     *auth.Authenticator
	Tools     Tools
	Upstreams Upstreams // nil without upstreams (offline)
	Levels    *Levels   // the logging levels the clients ask for, shared with the upstream pool
	Version   string    // reported to clients
	BodyLimit int64     // bounds a request body over HTTP
	IdleAfter time.Duration
	// Protocols are the MCP protocol versions offered to clients; if
	// empty, every version the SDK speaks. Without the sessionless
	// protocol, a request of it is answered as a server of the session
	// era answers it (it needs a session).
	Protocols []string
	// Records keeps the records of the MCP sessions opened here, so that
	// a restart, or another instance on the same store, takes a session
	// over when its client comes back with its id; nil: sessions live in
	// this process only.
	Records store.Sessions
	// MaxSessions bounds the MCP sessions one principal (of one tenant;
	// the local user without auth) keeps open here, Streamable HTTP
	// sessions and /sse streams together, and its sessionless clients (by
	// clientInfo) kept apart, the others sharing a request; 0 for no
	// bound.
	MaxSessions int
	Logger      *slog.Logger // if nil, logs are discarded
}

// Tools are the tools a client may see in tools/list.
type Tools interface {
	// Visible returns the tools the caller id could call.
	Visible(id *auth.Identity) []reach.Tool
	// Narrows reports whether Visible may leave out tools the server lists
	// (policies decide, or a tool is held): tools/list is then filtered
	// per caller.
	Narrows() bool
}

// Upstreams are what the server passes through to the upstream servers: an
// *upstream.Pool.
type Upstreams interface {
	// Original is the upstream's definition of an exposed tool, nil for
	// one that is no upstream's.
	Original(t reach.Tool) *mcp.Tool
	// SetLevel passes a client's logging level on to the upstream sessions
	// its calls use.
	SetLevel(ctx context.Context, down *mcp.ServerSession, level, shared mcp.LoggingLevel)
	Completes() bool
	Subscribes() bool
	Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error)
	Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error
	Unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error
}

// Server is the gateway's MCP server. Make one with New; its methods are
// safe for concurrent use.
type Server struct {
	rt *reach.Runtime
	// toolName finds a tool call's name among the runtime's tools, for
	// the fast lane to take the registered string, not a copy of the body's.
	toolName   func(name []byte) (string, bool)
	owned      *link.Owned
	choices    *link.ModelChoices
	authn      *auth.Authenticator
	tools      Tools
	ups        Upstreams
	levels     *Levels
	log        *slog.Logger
	bodyLimit  int64
	idleAfter  time.Duration
	mcp        *mcp.Server
	serverInfo *mcp.Implementation // as the server introduces itself
	// sessionless: the sessionless protocol (2026-07-28) is offered.
	sessionless bool

	sessions  sync.Map                       // *mcp.ServerSession or client key -> *session
	clients   sync.Map                       // sessionOwner -> *atomic.Int64: the sessionless clients kept of each
	byID      idMap[*session]                // Mcp-Session-Id -> its session's state (which names the session), for the fast tools/call path
	fastCalls atomic.Int64                   // calls answered by the fast path
	inflight  idMap[context.CancelCauseFunc] // session id + "\x00" + JSON-RPC id -> its cancel, fast calls
	sdkCalls  sync.Map                       // session id + "\x00" + JSON-RPC id -> the client's cancel reason ("" until it cancels), calls through the SDK

	mu     sync.Mutex
	listed map[string]string // tool names listed -> their definition as listed (JSON)

	records     store.Sessions // nil: sessions are not recorded
	maxSessions int            // 0: no bound
	// turnMu is held by a new session's POST until the SDK asks for its
	// id (serveNew), turn is what it asked for.
	turnMu    sync.Mutex
	turn      atomic.Pointer[idTurn]
	reviveMu  sync.Mutex   // one session taken over at a time (takeOver)
	reviving  sync.Map     // session id -> true while takeOver initializes it
	revivals  atomic.Int32 // how many take-overs are initializing a session
	lastSweep atomic.Int64 // when the records were last swept, Unix ns
	countMu   sync.Mutex
	owners    map[string]int // sessionOwner -> its sessions open (claimSession)
	// The recorded sessions by their record's name (EndRecorded), and
	// those whose record ended elsewhere while the SDK closes them.
	byHash  idMap[*mcp.ServerSession]
	ending  idMap[struct{}]
	closing atomic.Int32 // how many are in ending

	// shutMu guards shut (Close ran), each session's ready and streams
	// (the /sse streams open, by the cancel of their context).
	shutMu  sync.Mutex
	shut    bool
	streams map[*sseStream]context.CancelFunc
}

// New returns the server; its tools are the runtime's once SyncTools ran.
func New(opts *Options) *Server {
	s := &Server{rt: opts.Runtime, owned: opts.Owned, choices: opts.Choices, authn: opts.Authn, tools: opts.Tools,
		ups: opts.Upstreams, levels: opts.Levels, log: opts.Logger, bodyLimit: opts.BodyLimit, idleAfter: opts.IdleAfter,
		listed: map[string]string{}, records: opts.Records, maxSessions: opts.MaxSessions}
	if s.rt != nil {
		s.toolName = s.rt.ToolName // made once: a method value is an allocation
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.records != nil && sessionsInStateless(os.Getenv("MCPGODEBUG")) {
		// The SDK's stateless handler then asks GetSessionID for ids too,
		// from requests that hold no turn (records.go): one could be handed
		// the id of a session being taken over, and its client would read
		// it back in Mcp-Session-Id. Sessions stay in their process.
		s.log.Warn("MCP sessions are not taken over after a restart or on another instance while MCPGODEBUG sets allowsessionsinstateless=1")
		s.records = nil
	}
	mo := &mcp.ServerOptions{
		Instructions: "Tools served through Agent-Reach. A refused call explains why and what to do instead; " +
			"follow its suggestion rather than retrying the same call.",
		// logging: reach passes the upstreams' log messages on and sends its
		// own, and takes logging/setLevel (setLoggingLevel); a client that
		// holds a server to its capabilities (the TypeScript SDK's
		// enforceStrictCapabilities) refused to send it without.
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
		Logger:                    s.sdkLogger("mcp"),
		SupportedProtocolVersions: opts.Protocols,
		GetSessionID:              s.nextSessionID,
	}
	s.sessionless = len(opts.Protocols) == 0 || slices.Contains(opts.Protocols, mcpwire.StatelessProtocol)
	if s.ups != nil && s.ups.Completes() {
		mo.CompletionHandler = s.ups.Complete
	}
	if s.ups != nil && s.ups.Subscribes() {
		mo.SubscribeHandler, mo.UnsubscribeHandler = s.ups.Subscribe, s.ups.Unsubscribe
		mo.Capabilities.Resources = &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}
	}
	s.serverInfo = &mcp.Implementation{Name: "reach", Title: "Agent-Reach", Version: opts.Version}
	s.mcp = mcp.NewServer(s.serverInfo, mo)
	s.mcp.AddReceivingMiddleware(s.mcpCalls)
	return s
}

// MCP returns the SDK's server, for transports other than HTTP (stdio) and
// for the upstreams' resources and prompts.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// FastCalls returns how many calls the fast path answered.
func (s *Server) FastCalls() int64 { return s.fastCalls.Load() }

// Handler returns the handler of /mcp: Streamable HTTP, with and without
// sessions, tools/call on the fast path where it can be; and of /sse, the
// HTTP+SSE transport.
func (s *Server) Handler() http.Handler {
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:                       s.sdkLogger("mcp-http"),
		SessionTimeout:               s.idleAfter + time.Minute,
		MaxRequestBodyBytes:          s.bodyLimit,
		PropagateRequestCancellation: true,
	})
	// The sessionless protocol (2026-07-28 and later) needs the SDK's
	// stateless handler; both serve the same server.
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:                       s.sdkLogger("mcp-http"),
		Stateless:                    true,
		MaxRequestBodyBytes:          s.bodyLimit,
		PropagateRequestCancellation: true,
	})
	var sl http.Handler
	if s.sessionless {
		sl = s.fastStateless(stateless)
	}
	mcpHandler := s.bindSessions(byProtocol(sl, s.fastPath(stateful)))
	sse := s.sseHandler()
	return writeDeadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == SSEPath {
			sse.ServeHTTP(w, r)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
}

// streamWriteTimeout bounds each write of an answer on a connection: a
// client that stops reading a stream (a session's GET, /sse) fills the
// connection's buffers, and the SDK's write to it then blocks, holding the
// stream while the server's notifications to every session wait behind it
// (they go to the sessions one after another, and the SDK sets no deadline
// of its own). A write that cannot go out for this long fails, and the
// stream with it. A variable only so that a test can shorten it.
var streamWriteTimeout = 30 * time.Second

// writeDeadlines gives every write (and flush) of an answer the deadline
// streamWriteTimeout ahead. net/http clears it when the request ends. An
// answer that is buffered, not written to a connection (fasthttp's inline
// lane), has no deadline to set and is served as it is.
func writeDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if rc.SetWriteDeadline(time.Time{}) != nil {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc}, r)
	})
}

// deadlineWriter is a ResponseWriter whose writes and flushes each have
// streamWriteTimeout to go out.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) Flush() { w.FlushError() }

// FlushError flushes, within the deadline, and reports a failure (what
// http.ResponseController.Flush calls).
func (w *deadlineWriter) FlushError() error {
	w.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// byProtocol sends the MCP requests of the sessionless protocol (its
// version in the Mcp-Protocol-Version header, no session id) to stateless
// and the rest to stateful (all of them when stateless is nil: the
// sessionless protocol is not offered).
func byProtocol(stateless, stateful http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(headerRPCID) // the gateway's own, never a client's
		if r.Header.Get(mcpwire.HeaderSession) == "" && r.Header.Get(mcpwire.HeaderProtocol) >= mcpwire.StatelessProtocol {
			if stateless == nil {
				// As a server of the session era answers a request without a
				// session: a client that tried the sessionless protocol first
				// falls back to initialize.
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: this server needs a session; send initialize first (it does not offer MCP ` + mcpwire.StatelessProtocol + `)"}}` + "\n"))
				return
			}
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// Close ends every session and its request: the requests first, so that
// the SDK's close of a session does not wait for calls still running in
// them, and again after, for a call that came in meanwhile.
//
// It closes only the sessions whose initialize came in (ready): the SDK
// lists a session before its connect returns, and a close in between
// ends the connection with no session to end (a nil pointer in the SDK's
// disconnect, which crashed the process). A session not ready ends
// otherwise: its initialize, once it comes, is refused (the SDK's
// Streamable HTTP handler then closes the session; an ephemeral one closes
// with its request), and its /sse stream, if it has one, ends here.
func (s *Server) Close() {
	s.shutMu.Lock()
	s.shut = true
	var ready []*mcp.ServerSession
	s.sessions.Range(func(k, v any) bool {
		if ss, ok := k.(*mcp.ServerSession); ok && v.(*session).ready {
			ready = append(ready, ss)
		}
		return true
	})
	streams := s.streams
	s.streams = nil
	s.shutMu.Unlock()
	for _, end := range streams {
		end()
	}
	s.endSessions()
	for _, ss := range ready {
		ss.Close()
	}
	s.endSessions()
}

// errShutdown refuses an initialize that comes in once Close ran.
var errShutdown = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: "the server is shutting down and opens no session; connect again once it is back (or to another instance)"}

// readySession notes that ss is connected (its initialize is being
// handled, so the SDK's connect returned it): Close may close it. Once
// Close ran, it is refused instead (errShutdown).
func (s *Server) readySession(req mcp.Request) error {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return nil
	}
	s.shutMu.Lock()
	defer s.shutMu.Unlock()
	if s.shut {
		return errShutdown
	}
	s.sessionFor(ss).ready = true
	return nil
}

// openStream keeps end, the cancel of an /sse stream's context, for Close
// to end the stream with; false once Close ran.
func (s *Server) openStream(st *sseStream, end context.CancelFunc) bool {
	s.shutMu.Lock()
	defer s.shutMu.Unlock()
	if s.shut {
		return false
	}
	if s.streams == nil {
		s.streams = map[*sseStream]context.CancelFunc{}
	}
	s.streams[st] = end
	return true
}

// closeStream forgets the /sse stream st, ended.
func (s *Server) closeStream(st *sseStream) {
	s.shutMu.Lock()
	delete(s.streams, st)
	s.shutMu.Unlock()
}

// endSessions ends every long-lived session the gateway keeps.
func (s *Server) endSessions() {
	s.sessions.Range(func(k, _ any) bool {
		if ss, ok := k.(*mcp.ServerSession); ok {
			s.endSession(ss)
		}
		return true
	})
}

// mcpCalls answers tools/call itself, through the runtime; every other
// method goes to the SDK.
func (s *Server) mcpCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" {
			if err := s.readySession(req); err != nil {
				return nil, err
			}
			if err := s.opening(ctx, req); err != nil {
				return nil, err
			}
			s.bindSession(req)
			if st, ok := ctx.Value(sseStreamKey{}).(*sseStream); ok {
				st.opened(req.GetSession())
			}
		}
		if method == "tools/call" {
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return s.callTool(ctx, r)
			}
		}
		if method == "logging/setLevel" {
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && r.Params != nil && !slices.Contains(logLevels, r.Params.Level) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("unknown logging level %q; use %s", r.Params.Level, logLevelList)}
			}
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && ss.ID() != "" && method != "initialize" {
			if v, ok := s.sessions.Load(ss); ok {
				v.(*session).use()
			}
		}
		res, err := next(ctx, method, req)
		if method == "initialize" {
			s.opened(ctx, req, res, err)
		}
		if method == "tools/list" && err == nil {
			res = s.filterList(ctx, req, res)
		}
		if method == "logging/setLevel" && err == nil {
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok {
				s.setLoggingLevel(ctx, r.Session, r.Params)
			}
		}
		return res, err
	}
}

var mcpCallSeq atomic.Uint64

// mcpCallPrefix begins the ids of the calls whose client named none: one
// per process, so that two gateway instances never give two calls of one
// request (one on each) the same id, and with it the same idempotency key.
// The count after it has a fixed width (ids.AppendCall): the keys derived
// from the ids follow each other in the store's index.
var mcpCallPrefix = ids.CallPrefix("mcp_")

// session is the state the server keeps per MCP session (or sessionless
// client).
type session struct {
	link.Session // the request its calls run in
	// ss is the SDK's session of a long-lived session's state (sessionFor);
	// nil for a sessionless client's.
	ss *mcp.ServerSession
	// init is what the fast lane reads of ss's initialize, once it has
	// one (fastInit): read once, not under the SDK session's lock at
	// every call. The SDK refuses a second initialize: it never changes.
	init atomic.Pointer[sessionInit]
	// owner is the sessionOwner of who opened a Streamable HTTP session
	// when the gateway authenticates (set at initialize); nil otherwise.
	owner atomic.Pointer[string]

	// The request the session's calls were linked to by the model turns
	// that chose them (link.ModelChoices.Match), which wins when turns of
	// several requests chose the same call; none once they were linked to
	// two requests (several runs share the session) or for a sessionless
	// client.
	linkMu sync.Mutex
	linked string
	mixed  bool

	// reqMeta is the id of the request the session's last call ran in, as
	// the _meta value its answers carry (metaValue): a string made an
	// interface value is an allocation, the same one for every call.
	reqMeta atomic.Pointer[metaString]

	// Of a Streamable HTTP session: its record's name in the store (nil
	// when it has none), whether it was used since the last sweep, how
	// many of its tool calls run, and its owner once counted against the
	// bound (claimSession).
	hash    atomic.Pointer[string]
	used    atomic.Bool
	calls   atomic.Int32
	counted atomic.Pointer[string]
	// ready: the SDK's connect of ss has returned (its initialize is
	// being handled), so that Close may close it (under shutMu).
	ready bool
}

// metaString is a string and the same string as an interface value.
type metaString struct {
	s string
	v any
}

// requestMeta returns id as an interface value, the one kept for the
// session's calls when it is the same id.
func (s *session) requestMeta(id string) any {
	if m := s.reqMeta.Load(); m != nil && m.s == id {
		return m.v
	}
	m := &metaString{s: id, v: id}
	s.reqMeta.Store(m)
	return m.v
}

// preferred is the request a call of the session that several requests'
// model turns chose is linked to: the one its calls were linked to, if
// that is one request.
func (s *session) preferred() string {
	s.linkMu.Lock()
	defer s.linkMu.Unlock()
	if s.mixed {
		return ""
	}
	return s.linked
}

// wasLinked records that a call of the session was linked to request id
// by its model turn.
func (s *session) wasLinked(id string) {
	s.linkMu.Lock()
	defer s.linkMu.Unlock()
	if s.linked != "" && s.linked != id {
		s.mixed = true
	}
	s.linked = id
}

// sessionOf returns the gateway's state for the session a call came in.
// A long-lived session (stdio, in-memory, or Streamable HTTP with a session
// id) is keyed by itself, and its request ends when it closes. Sessionless
// HTTP clients (protocol 2026-07-28 and later, where every POST has a
// session of its own) are keyed by their clientInfo name and version, so that
// one client's calls share a request until it has been idle for the gap.
func (s *Server) sessionOf(req *mcp.CallToolRequest) *session {
	ss := req.Session
	if ss == nil {
		return &session{}
	}
	if ss.ID() == "" && req.Extra != nil && req.Extra.Header != nil {
		var name, version string
		if ci := req.ClientInfo(); ci != nil {
			name, version = ci.Name, ci.Version
		}
		return s.clientSession(s.identityOf(context.Background(), req.Extra.Header), name, version)
	}
	return s.sessionFor(ss)
}

// clientSession returns the state of a sessionless client: its principal
// in its tenant (sessionOwner: alice of one tenant never shares alice of
// another's request) and clientInfo name and version.
func (s *Server) clientSession(id *auth.Identity, name, version string) *session {
	// NUL-separated and bounded: the parts cannot run into each other, and
	// a huge clientInfo is not kept.
	owner := sessionOwner(id)
	key := "client\x00" + owner + "\x00" + upstream.ClipText(name, 128, "") + "\x00" + upstream.ClipText(version, 64, "")
	if v, ok := s.sessions.Load(key); ok {
		return v.(*session)
	}
	n := s.clientCount(owner)
	if s.maxSessions > 0 && n.Load() >= int64(s.maxSessions) {
		// An owner's clients past the bound on its sessions share one
		// request: each would hold a request of its own until the idle
		// gap had passed (a client naming itself anew at each call: 3000
		// calls, 36 MB).
		key = "overflow\x00" + owner
	}
	v, loaded := s.sessions.LoadOrStore(key, &session{Session: *s.owned.NewClient()})
	if !loaded && !strings.HasPrefix(key, "overflow") {
		n.Add(1)
	}
	return v.(*session)
}

// clientCount is the count of owner's sessionless clients kept.
func (s *Server) clientCount(owner string) *atomic.Int64 {
	if v, ok := s.clients.Load(owner); ok {
		return v.(*atomic.Int64)
	}
	v, _ := s.clients.LoadOrStore(owner, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// SweepClients forgets the sessionless clients whose request has ended (or
// that never got one within the idle gap), so that a client inventing a
// new clientInfo for every call does not grow the gateway's memory, and
// ends the long-lived sessions the SDK no longer has (closed by their
// client without a DELETE, or idle past the SDK's timeout) with their
// requests: nothing else waits for those (sessionFor).
func (s *Server) SweepClients() {
	var long []*mcp.ServerSession
	s.sessions.Range(func(k, v any) bool {
		if ss, ok := k.(*mcp.ServerSession); ok {
			long = append(long, ss)
			return true
		}
		if !s.owned.Current(&v.(*session).Session) && s.sessions.CompareAndDelete(k, v) {
			if rest, ok := strings.CutPrefix(k.(string), "client\x00"); ok {
				owner, _, _ := strings.Cut(rest, "\x00") // quoted: no NUL in it
				s.clientCount(owner).Add(-1)
			}
		}
		return true
	})
	defer s.touchSessions(long)
	if len(long) == 0 {
		return
	}
	// The SDK's sessions are listed after the gateway's: a session is the
	// SDK's before any of its calls makes the gateway's state, and never
	// again once dropped, so one kept above and missing below has ended.
	open := map[*mcp.ServerSession]bool{}
	for ss := range s.mcp.Sessions() {
		open[ss] = true
	}
	for _, ss := range long {
		if !open[ss] {
			s.endSession(ss)
		}
	}
}

// sessionFor returns the state of a long-lived session, made on first use.
// No goroutine waits for the session's end (one a session was a tenth of
// the stacks under 64 clients): its request ends when its client deletes
// it (endOnDelete), when the server closes (Close), or at the first sweep
// after the SDK dropped it (SweepClients).
func (s *Server) sessionFor(ss *mcp.ServerSession) *session {
	if v, ok := s.sessions.Load(ss); ok {
		return v.(*session)
	}
	v, _ := s.sessions.LoadOrStore(ss, &session{ss: ss})
	return v.(*session)
}

// endSession forgets a long-lived session and ends its request. A call of
// the session still on its way makes its state again, which the next
// sweep ends.
func (s *Server) endSession(ss *mcp.ServerSession) {
	if id := ss.ID(); id != "" {
		s.byID.Delete(id)
	}
	if v, ok := s.sessions.LoadAndDelete(ss); ok {
		if h := v.(*session).hash.Load(); h != nil {
			s.forgetHash(*h, ss)
		}
		s.uncount(v.(*session))
		s.owned.EndSession(&v.(*session).Session)
	}
}

// callTool runs one MCP tools/call (that came through the SDK) through the
// runtime.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	p := req.Params
	var h http.Header
	if req.Extra != nil {
		h = req.Extra.Header
	}
	if id := s.identityOf(ctx, h); id != nil {
		ctx = auth.WithIdentity(ctx, id)
	}
	c := toolCall{session: s.sessionOf(req), ss: req.Session, progress: p.GetProgressToken(),
		params: mcpwire.CallParams{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta}, typed: typedResults(req)}
	if h != nil {
		c.header = h
	}
	if ci := req.ClientInfo(); ci != nil {
		c.agent = ci.Name
	}
	ctx, done := s.cancelReason(ctx, req.Session, h)
	defer done()
	res, err := s.dispatch(ctx, &c)
	if err != nil || !c.typed {
		return res, err
	}
	return mcpwire.CompleteResult{CallToolResult: res}, nil
}

// typedResults reports whether a call's client speaks a protocol that types
// every result (2026-07-28 and later: "resultType"), by the version its
// _meta names (the sessionless protocol) or its session began with.
func typedResults(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.Meta[metaProtocolVersion].(string); ok {
		return v >= mcpwire.StatelessProtocol
	}
	if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			return ip.ProtocolVersion >= mcpwire.StatelessProtocol
		}
	}
	return false
}

// toolCall is one tools/call as it came in, through the SDK or the fast
// path.
type toolCall struct {
	session  *session           // the client's session (or sessionless client)
	ss       *mcp.ServerSession // the MCP session; nil for a sessionless client's call on the fast path
	agent    string             // the client's name
	params   mcpwire.CallParams // the tool, its arguments and _meta
	meta     link.RawMeta       // link's keys of params.RawMeta, when the fast lane read that (a copy: a pointer would take its reading to the heap)
	header   link.Headers       // the HTTP request's headers, which link a call whose _meta does not
	typed    bool               // the client's protocol types every result (resultType)
	progress any                // the client's progress token; nil when it asked for none
	// inflight is the key (session id, NUL, JSON-RPC id) under which a fast
	// call's cancel is kept while it runs, for the client's
	// notifications/cancelled; "" for other calls. dispatch sets cancelled
	// when the client cancelled it so.
	inflight  string
	cancelled bool
	// answer, if not nil, is where the result is rendered: the caller
	// writes it out before it reuses it (the fast lane's).
	answer *answer
}

// idMap is a map from ids to V, safe for concurrent use. (A sync.Map
// takes its keys as interface values: every lookup of a string key
// allocated one.)
type idMap[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

func (m *idMap[V]) Load(id string) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[id]
	m.mu.RUnlock()
	return v, ok
}

func (m *idMap[V]) Store(id string, v V) {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]V{}
	}
	m.m[id] = v
	m.mu.Unlock()
}

// LoadOrStore stores v under id unless id has a value, and reports
// whether it had.
func (m *idMap[V]) LoadOrStore(id string, v V) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.m[id]; ok {
		return old, true
	}
	if m.m == nil {
		m.m = map[string]V{}
	}
	m.m[id] = v
	return v, false
}

func (m *idMap[V]) Delete(id string) {
	m.mu.Lock()
	delete(m.m, id)
	m.mu.Unlock()
}

// dispatch runs one tools/call through the runtime. A refusal or a tool
// failure is a result with isError and the text the model should read;
// only a malformed _meta is a protocol error. A call whose _meta names no
// request or frame is linked by its HTTP headers (baggage, Reach-Request,
// Reach-Parent, traceparent), as an agent that passes on what reach gave
// it with an A2A message sends them. The scene and the budget of the
// request a call begins are its _meta's, else its headers' (Reach-Scene,
// Reach-Budget, baggage). Progress goes to the client's session under its
// token, when both are set.
func (s *Server) dispatch(ctx context.Context, c *toolCall) (*mcp.CallToolResult, error) {
	if c.session.hash.Load() != nil {
		// A call uses its recorded session from its start to its answer,
		// on the fast path and through the SDK alike: the sweep writes the
		// use while it runs, and an idle end heard from another instance
		// spares it. (A sessionless client's calls, many at once on one
		// state, touch none of it.)
		c.session.use()
		c.session.calls.Add(1)
		defer c.session.calls.Add(-1)
	}
	m, err := c.linkMeta()
	if err != nil {
		return linkRefusal(err)
	}
	if c.header != nil && m.Request == "" && m.Parent == 0 && m.Trace == 0 {
		// A header it would read that is malformed is refused, as the
		// model proxy and A2A refuse it, not passed over: the call would
		// run in a request of its own.
		hl, err := link.FromHeaders(c.header)
		if err != nil {
			return linkRefusal(err)
		}
		m.Request, m.Parent, m.Trace, m.TraceID = hl.Request, hl.Parent, hl.Trace, hl.TraceID
		if m.Budget == nil {
			m.Budget = hl.Budget
		}
		if m.Scene == "" {
			m.Scene = hl.Scene
		}
	} else if c.header != nil && m.Scene == "" {
		// _meta links the call but names no scene: the header's, for the
		// request the call may begin (a new id, a parent's frame).
		if m.Scene, err = link.SceneFromHeaders(c.header); err != nil {
			return linkRefusal(err)
		}
	}
	if c.header != nil && m.Priority == nil {
		// The priority a request begun for the call asks for (R8), read
		// whatever links the call: _meta reach/priority's, else the
		// header's; at most its principal's.
		if m.Priority, err = link.PriorityFromHeaders(c.header); err != nil {
			return linkRefusal(err)
		}
	}
	m.Agent = c.agent
	who, _ := auth.IdentityFrom(ctx)
	m.ModelTurn = s.choices.Turn(m.CallID, m.Request, who)
	if m.ModelTurn == nil && m.Request == "" && m.Parent == 0 && m.CallID == "" {
		// No word of where the call belongs (a framework's MCP client): the
		// model turn that chose this very call, if one did.
		prefer := ""
		if !c.session.IsClient() { // a sessionless client's calls may be many runs'
			prefer = c.session.preferred()
		}
		if f, id := s.choices.Match(c.params.Name, c.params.Arguments, who, prefer); f != nil {
			m.ModelTurn, m.CallID = f, id // the call goes by the id the model gave it
			c.session.wasLinked(f.Request.Root().ID())
		}
	}
	cctx, cancel, r, done, err := s.owned.CancelableCallContext(ctx, m.Target, &c.session.Session)
	if err != nil {
		return linkRefusal(err)
	}
	defer done.Done()
	if c.inflight != "" {
		s.inflight.Store(c.inflight, cancel)
		defer func() {
			s.inflight.Delete(c.inflight)
			c.cancelled = errors.Is(context.Cause(cctx), errClientCancelled)
		}()
	}
	var down *upstream.Caller
	if c.ss != nil {
		down = &upstream.Caller{Session: c.ss, Route: ctx, Progress: c.progress}
	}
	cctx, kept, caller := upstream.KeepFor(cctx, down)
	if c.typed {
		kept.FromSessionless()
	}
	id := m.CallID
	if id == "" {
		var b [40]byte // the prefix (13 bytes) and 16 hex digits fit: one allocation, the string
		id = string(ids.AppendCall(b[:0], mcpCallPrefix, mcpCallSeq.Add(1)))
	}
	if caller != nil && c.progress != nil {
		defer s.approvalProgress(cctx, r, id, caller)()
	}
	res := s.rt.Call(cctx, &reach.Call{ID: id, Tool: c.params.Name, Arguments: c.params.Arguments, Why: m.Why, IdempotencyKey: m.IdempotencyKey})
	out := mcpResult(res, c.session.requestMeta(r.ID()), c.answer)
	// A tool whose results are shaped for the model (its shape: in the
	// configuration, or its own) gives the client reach's rendering of the
	// shaped data; an upstream's other tools what it sent, when reach
	// changed nothing.
	t, ok := s.rt.Tool(c.params.Name)
	if !ok || t.Shape == nil {
		out = kept.Result(res, out)
	}
	if ok && !out.IsError && out.StructuredContent == nil && slices.ContainsFunc(res.Notes, shape.CutToText) && listsOutputSchema(t) {
		// A result cut to text (shape's max_bytes, or the runtime's) is no
		// structured result, which a tool listed with an output schema
		// must give unless it fails: the client would throw it away
		// ("has an output schema but did not return structured content"),
		// reach's note with it. As an error, the model reads the cut text
		// and the note that says how to ask for less; a replay of it too
		// (the note is recorded with it). An upstream's own success
		// without structured content, which reach did not cut (whatever
		// other notes reach adds to it), is passed on as a success, as it
		// came: the client judges it as it would the upstream's.
		out.IsError = true
	}
	return out, nil
}

// linkMeta reads what the call's _meta says to link: from the keys the fast
// lane read, or from the map the SDK made.
func (c *toolCall) linkMeta() (link.Meta, error) {
	if c.params.RawMeta != nil {
		return link.FromRawMeta(&c.meta)
	}
	return link.FromMeta(c.params.Meta)
}

// resultError is what a result's _meta carries of its error, for the
// programs that read it: all but the message and the suggestion, which
// are the result's text already (fault.Error.ModelText). A client that
// gives its model the whole result, _meta included (LlamaIndex TS's agent),
// sent it the text twice: an approval pending, 924 characters for a text
// of 286 (602 without).
// linkRefusal answers a call reach could not place in a request (a
// link.Error): one the model reads (link.Error.Model: a budget it may not
// name, a request not its to work in) as a policy's refusal is, a tool
// result with isError, nothing run; any other as a protocol error, the
// client's to mend, with the error's code and status in its data.
func linkRefusal(err error) (*mcp.CallToolResult, error) {
	le, ok := errors.AsType[*link.Error](err)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if le.Model {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: le.Message + " " + le.Suggestion}},
			Meta: mcp.Meta{link.MetaStatus: string(reach.StatusRefused), link.MetaError: &resultError{Code: le.Code, Type: le.Type}}}, nil
	}
	data, _ := json.Marshal(linkErrorData{Code: le.Code, Status: le.Status})
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error(), Data: data}
}

// linkErrorData is a protocol error's data for a link.Error: its code and
// the HTTP status it would have (429 and 503: try again in a moment).
type linkErrorData struct {
	Code   string `json:"code"`
	Status int    `json:"status"`
}

type resultError struct {
	Code         string             `json:"code"`
	Type         string             `json:"type"`
	Retry        string             `json:"retry,omitempty"`
	RetryAfter   time.Duration      `json:"retry_after,omitempty"`
	Guard        string             `json:"guard,omitempty"`
	Fields       []reach.FieldError `json:"fields,omitempty"`
	Alternatives []string           `json:"alternatives,omitempty"`
	Warning      bool               `json:"warning,omitempty"`
}

func metaError(e *reach.Error) *resultError {
	return &resultError{Code: e.Code, Type: e.Type, Retry: e.Retry, RetryAfter: e.RetryAfter, Guard: e.Guard,
		Fields: e.Fields, Alternatives: e.Alternatives, Warning: e.Warning}
}

// mcpResult renders a reach result as an MCP tool result, in a if it is
// not nil (an answer written out before a is used again); request is the
// request's id (a string).
func mcpResult(res *reach.Result, request any, a *answer) *mcp.CallToolResult {
	status := metaSuccess
	if res.Status != reach.StatusSuccess {
		status = string(res.Status)
	}
	if a == nil {
		a = &answer{}
	}
	a.text.Text = modelText(res)
	a.content[0] = &a.text
	if a.meta == nil {
		a.meta = make(mcp.Meta, 4)
	}
	// The frame id by a pointer into a: written as its 16 hex digits (a
	// TextMarshaler's text, by encoding/json and mcpwire alike), with no
	// string made of it and none boxed (2 allocations a call).
	a.frame = res.Frame
	a.meta[link.MetaRequest], a.meta[link.MetaFrame], a.meta[link.MetaStatus] = request, &a.frame, status
	out := &a.res
	out.Content, out.Meta = a.content[:], a.meta
	if res.Status != reach.StatusSuccess {
		out.IsError = true
		if res.Error != nil {
			out.Meta[link.MetaError] = metaError(res.Error)
		}
		return out
	}
	if res.Fallback != "" {
		out.Meta[link.MetaFallback] = res.Fallback
	}
	if d := bytes.TrimSpace(res.Data); len(d) > 0 && d[0] == '{' {
		out.StructuredContent = json.RawMessage(d)
	}
	if cs := mcpContent(res.Data); cs != nil {
		out.Content = cs
	}
	return out
}

// answer holds an MCP tool result as mcpResult renders it. The fast lane
// writes its answer out before the call returns, so it renders each one
// into a pooled answer (getAnswer, putAnswer): the result, its text block
// and its _meta map are not made anew for every call.
type answer struct {
	res     mcp.CallToolResult
	text    mcp.TextContent
	content [1]mcp.Content
	meta    mcp.Meta
	frame   reach.FrameID // the _meta's frame (a pointer to it)
}

var answers = sync.Pool{New: func() any { return new(answer) }}

func getAnswer() *answer { return answers.Get().(*answer) }

// putAnswer gives a back to the pool, once nothing refers to what it holds.
func putAnswer(a *answer) {
	m := a.meta
	clear(m)
	*a = answer{meta: m}
	answers.Put(a)
}

// metaSuccess is a success's status as a _meta value, made once (a
// string made an interface value is an allocation).
var metaSuccess any = string(reach.StatusSuccess)

// mcpContent returns an upstream's content items when data is one (a JSON
// array of typed content objects with at least one that is not text, as
// resultData keeps images, audio and resources), so that they reach an MCP
// client as they left the upstream; otherwise nil.
func mcpContent(data json.RawMessage) []mcp.Content {
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '[' || !bytes.Contains(d, []byte(`"type"`)) {
		return nil
	}
	var probe []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(d, &probe) != nil || len(probe) == 0 {
		return nil
	}
	nonText := false
	for _, p := range probe {
		switch p.Type {
		case "text":
		case "image", "audio", "resource", "resource_link":
			nonText = true
		default:
			return nil
		}
	}
	if !nonText {
		return nil
	}
	var res mcp.CallToolResult
	if json.Unmarshal(append(append([]byte(`{"content":`), d...), '}'), &res) != nil || len(res.Content) != len(probe) {
		return nil
	}
	return res.Content
}

// plainString reads b when it is exactly one JSON string with nothing to
// unescape (no backslash, control byte or inner quote; valid UTF-8), as
// most tools' text is, without encoding/json; ok is false for anything
// else, which json.Unmarshal then reads. The string is a view of b.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return strview.Of(in), true // a call's result data, which nothing writes to once the call returned
}

// modelText is Result.ModelText with a JSON string's data shown unquoted.
// A success's text without notes is its data's (a view of it, not a copy:
// TestModelTextAllocations).
func modelText(res *reach.Result) string {
	if res.Error == nil && len(res.Data) > 0 && res.Data[0] == '"' {
		if s, ok := plainString(res.Data); ok {
			return withText(s, res)
		}
		if bytes.IndexByte(res.Data, '\\') >= 0 { // a text with escapes: decoded in one pass, not by reflection
			if s, ok := jsonscan.Unquote(res.Data); ok {
				return withText(s, res)
			}
		}
		var s string
		if json.Unmarshal(res.Data, &s) == nil {
			return withText(s, res)
		}
	}
	if res.Error == nil && len(res.Notes) == 0 {
		return strview.Of(res.Data)
	}
	return res.ModelText()
}

// withText is res's model text with s for its data.
func withText(s string, res *reach.Result) string {
	cp := *res
	cp.Data = nil
	return s + cp.ModelText()
}

// SyncTools makes the server's tool list match the runtime's tools. Only a
// tool whose definition changed is put on the server again: each one put
// there tells every client that the list changed, and an upstream's tools
// listed again as they were (as server-everything has them listed again
// each time a client that can sample gets a session of its own) told every
// client so, once for each client that came.
func (s *Server) SyncTools() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := map[string]string{}
	for _, t := range s.rt.Tools() {
		if t.Access == reach.Forbidden {
			continue
		}
		mt := s.mcpTool(t)
		def, err := json.Marshal(mt)
		if err != nil {
			def = nil // never the same: put on the server again
		}
		now[t.Name] = string(def)
		if was, ok := s.listed[t.Name]; ok && def != nil && was == string(def) {
			continue
		}
		s.mcp.AddTool(mt, unreachable)
	}
	var gone []string
	for name := range s.listed {
		if _, ok := now[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	s.listed = now
}

func unreachable(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("reach: tools/call reached the SDK's handler")
}

// mcpTool describes a runtime tool for tools/list. Called with s.mu held.
func (s *Server) mcpTool(t reach.Tool) *mcp.Tool {
	mt := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: objectSchema(t.InputSchema)}
	var orig *mcp.Tool
	if s.ups != nil {
		orig = s.ups.Original(t)
	}
	ann := &mcp.ToolAnnotations{
		ReadOnlyHint:   t.Access == reach.Read,
		IdempotentHint: t.Idempotent,
	}
	if t.Access != reach.Read {
		d := t.Access == reach.HighRisk
		ann.DestructiveHint = &d
	}
	if orig != nil {
		// Within the bounds of what is forwarded (upstream.MaxToolTitle, ...).
		mt.Title = upstream.ClipText(orig.Title, upstream.MaxToolTitle, "")
		if b, err := json.Marshal(orig.Icons); err == nil && len(b) <= upstream.MaxToolSchema {
			mt.Icons = orig.Icons
		}
		if orig.InputSchema != nil && t.InputSchema == nil {
			if b, err := json.Marshal(orig.InputSchema); err == nil && len(b) <= upstream.MaxToolSchema {
				mt.InputSchema = objectSchema(b)
			}
		}
		if a := orig.Annotations; a != nil {
			ann.Title = upstream.ClipText(a.Title, upstream.MaxToolTitle, "")
			ann.OpenWorldHint = a.OpenWorldHint
			ann.IdempotentHint = ann.IdempotentHint || a.IdempotentHint
		}
	}
	mt.Annotations = ann
	if listsOutputSchema(t) {
		mt.OutputSchema = json.RawMessage(t.OutputSchema)
	}
	return mt
}

// listsOutputSchema reports whether t is listed with its output schema.
func listsOutputSchema(t reach.Tool) bool {
	return len(t.OutputSchema) > 0 && json.Valid(t.OutputSchema) && !reshaped(t)
}

// reshaped reports whether t's shape changes the structure of its results
// (it selects fields or flattens), so that the output schema its upstream
// declared no longer describes them: such a tool is listed without one.
// Clients check a result against a listed schema and throw on a mismatch
// (the TypeScript SDK's: "Structured content does not match the tool's
// output schema"), which lost the result and reach's notes with it.
func reshaped(t reach.Tool) bool {
	return t.Shape != nil && (len(t.Shape.Fields) > 0 || t.Shape.Flatten)
}

var anyObject = json.RawMessage(`{"type":"object"}`)

// objectSchema returns s if it is a JSON Schema of an object, else {"type":"object"}.
func objectSchema(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return anyObject
	}
	var probe struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(s, &probe) != nil || probe.Type != "object" {
		return anyObject
	}
	return s
}

// ApprovalEvery is how often a client that asked for progress hears that
// its call still waits for approval (a variable for tests).
var ApprovalEvery = 2 * time.Second

// approvalProgress tells the client, with progress notifications, while its
// call (id, in r) waits for approval (approvals: wait). Call the returned
// func when the call is over.
func (s *Server) approvalProgress(ctx context.Context, r *reach.Request, id string, c *upstream.Caller) func() {
	ctx, cancel := context.WithCancel(ctx)
	every := ApprovalEvery
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		n := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A frame that waits has not ended, so the request keeps it in
			// memory: the frames it let go to the store are not read back.
			kept, _ := r.KeptFrames()
			var waiting *reach.Frame
			for _, f := range slices.Backward(kept) {
				if f.CallID == id {
					if f.State() == reach.AwaitingApproval {
						waiting = f
					}
					break
				}
			}
			if waiting == nil {
				continue
			}
			n++
			msg := fmt.Sprintf("%s waits for approval (reach approvals list, or the UI's approvals)", waiting.Name)
			if e := waiting.Err(); e != nil && e.Message != "" {
				msg = e.Message
			}
			c.Session.NotifyProgress(c.Route, &mcp.ProgressNotificationParams{ProgressToken: c.Progress, Progress: float64(n), Message: msg})
		}
	}()
	return cancel
}

// logLevels orders MCP logging levels from the most verbose.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logLevelList spells logLevels for a message: "debug, info, ... or emergency".
var logLevelList = func() string {
	s := make([]string, len(logLevels))
	for i, l := range logLevels {
		s[i] = string(l)
	}
	return names.List(s, "or")
}()

// setLoggingLevel records a client's logging/setLevel and passes it on to
// the upstream sessions its calls use, so that upstreams send their log
// messages: the client's own sessions get its level (a session made later
// gets it when it is made), shared sessions the most verbose level any
// client asked for. Each client then gets the messages its level lets
// through.
func (s *Server) setLoggingLevel(ctx context.Context, down *mcp.ServerSession, params *mcp.SetLoggingLevelParams) {
	s.levels.set(down, params.Level)
	if s.ups != nil {
		s.ups.SetLevel(ctx, down, params.Level, s.levels.SharedLevel())
	}
}

// Levels are the logging levels the server's clients asked for
// (logging/setLevel), each forgotten when its session ends. The upstream
// pool reads them (upstream.Levels) to pass them on. The zero Levels is
// ready; its methods are safe for concurrent use.
type Levels struct {
	m sync.Map // *mcp.ServerSession -> mcp.LoggingLevel
}

// set records the level of down's client.
func (l *Levels) set(down *mcp.ServerSession, lvl mcp.LoggingLevel) {
	if _, had := l.m.Swap(down, lvl); !had {
		go func() {
			down.Wait()
			l.m.Delete(down)
		}()
	}
}

// Level is the logging level the client of down asked for, if it did.
func (l *Levels) Level(down *mcp.ServerSession) (mcp.LoggingLevel, bool) {
	v, ok := l.m.Load(down)
	if !ok {
		return "", false
	}
	return v.(mcp.LoggingLevel), true
}

// has reports whether the client of ss asked for log messages.
func (l *Levels) has(ss *mcp.ServerSession) bool {
	_, ok := l.m.Load(ss)
	return ok
}

// SharedLevel is the most verbose level a client asked for ("" when none
// did): what shared upstream sessions are set to.
func (l *Levels) SharedLevel() mcp.LoggingLevel {
	var shared mcp.LoggingLevel
	l.m.Range(func(_, v any) bool {
		if lv := v.(mcp.LoggingLevel); shared == "" || slices.Index(logLevels, lv) < slices.Index(logLevels, shared) {
			shared = lv
		}
		return true
	})
	return shared
}

// Clients returns how many sessionless clients the server keeps (see
// SweepClients).
func (s *Server) Clients() int {
	n := 0
	s.sessions.Range(func(k, _ any) bool {
		if _, ok := k.(string); ok {
			n++
		}
		return true
	})
	return n
}
