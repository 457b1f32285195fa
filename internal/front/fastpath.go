package front

// The fast tools/call path. The go-sdk decodes every message with a JSON
// decoder that allocates a large buffer per call; through a gateway that
// cost is paid twice more per call (as server and as client) than on a
// direct call. For the one message that matters, tools/call over
// Streamable HTTP, the gateway reads only the fields the guards need and
// writes the answer itself, on both sides:
//
//   - downstream, fastPath answers a POST /mcp that holds a single tools/call
//     request on a session the SDK made (Mcp-Session-Id, protocol versions
//     before 2026-07-28), from a client whose answers need not be streams,
//     with a JSON response, and fastStateless (net/http) and AnswerPost
//     (fasthttp) do the same for the sessionless protocol; everything else — initialize, lists,
//     notifications, batches, calls that ask for progress, clients that
//     sample, elicit or log — goes to the SDK;
//   - upstream, the wire client (internal/upstream) posts tools/call on the
//     SDK client session's id and reads the JSON or SSE answer, relaying
//     progress, log messages, sampling and elicitation in order and
//     answering pings.
//
// Both speak the same protocol as the SDK and fall back to it on anything
// they do not handle.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/strview"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastPath wraps the SDK's stateful /mcp handler. It reads each POST on a
// session once: a single tools/call from a client whose answers need not
// be streams (see streams) is answered by the fast path; a client's
// notifications/cancelled cancels its fast call, or keeps its reason for
// a call through the SDK (cancelReason); everything else goes to the SDK,
// a tools/call marked with its id (headerRPCID).
func (s *Server) fastPath(sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get(mcpwire.HeaderSession)
		if sid == "" {
			if r.Method == http.MethodPost {
				s.newSessions(sdk, w, r)
				return
			}
			sdk.ServeHTTP(w, r)
			return
		}
		ss := s.sessionByID(sid)
		if ss != nil && s.ended(sid) {
			// Its record ended on another instance; the SDK is closing it.
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if ss != nil && s.revivals.Load() != 0 {
			// Made by a take-over that may still be initializing it:
			// the SDK would answer 404, or refuse the request as made
			// during the session's initialization.
			ss = s.awaitTakeOver(sid, ss)
		}
		if ss == nil && s.records != nil {
			// A session this process does not have: one the store
			// recorded is taken over (records.go). Only on a miss.
			if !s.takeOver(sdk, w, r, sid) {
				return
			}
			ss = s.sessionByID(sid)
		}
		// Every method on a session (POST, the GET of its stream, the
		// DELETE that ends it) is its owner's alone. The SDK checks it
		// too (bindSessions); this answers first, in the API's shape, and
		// covers what the gateway answers itself.
		if ss != nil && s.authn != nil && !s.ownsSession(r, ss) {
			notYourSession(w)
			return
		}
		if r.Method == http.MethodDelete {
			s.endOnDelete(sdk, w, r, sid, ss)
			return
		}
		if r.Method != http.MethodPost {
			sdk.ServeHTTP(w, r)
			return
		}
		s.withMessage(sdk, w, r, func(body []byte, msg mcpwire.Message) {
			switch {
			case msg.Method == "tools/call" && mcpwire.RequestID(msg.ID):
				msg.ID = bytes.Clone(msg.ID) // body goes back to its pool
				if st := s.stateOf(ss); s.fastState(st) {
					out := mcpwire.GetBuffer()
					defer mcpwire.PutBuffer(out)
					if ctype, ok := s.fastCall(r.Context(), r.Header, st, sid, &msg, out, true); ok {
						writeAnswer(w, ctype, out.Bytes())
						return
					}
				}
				r.Header.Set(headerRPCID, string(msg.ID))
			case msg.Method == "notifications/cancelled" && len(msg.ID) == 0:
				if key, reason, ok := cancelled(sid, &msg); ok {
					if cancel, ok := s.inflight.Load(key); ok {
						cancel(fmt.Errorf("%w: %s", errClientCancelled, reason))
						w.WriteHeader(http.StatusAccepted)
						return
					}
					if v, ok := s.sdkCalls.Load(key); ok {
						v.(*cancelNote).reason.Store(&reason)
					}
				}
			}
			s.passOn(sdk, w, r, body)
		})
	})
}

// endOnDelete gives a client's DELETE of its session sid (ss; nil when the
// SDK has none) to the SDK and, once the SDK closed it (204), ends the
// session's request at once rather than at the next sweep (SweepClients).
// The session's record goes first.
func (s *Server) endOnDelete(sdk http.Handler, w http.ResponseWriter, r *http.Request, sid string, ss *mcp.ServerSession) {
	if ss != nil && s.records != nil {
		// Gone for good, before the client hears so: no restart, no other
		// instance takes it over. The wake-up of the record's end comes
		// back here too: the SDK ends the session, not EndRecorded, which
		// would close it under the SDK's DELETE and have it answer 404.
		s.forgetHash(hashID(sid), ss)
		if err := s.records.DeleteSession(context.WithoutCancel(r.Context()), hashID(sid)); err != nil {
			s.log.Warn("deleting an ended MCP session's record", "err", err)
		} else {
			crashpoint.Reached("session.deleted")
		}
	}
	sw := &statusWriter{ResponseWriter: w}
	sdk.ServeHTTP(sw, r)
	if ss != nil && sw.status == http.StatusNoContent {
		s.endSession(ss)
	}
}

// statusWriter keeps the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withMessage reads a POST's JSON-RPC message into a pooled buffer and
// calls f with it (the buffer goes back to the pool when f returns): a
// body that could not be read is answered, one the fast path does not
// take (invalid JSON, a batch, not JSON-RPC 2.0) goes to the SDK as it is;
// a request whose number id the SDK would answer under another is refused
// (mcpwire.MangledID).
func (s *Server) withMessage(sdk http.Handler, w http.ResponseWriter, r *http.Request, f func(body []byte, msg mcpwire.Message)) {
	buf := mcpwire.GetBuffer()
	defer mcpwire.PutBuffer(buf)
	body, msg, ok := mcpwire.ReadMessage(w, r, buf)
	switch {
	case body == nil: // answered
	case !ok:
		s.passOn(sdk, w, r, body)
	case mcpwire.MangledID(msg.ID):
		// Refused before anything runs: the SDK would run it and answer
		// under another id, which its client never matches.
		mcpwire.WriteResponse(w, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: mangledIDText})
	default:
		f(body, msg)
	}
}

// mangledIDText refuses a request whose number id would come back changed
// (mcpwire.MangledID), saying what id to send.
const mangledIDText = "reach cannot answer under this id: it would come back changed (an id is read as a 64-bit float). " +
	"Send the request again with a string id or an integer id of at most 2^53."

// Keys of the sessionless protocol's per-request _meta (SEP-2575).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// hasParamHeaders reports whether a request carries Mcp-Param-* headers
// (arguments mirrored into headers), which the SDK checks against the body.
// Headers that can say neither (not net/http's, nor a PrefixedHeaders)
// count as carrying some: the SDK decides.
func hasParamHeaders(h link.Headers) bool {
	const prefix = "Mcp-Param-"
	switch h := h.(type) {
	case http.Header:
		for k := range h {
			if len(k) > len(prefix) && strings.EqualFold(k[:len(prefix)], prefix) {
				return true
			}
		}
		return false
	case PrefixedHeaders:
		return h.Prefixed(prefix)
	}
	return true
}

// PrefixedHeaders are a request's headers that can say whether one's name
// begins with a prefix (in any case, and longer than it): an HTTP server's
// other than net/http's, whose headers are not an http.Header.
type PrefixedHeaders interface {
	link.Headers
	Prefixed(prefix string) bool
}

// fastStateless wraps the SDK's stateless handler with the fast tools/call
// path for the sessionless protocol: a POST the fast path takes
// (statelessHeaders, statelessCall) is answered with JSON here;
// everything else goes to the SDK.
func (s *Server) fastStateless(sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !statelessHeaders(r.Header) {
			sdk.ServeHTTP(w, r) // the SDK answers what is missing
			return
		}
		s.withMessage(sdk, w, r, func(body []byte, msg mcpwire.Message) {
			var p mcpwire.CallParams
			var m callMeta
			if !statelessCall(r.Header, &msg, &p, &m, s.toolName) {
				s.passOn(sdk, w, r, body)
				return
			}
			out := mcpwire.GetBuffer()
			defer mcpwire.PutBuffer(out)
			s.answerStateless(r.Context(), r.Header, msg.ID, p, &m, out)
			writeAnswer(w, ContentTypeJSON, out.Bytes())
		})
	})
}

// statelessHeaders reports whether a sessionless POST's headers are those
// of a tools/call the fast path may answer: JSON, a client that takes JSON
// and streams (the SDK answers what is missing).
func statelessHeaders(h link.Headers) bool {
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") || h.Get("Mcp-Method") != "tools/call" {
		return false
	}
	a := h.Get("Accept")
	return strings.Contains(a, "application/json") && strings.Contains(a, "text/event-stream")
}

// statelessCall reads into p the params of msg (the name from known, when
// it has it), a sessionless POST's message (its headers h passed
// statelessHeaders), and into m their _meta, and reports whether the fast
// path answers it: a single tools/call request without a progress token,
// whose _meta names the same protocol version as its header and the
// client's capabilities, whose Mcp-Name header names its tool, without
// Mcp-Param-* headers. Anything the SDK checks beyond this (headers that
// must match the body, versions, capabilities, a malformed reach _meta) is
// the SDK's to answer, on whichever HTTP server read the request.
func statelessCall(h link.Headers, msg *mcpwire.Message, p *mcpwire.CallParams, m *callMeta, known func([]byte) (string, bool)) bool {
	if msg.Method != "tools/call" || !mcpwire.RequestID(msg.ID) || mcpwire.ParseCallParamsKnown(msg.Params, p, known) != nil || p.Name == "" {
		return false
	}
	m.read(p.RawMeta)
	if m.progress || h.Get(mcpwire.HeaderProtocol) != mcpwire.StatelessProtocol || !stringIs(m.protocol, mcpwire.StatelessProtocol) ||
		h.Get("Mcp-Name") != p.Name || !m.capabilities || hasParamHeaders(h) {
		return false
	}
	_, err := link.FromRawMeta(&m.link)
	return err == nil
}

// answerStateless answers a sessionless client's tools/call id (p, its
// _meta m) into out with JSON. ctx is the request's: it ends when the
// client goes (its only way to cancel a call on this protocol). The
// client's calls share a request (keyed by principal and clientInfo).
func (s *Server) answerStateless(ctx context.Context, h link.Headers, id []byte, p mcpwire.CallParams, m *callMeta, out *bytes.Buffer) {
	name, version := m.client()
	s.fastCalls.Add(1)
	// With authentication the identity is in ctx (bindSessions; AnswerPost).
	who, _ := auth.IdentityFrom(ctx)
	a := getAnswer()
	defer putAnswer(a)
	res, err := s.dispatch(ctx, &toolCall{session: s.clientSession(who, name, version), agent: name, params: p, meta: m.link,
		header: h, answer: a, typed: true})
	if err != nil {
		mcpwire.AppendResponse(out, id, nil, rpcError(err))
		return
	}
	res.Meta[metaServerInfo] = s.serverInfo
	mcpwire.AppendResponse(out, id, mcpwire.CompleteResult{CallToolResult: res}, nil)
}

// callMeta is what the fast lane reads of a tools/call's _meta, from its
// JSON (CallParams.RawMeta) without a map: whether it asks for progress,
// the sessionless protocol's keys, and link's (link.RawMeta). Each is
// what the map encoding/json would make of the same _meta holds: keys as
// they read (escapes decoded), the last of a key given twice.
type callMeta struct {
	link         link.RawMeta
	progress     bool   // a progress token (not null)
	capabilities bool   // the client's capabilities (not null)
	protocol     []byte // the protocol version, as JSON
	clientInfo   []byte // the client's name and version, as JSON
}

// read reads raw, a _meta object or nil, into m.
func (m *callMeta) read(raw []byte) {
	jsonscan.Members(raw, func(k, v []byte) {
		key := memberKey(k)
		switch string(key) {
		case "progressToken":
			m.progress = string(v) != "null"
		case metaProtocolVersion:
			m.protocol = v
		case metaClientCapabilities:
			m.capabilities = string(v) != "null"
		case metaClientInfo:
			m.clientInfo = v
		default:
			m.link.Set(key, v)
		}
	})
}

// client returns the name and version of the client's info, "" for
// either that is not a string (or an info that is not an object).
func (m *callMeta) client() (name, version string) {
	jsonscan.Members(m.clientInfo, func(k, v []byte) {
		switch string(memberKey(k)) {
		case "name":
			name, _ = jsonscan.Unquote(v)
		case "version":
			version, _ = jsonscan.Unquote(v)
		}
	})
	return name, version
}

// memberKey returns what a member's key (a JSON string token, valid)
// reads: a view of it unless it must be decoded.
func memberKey(k []byte) []byte {
	if b, plain := jsonscan.Plain(k); plain {
		return b
	}
	s, _ := jsonscan.Unquote(k)
	return []byte(s)
}

// stringIs reports whether v, JSON, is a string that reads s.
func stringIs(v []byte, s string) bool {
	if b, plain := jsonscan.Plain(v); plain {
		return string(b) == s
	}
	u, ok := jsonscan.Unquote(v)
	return ok && u == s
}

// errClientCancelled is the cause of a call the client cancelled.
var errClientCancelled = errors.New("the client cancelled the call")

// headerRPCID carries a tools/call's JSON-RPC id from fastPath to the SDK's
// handler (RequestExtra.Header), so that a cancellation's reason can be
// matched to the call.
const headerRPCID = "Reach-Internal-Rpc-Id"

// cancelReason gives a call through the SDK a context whose cause, when
// the client cancels it, says so with the client's reason.
func (s *Server) cancelReason(ctx context.Context, ss *mcp.ServerSession, h http.Header) (context.Context, func()) {
	id := h.Get(headerRPCID)
	if ss == nil || ss.ID() == "" || id == "" {
		return ctx, func() {}
	}
	key := ss.ID() + "\x00" + id
	note := &cancelNote{}
	s.sdkCalls.Store(key, note)
	// Not a child of ctx: it ends when ctx does, with the reason as cause.
	parent := context.WithoutCancel(ctx)
	stopDeadline := func() {}
	if d, ok := ctx.Deadline(); ok {
		parent, stopDeadline = context.WithDeadline(parent, d)
	}
	cctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(ctx, func() {
		if r := note.reason.Load(); r != nil {
			cancel(fmt.Errorf("%w: %s", errClientCancelled, *r))
			return
		}
		cancel(context.Cause(ctx))
	})
	return cctx, func() {
		stop()
		cancel(nil)
		stopDeadline()
		s.sdkCalls.CompareAndDelete(key, note)
	}
}

// cancelled reads a notifications/cancelled on session sid: the key of the
// call it cancels (sid, NUL, its JSON-RPC id) and the reason, bounded.
func cancelled(sid string, msg *mcpwire.Message) (key, reason string, ok bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(msg.Params, &p) != nil {
		return "", "", false
	}
	return sid + "\x00" + string(p.RequestID), upstream.ClipText(p.Reason, maxCancelReason, ""), true
}

// cancelNote holds a client's reason for cancelling a call through the SDK.
type cancelNote struct{ reason atomic.Pointer[string] }

// maxCancelReason bounds the reason a client gives, as kept on the frame.
const maxCancelReason = 500

// passOn gives a request whose body was read to the SDK.
func (s *Server) passOn(sdk http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(bytes.Clone(body)))
	r.ContentLength = int64(len(body))
	sdk.ServeHTTP(w, r)
}

// sessionByID finds the SDK's session of an Mcp-Session-Id.
func (s *Server) sessionByID(id string) *mcp.ServerSession {
	if st := s.stateByID(id); st != nil {
		return st.ss
	}
	return nil
}

// stateByID finds the state of the SDK's session of an Mcp-Session-Id:
// one lookup by id, which also names the session.
func (s *Server) stateByID(id string) *session {
	if st, ok := s.byID.Load(id); ok {
		return st
	}
	return s.findSession(id)
}

// findSession looks the SDK's sessions through for id, and keeps the state
// of the one it finds by id. (Apart from stateByID: the loop's body
// captures id, which would then go to the heap on every call.)
func (s *Server) findSession(id string) *session {
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			st := s.sessionFor(ss)              // its end forgets the id (endSession)
			s.byID.Store(strings.Clone(id), st) // id may be a view of the request's header (sessionHeader)
			return st
		}
	}
	return nil
}

// sessionInit is what the fast lane reads of a session's initialize.
type sessionInit struct {
	sessions bool   // a protocol with sessions (before the sessionless one)
	sample   bool   // its client can sample or elicit (upstream.CanSample)
	agent    string // its client's name
}

// fastInit returns what the fast lane reads of st's session's initialize,
// nil before the session has one.
func (st *session) fastInit() *sessionInit {
	if in := st.init.Load(); in != nil {
		return in
	}
	ip := st.ss.InitializeParams()
	if ip == nil {
		return nil
	}
	in := &sessionInit{sessions: ip.ProtocolVersion < mcpwire.StatelessProtocol, sample: upstream.CanSample(st.ss)}
	if ip.ClientInfo != nil {
		in.agent = ip.ClientInfo.Name
	}
	st.init.Store(in)
	return in
}

// stateOf is sessionFor(ss), nil for a nil ss.
func (s *Server) stateOf(ss *mcp.ServerSession) *session {
	if ss == nil {
		return nil
	}
	return s.sessionFor(ss)
}

// fastState reports whether the fast path answers tools/call on the
// session of st: a session the SDK made, on a protocol with sessions,
// whose client needs no answers that are streams (it can neither sample
// nor elicit, and asked for no log messages).
func (s *Server) fastState(st *session) bool {
	if st == nil || st.ss == nil {
		return false
	}
	in := st.fastInit()
	return in != nil && in.sessions && !in.sample && !s.levels.has(st.ss)
}

// Content types of the fast path's answers.
const (
	ContentTypeJSON = "application/json"
	ContentTypeSSE  = "text/event-stream"
)

// AnswerPost answers a POST /mcp that an HTTP server other than net/http
// read (h, its headers; body, its body; ctx, the caller's identity, as
// the auth middleware puts it) when it holds a single tools/call on a
// session the fast path answers, or one of the sessionless protocol that
// fastStateless would answer: it writes the answer to out and returns its
// content type. It reports false, having done nothing, for any other POST
// (a malformed call included), which goes to Handler. For a sessionless
// POST (no Mcp-Session-Id), ctx must end when the client goes, as
// net/http's request's context does: that is how its client cancels.
func (s *Server) AnswerPost(ctx context.Context, h link.Headers, body []byte, out *bytes.Buffer) (contentType string, ok bool) {
	var msg mcpwire.Message
	if !mcpwire.ParseEnvelope(body, &msg) {
		return "", false
	}
	return s.AnswerMessage(ctx, h, body, msg, out)
}

// AnswerMessage is AnswerPost for a body whose envelope the caller read
// (m, as mcpwire.ParseEnvelope reads it; the body need not have been
// checked as JSON): the body is read once more only to check it, not to
// read its envelope again. m's slices stay body's. (m is a value: a
// pointer given through an interface, as the HTTP server calls it, went to
// the heap on every call.)
func (s *Server) AnswerMessage(ctx context.Context, h link.Headers, body []byte, m mcpwire.Message, out *bytes.Buffer) (contentType string, ok bool) {
	msg := &m
	if msg.JSONRPC != "2.0" {
		return "", false
	}
	sid := sessionHeader(h)
	if sid == "" {
		return s.answerSessionless(ctx, h, body, msg, out)
	}
	if msg.Method != "tools/call" || !mcpwire.RequestID(msg.ID) {
		return "", false
	}
	st := s.stateByID(sid)
	if !s.fastState(st) || !s.ownsStateCtx(ctx, st) || !json.Valid(body) {
		return "", false
	}
	return s.fastCall(ctx, h, st, sid, msg, out, false)
}

// A HeaderPeeker gives a header's value without a copy, valid while its
// request is served (the HTTP server's headers, fasthttp's).
type HeaderPeeker interface{ Peek(key string) []byte }

// sessionHeader is h's Mcp-Session-Id: a view of the request's header when
// h can give one, not a string made of it on every call. It is only
// looked up and copied within the call (stateByID, fastCall's in-flight
// key); what keeps it (findSession) keeps a copy.
func sessionHeader(h link.Headers) string {
	if p, ok := h.(HeaderPeeker); ok {
		return strview.Of(p.Peek(mcpwire.HeaderSession))
	}
	return h.Get(mcpwire.HeaderSession)
}

// answerSessionless is AnswerMessage for a POST of the sessionless
// protocol: ctx must end when the client goes, as net/http's request's
// does.
func (s *Server) answerSessionless(ctx context.Context, h link.Headers, body []byte, msg *mcpwire.Message, out *bytes.Buffer) (contentType string, ok bool) {
	if !s.sessionless || !statelessHeaders(h) {
		return "", false
	}
	if _, ok := auth.IdentityFrom(ctx); !ok && s.authn != nil {
		return "", false // bindSessions refuses it
	}
	var p mcpwire.CallParams
	var m callMeta
	if !json.Valid(body) || !statelessCall(h, msg, &p, &m, s.toolName) {
		return "", false
	}
	s.answerStateless(ctx, h, msg.ID, p, &m, out)
	return ContentTypeJSON, true
}

// writeAnswer writes a fast answer: JSON with its length, or an empty
// stream.
func writeAnswer(w http.ResponseWriter, contentType string, body []byte) {
	hd := w.Header()
	if contentType == ContentTypeSSE {
		hd["Content-Type"] = contentTypeSSE
		w.WriteHeader(http.StatusOK)
		return
	}
	hd["Content-Type"] = contentTypeJSON
	hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

var (
	contentTypeJSON = []string{ContentTypeJSON}
	contentTypeSSE  = []string{ContentTypeSSE}
)

// fastCall answers a tools/call on session st (id sid) into out and
// returns the answer's content type: JSON, or an empty stream for a call
// the client cancelled (which gets no response). It reports false, having
// written nothing, for calls the SDK must handle (progress), and, unless
// answerBad, for params it cannot read (which the SDK then refuses).
func (s *Server) fastCall(ctx context.Context, h link.Headers, st *session, sid string, msg *mcpwire.Message, out *bytes.Buffer, answerBad bool) (string, bool) {
	var p mcpwire.CallParams
	if err := mcpwire.ParseCallParamsKnown(msg.Params, &p, s.toolName); err != nil || p.Name == "" {
		if !answerBad {
			return "", false
		}
		m := "tools/call params must be an object with a tool name"
		if errors.Is(err, mcpwire.ErrBadMeta) {
			m = "tools/call params._meta must be an object"
		}
		mcpwire.AppendResponse(out, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m})
		return ContentTypeJSON, true
	}
	var m callMeta
	if m.read(p.RawMeta); m.progress {
		return "", false // progress flows on an SSE answer: the SDK's
	}
	s.fastCalls.Add(1)
	// The call's own context (link's, under its request) is the one a
	// notifications/cancelled ends: dispatch keeps its cancel under key.
	a := getAnswer()
	defer putAnswer(a)
	tc := &toolCall{session: st, ss: st.ss, agent: st.fastInit().agent, params: p, meta: m.link, header: h, inflight: sid + "\x00" + string(msg.ID), answer: a}
	res, err := s.dispatch(ctx, tc)
	if tc.cancelled {
		return ContentTypeSSE, true // a cancelled request gets no response
	}
	if err != nil {
		mcpwire.AppendResponse(out, msg.ID, nil, rpcError(err))
	} else {
		mcpwire.AppendResponse(out, msg.ID, res, nil)
	}
	return ContentTypeJSON, true
}

// rpcError is err as a JSON-RPC error: itself when it is one, else an
// internal error with its text. (Its target is allocated only for an
// error, not on every call.)
func rpcError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}
