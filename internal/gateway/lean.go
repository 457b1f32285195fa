package gateway

// The lean tools/call path. The go-sdk decodes every message with a JSON
// decoder that allocates a large buffer per call; through a gateway that
// cost is paid twice more per call (as server and as client) than on a
// direct call. For the one message that matters, tools/call over
// Streamable HTTP, the gateway reads only the fields the guards need and
// writes the answer itself, on both sides:
//
//   - downstream, leanMCP answers a POST /mcp that holds a single tools/call
//     request on a session the SDK made (Mcp-Session-Id, protocol versions
//     before 2026-07-28), from a client whose answers need not be streams,
//     with a JSON response, and leanStateless does the same for the
//     sessionless protocol; everything else — initialize, lists,
//     notifications, batches, calls that ask for progress, clients that
//     sample, elicit or log — goes to the SDK;
//   - upstream, callLean posts tools/call on the SDK client session's id and
//     reads the JSON or SSE answer, relaying progress, log messages,
//     sampling and elicitation in order and answering pings.
//
// Both speak the same protocol as the SDK and fall back to it on anything
// they do not handle.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
	// statelessProtocol is the first protocol version without sessions.
	statelessProtocol = "2026-07-28"
	// leanProtocol is the version upstream HTTP sessions ask for, so that
	// the lean client can use them.
	leanProtocol = "2025-11-25"
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// sseReaders holds the readers of upstreams' SSE answers.
var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// rpcMessage is the part of a JSON-RPC message the lean paths read.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// callParams is the part of tools/call params the gateway reads; the
// arguments stay raw until the runtime validates them.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      mcp.Meta        `json:"_meta,omitempty"`
}

// leanMCP wraps the SDK's stateful /mcp handler. It reads each POST on a
// session once: a single tools/call from a client whose answers need not
// be streams (see streams) is answered by the lean path; a client's
// notifications/cancelled cancels its lean call, or keeps its reason for
// a call through the SDK (cancelReason); everything else goes to the SDK,
// a tools/call marked with its id (headerRPCID).
func (g *Gateway) leanMCP(sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get(headerSession)
		if sid != "" && g.authn != nil {
			// Every method on a session (POST, the GET of its stream, the
			// DELETE that ends it) is its owner's alone. The SDK checks it
			// too (bindSessions); this answers first, in the API's shape,
			// and covers what the gateway answers itself.
			if ss := g.sessionByID(sid); ss != nil && !g.ownsSession(r, ss) {
				notYourSession(w)
				return
			}
		}
		if r.Method != http.MethodPost || sid == "" {
			sdk.ServeHTTP(w, r)
			return
		}
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		body, msg, ok := readMessage(w, r, buf)
		if body == nil {
			return // answered
		}
		if !ok {
			g.passOn(sdk, w, r, body)
			return
		}
		ss := g.sessionByID(sid)
		lean := ss != nil && ss.InitializeParams() != nil && ss.InitializeParams().ProtocolVersion < statelessProtocol && !g.streams(ss)
		switch {
		case msg.Method == "tools/call" && requestID(msg.ID):
			msg.ID = bytes.Clone(msg.ID) // body goes back to its pool
			if lean && g.leanCall(w, r, ss, sid, &msg) {
				return
			}
			r.Header.Set(headerRPCID, string(msg.ID))
		case msg.Method == "notifications/cancelled" && len(msg.ID) == 0:
			if key, reason, ok := cancelled(sid, &msg); ok {
				if v, ok := g.inflight.Load(key); ok {
					v.(context.CancelCauseFunc)(fmt.Errorf("%w: %s", errClientCancelled, reason))
					w.WriteHeader(http.StatusAccepted)
					return
				}
				if v, ok := g.sdkCalls.Load(key); ok {
					v.(*cancelNote).reason.Store(&reason)
				}
			}
		}
		g.passOn(sdk, w, r, body)
	})
}

// readMessage reads a request's body into buf and its JSON-RPC envelope.
// body is nil when reading failed (the error is answered); ok is false for
// a body the lean readers do not take (invalid JSON, a batch, not JSON-RPC
// 2.0), which goes to the SDK as it is.
func readMessage(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) (body []byte, msg rpcMessage, ok bool) {
	if !readLeanBody(w, r, buf) {
		return nil, msg, false
	}
	body = buf.Bytes()
	ok = json.Valid(body) && parseEnvelope(body, &msg) && msg.JSONRPC == "2.0"
	return body, msg, ok
}

// readLeanBody reads a request's body into buf, or answers the error and
// reports false.
func readLeanBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) bool {
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit), "Send a smaller message.")
			return false
		}
		writeError(w, http.StatusBadRequest, "bad_body", "Reading the request body failed.", "Send it again.")
		return false
	}
	return true
}

// Keys of the sessionless protocol's per-request _meta (SEP-2575).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// hasParamHeaders reports whether a request carries Mcp-Param-* headers
// (arguments mirrored into headers), which the SDK checks against the body.
func hasParamHeaders(h http.Header) bool {
	for k := range h {
		if len(k) > len("Mcp-Param-") && strings.EqualFold(k[:len("Mcp-Param-")], "Mcp-Param-") {
			return true
		}
	}
	return false
}

// leanStateless wraps the SDK's stateless handler with the lean tools/call
// path for the sessionless protocol: a POST holding a single tools/call
// request (no progress token), whose _meta names the same protocol version
// as its header, is answered with JSON here; everything else goes to the
// SDK. The client's calls share a request as the SDK path's do (keyed by
// principal and clientInfo).
func (g *Gateway) leanStateless(sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
			r.Header.Get("Mcp-Method") != "tools/call" {
			sdk.ServeHTTP(w, r)
			return
		}
		if a := r.Header.Get("Accept"); !strings.Contains(a, "application/json") || !strings.Contains(a, "text/event-stream") {
			sdk.ServeHTTP(w, r) // the SDK answers what is missing
			return
		}
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		body, msg, ok := readMessage(w, r, buf)
		if body == nil {
			return // answered
		}
		var p callParams
		// Anything the SDK checks beyond this (headers that must match the
		// body, versions, capabilities, a malformed reach _meta) is the
		// SDK's to answer.
		if !ok || msg.Method != "tools/call" || !requestID(msg.ID) ||
			parseCallParams(msg.Params, &p) != nil || p.Name == "" || p.Meta["progressToken"] != nil ||
			r.Header.Get(headerProtocol) != statelessProtocol || p.Meta[metaProtocolVersion] != statelessProtocol ||
			r.Header.Get("Mcp-Name") != p.Name || p.Meta[metaClientCapabilities] == nil || hasParamHeaders(r.Header) {
			g.passOn(sdk, w, r, body)
			return
		}
		if _, err := parseCallMeta(p.Meta); err != nil {
			g.passOn(sdk, w, r, body)
			return
		}
		id := bytes.Clone(msg.ID)
		var ci struct{ Name, Version string }
		if m, ok := p.Meta[metaClientInfo].(map[string]any); ok {
			ci.Name, _ = m["name"].(string)
			ci.Version, _ = m["version"].(string)
		}
		g.leanHits.Add(1)
		ctx := r.Context()
		res, err := g.dispatch(ctx, g.clientSession(g.identityOf(ctx, r.Header), ci.Name, ci.Version), nil, ci.Name, p.Name, p.Arguments, p.Meta, r.Header, nil)
		var we *jsonrpc.Error
		switch {
		case errors.As(err, &we):
			writeRPC(w, id, nil, we)
		case err != nil:
			writeRPC(w, id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		default:
			res.Meta[metaServerInfo] = g.serverInfo
			writeRPC(w, id, res, nil)
		}
	})
}

// errClientCancelled is the cause of a call the client cancelled.
var errClientCancelled = errors.New("the client cancelled the call")

// headerRPCID carries a tools/call's JSON-RPC id from leanMCP to the SDK's
// handler (RequestExtra.Header), so that a cancellation's reason can be
// matched to the call.
const headerRPCID = "Reach-Internal-Rpc-Id"

// cancelReason gives a call through the SDK a context whose cause, when
// the client cancels it, says so with the client's reason.
func (g *Gateway) cancelReason(ctx context.Context, ss *mcp.ServerSession, h http.Header) (context.Context, func()) {
	id := h.Get(headerRPCID)
	if ss == nil || ss.ID() == "" || id == "" {
		return ctx, func() {}
	}
	key := ss.ID() + "\x00" + id
	note := &cancelNote{}
	g.sdkCalls.Store(key, note)
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
		g.sdkCalls.CompareAndDelete(key, note)
	}
}

// cancelled reads a notifications/cancelled on session sid: the key of the
// call it cancels (sid, NUL, its JSON-RPC id) and the reason, bounded.
func cancelled(sid string, msg *rpcMessage) (key, reason string, ok bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(msg.Params, &p) != nil {
		return "", "", false
	}
	return sid + "\x00" + string(p.RequestID), clip(p.Reason, maxCancelReason), true
}

// cancelNote holds a client's reason for cancelling a call through the SDK.
type cancelNote struct{ reason atomic.Pointer[string] }

// maxCancelReason bounds the reason a client gives, as kept on the frame.
const maxCancelReason = 500

// passOn gives a request whose body was read to the SDK.
func (g *Gateway) passOn(sdk http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(bytes.Clone(body)))
	r.ContentLength = int64(len(body))
	sdk.ServeHTTP(w, r)
}

// sessionByID finds the SDK's session of an Mcp-Session-Id.
func (g *Gateway) sessionByID(id string) *mcp.ServerSession {
	if v, ok := g.byID.Load(id); ok {
		return v.(*mcp.ServerSession)
	}
	for ss := range g.server.Sessions() {
		if ss.ID() == id {
			g.byID.Store(id, ss)
			g.sessionFor(ss) // forgets the id when the session ends
			return ss
		}
	}
	return nil
}

// leanCall answers a tools/call. It reports false, having written nothing,
// for calls the SDK must handle (progress).
func (g *Gateway) leanCall(w http.ResponseWriter, r *http.Request, ss *mcp.ServerSession, sid string, msg *rpcMessage) bool {
	var p callParams
	if err := parseCallParams(msg.Params, &p); err != nil || p.Name == "" {
		m := "tools/call params must be an object with a tool name"
		if errors.Is(err, errBadMeta) {
			m = "tools/call params._meta must be an object"
		}
		writeRPC(w, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m})
		return true
	}
	if p.Meta["progressToken"] != nil {
		return false // progress flows on an SSE answer: the SDK's
	}
	g.leanHits.Add(1)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	key := sid + "\x00" + string(msg.ID)
	g.inflight.Store(key, cancel)
	defer g.inflight.Delete(key)
	agent := ""
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		agent = ip.ClientInfo.Name
	}
	res, err := g.dispatch(ctx, g.sessionFor(ss), ss, agent, p.Name, p.Arguments, p.Meta, r.Header, nil)
	if errors.Is(context.Cause(ctx), errClientCancelled) {
		// A cancelled request gets no response: its stream ends empty.
		w.Header()["Content-Type"] = contentTypeSSE
		w.WriteHeader(http.StatusOK)
		return true
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		writeRPC(w, msg.ID, nil, we)
		return true
	}
	if err != nil {
		writeRPC(w, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		return true
	}
	writeRPC(w, msg.ID, res, nil)
	return true
}

var (
	contentTypeJSON = []string{"application/json"}
	contentTypeSSE  = []string{"text/event-stream"}
)

// writeRPC writes a JSON-RPC response as an application/json answer.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, rpcErr *jsonrpc.Error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if rpcErr != nil {
		buf.WriteString(`,"error":`)
		b, _ := json.Marshal(rpcErr)
		buf.Write(b)
	} else {
		buf.WriteString(`,"result":`)
		if tr, ok := result.(*mcp.CallToolResult); !ok || !appendToolResult(buf, tr) {
			b, err := json.Marshal(result)
			if err != nil {
				b = []byte(`{"content":[{"type":"text","text":"reach could not encode the result"}],"isError":true}`)
			}
			buf.Write(b)
		}
	}
	buf.WriteString("}\n")
	h := w.Header()
	h["Content-Type"] = contentTypeJSON // shared: net/http copies it when it writes the head
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// leanSession is what the lean client needs of an upstream SDK session.
type leanSession struct {
	cs       *mcp.ClientSession
	id       string
	protocol string
}

// leanOf returns the lean view of cs, or nil when cs cannot be used
// leanly (stdio, no session id, the sessionless protocol).
func (u *upstream) leanOf(cs *mcp.ClientSession) *leanSession {
	if u.cfg.URL == "" || cs.ID() == "" || cs.InitializeResult() == nil {
		return nil
	}
	v := cs.InitializeResult().ProtocolVersion
	if v >= statelessProtocol {
		return nil
	}
	return &leanSession{cs: cs, id: cs.ID(), protocol: v}
}

// errSessionGone says the upstream no longer knows the session (HTTP 404).
var errSessionGone = errors.New("the upstream ended the session")

// callLean calls a tool on the upstream without the SDK's decoder: it
// posts tools/call on the session and reads a JSON or SSE answer. When
// ctx ends it drops the HTTP request and tells the upstream with
// notifications/cancelled.
func (u *upstream) callLean(ctx context.Context, ls *leanSession, name string, args json.RawMessage, meta mcp.Meta, sink *progressSink) (*leanResult, error) {
	id := `"reach-` + strconv.FormatUint(u.tokens.Add(1), 10) + `"`
	var token string
	if sink != nil {
		token = u.cfg.Name + "-" + strconv.FormatUint(u.tokens.Add(1), 10)
		meta["progressToken"] = token
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.WriteString(id)
	buf.WriteString(`,"method":"tools/call","params":{"name":`)
	buf.Write(appendJSONString(buf.AvailableBuffer(), name))
	if len(args) > 0 {
		buf.WriteString(`,"arguments":`)
		buf.Write(args)
	}
	if len(meta) > 0 {
		buf.WriteString(`,"_meta":`)
		buf.Write(appendMeta(buf.AvailableBuffer(), meta))
	}
	buf.WriteString(`}}`)
	if p := u.leanConnsOf(); p != nil && !p.redirected.Load() {
		c, resp, stop, err := p.roundTrip(ctx, ls, buf.Bytes())
		if err != nil {
			return nil, u.leanFailed(ctx, ls, id, "calling", err)
		}
		if !isRedirect(resp.status) {
			res, err := u.leanAnswer(ctx, ls, resp.status, resp.statusText, resp.contentType, &resp.body, id, token, sink)
			p.release(c, resp, stop, ctx.Err() != nil)
			return res, err
		}
		// The endpoint moved (…/mcp to …/mcp/, say): nothing ran. This
		// upstream's calls go through net/http from now on, which follows.
		io.Copy(io.Discard, io.LimitReader(&resp.body, 64<<10))
		p.release(c, resp, stop, ctx.Err() != nil)
		if p.redirected.CompareAndSwap(false, true) {
			u.log.Info("the upstream's endpoint redirects; its calls now follow the redirect through net/http", "upstream", u.cfg.Name, "status", resp.status)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, err
	}
	u.leanHeaders(req, ls)
	resp, err := u.http.Do(req)
	if err != nil {
		return nil, u.leanFailed(ctx, ls, id, "calling", err)
	}
	defer resp.Body.Close()
	return u.leanAnswer(ctx, ls, resp.StatusCode, resp.Status, resp.Header.Get("Content-Type"), resp.Body, id, token, sink)
}

// requestID reports whether id (valid JSON) is a JSON-RPC request id the
// SDK takes: a string or an integer. The lean path leaves anything else
// (null, a fraction, an object) to the SDK, which refuses it.
func requestID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 { // an int64
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isRedirect reports whether an HTTP status sends the request elsewhere.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// leanFailed is the error of a call whose exchange failed: the cause of
// ctx when it ended (and the upstream is told), else unavailable.
func (u *upstream) leanFailed(ctx context.Context, ls *leanSession, id, doing string, err error) error {
	if ctx.Err() != nil {
		u.cancelLean(ls, id, ctx)
		return context.Cause(ctx)
	}
	if doing == "calling" {
		u.reached(err) // the exchange failed: the upstream is not reachable
		return &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("calling upstream %s failed: %v", u.cfg.Name, err)}
	}
	return &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("reading upstream %s's answer failed: %v", u.cfg.Name, err)}
}

// leanAnswer reads an upstream's answer to tools/call id: a JSON or SSE
// body with its response, or an HTTP error.
func (u *upstream) leanAnswer(ctx context.Context, ls *leanSession, status int, statusText, ct string, body io.Reader, id, token string, sink *progressSink) (*leanResult, error) {
	switch {
	case status == http.StatusNotFound:
		io.Copy(io.Discard, io.LimitReader(body, 4096))
		return nil, errSessionGone
	case status != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(body, 512))
		typ := "upstream_error"
		switch {
		case status >= 500 || status == http.StatusTooManyRequests:
			typ = "unavailable"
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			typ = "forbidden" // reach's credentials, not the call's arguments
		}
		if len(statusText) < 3 || statusText[:3] != strconv.Itoa(status) {
			statusText = strconv.Itoa(status) + " " + statusText
		}
		return nil, &reach.ToolError{Type: typ, Message: fmt.Sprintf("upstream %s answered %s: %s", u.cfg.Name, statusText, strings.TrimSpace(string(b)))}
	}
	var msg *rpcMessage
	var err error
	if strings.HasPrefix(ct, "text/event-stream") {
		var cur sseCursor
		msg, err = u.readSSE(ctx, ls, body, id, token, sink, &cur)
		if errors.Is(err, errStreamClosed) {
			msg, err = u.resumeSSE(ctx, ls, &cur, id, token, sink)
		}
	} else {
		msg, err = readJSONAnswer(body)
	}
	if err != nil {
		return nil, u.leanFailed(ctx, ls, id, "reading", err)
	}
	if msg.Error != nil {
		return nil, u.callError(msg.Error)
	}
	var res leanResult
	if err := res.parse(msg.Result); err != nil {
		return nil, &reach.ToolError{Type: "upstream_error", Message: fmt.Sprintf("upstream %s answered tools/call with something else than a tool result", u.cfg.Name)}
	}
	return &res, nil
}

// readJSONAnswer reads an application/json answer.
func readJSONAnswer(body io.Reader) (*rpcMessage, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(io.LimitReader(body, maxUpstreamResult)); err != nil {
		return nil, err
	}
	msg := &rpcMessage{}
	if !parseAnswer(buf.Bytes(), msg) {
		return nil, errors.New("the answer is not a JSON-RPC message")
	}
	return msg, nil
}

// maxUpstreamResult bounds one upstream answer (a variable for tests).
var maxUpstreamResult int64 = 64 << 20

func (u *upstream) leanHeaders(req *http.Request, ls *leanSession) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerSession, ls.id)
	req.Header.Set(headerProtocol, ls.protocol)
}

// readSSE reads an SSE answer until the response to id, passing progress
// on to sink and log messages to the calling client, in the order they
// come, and answering the upstream's requests: pings here, sampling and
// elicitation through the calling client, others refused.
//
// cur follows the stream's event ids and the reconnection delay the
// upstream asks for; a stream that ends before the response, after an
// event with an id, ends with errStreamClosed, and resumeSSE picks it up.
func (u *upstream) readSSE(ctx context.Context, ls *leanSession, body io.Reader, id, token string, sink *progressSink, cur *sseCursor) (*rpcMessage, error) {
	br := sseReaders.Get().(*bufio.Reader)
	limited := &io.LimitedReader{R: body, N: maxUpstreamResult}
	br.Reset(limited)
	data := bufPool.Get().(*bytes.Buffer)
	data.Reset()
	defer func() {
		br.Reset(nil)
		sseReaders.Put(br)
		bufPool.Put(data)
	}()
	var long []byte // a line longer than br's buffer
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if len(long) > 0 {
			long = append(long, line...)
			line = long
			long = long[:0]
		}
		if err != nil {
			// The end, in an event or between two: what the event had so far
			// is dropped, as a browser drops it.
			switch {
			case err != io.EOF:
			case limited.N <= 0:
				err = fmt.Errorf("the answer is larger than %d bytes", maxUpstreamResult)
			case cur.lastID != "":
				err = errStreamClosed
			default:
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(bytes.TrimPrefix(v, []byte(" ")))
			} else {
				cur.field(line)
			}
			continue
		}
		cur.lastID = cur.idBuf // the event is complete: its id counts
		if data.Len() == 0 {
			continue
		}
		var msg rpcMessage
		ok := parseAnswer(data.Bytes(), &msg)
		data.Reset()
		if !ok {
			continue
		}
		switch {
		case msg.Method == "" && string(msg.ID) == id:
			return &msg, nil
		case msg.Method == "notifications/progress" && sink != nil:
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(msg.Params, &p) == nil && p.ProgressToken == token {
				p.ProgressToken = sink.token
				p.Meta = nil
				u.g.maskProgress(&p)
				sink.ss.NotifyProgress(routeOf(ctx), &p)
			}
		case msg.Method == "notifications/message":
			if down := downstreamFrom(ctx); down != nil {
				var p mcp.LoggingMessageParams
				if json.Unmarshal(msg.Params, &p) == nil {
					down.Log(routeOf(ctx), u.g.maskLog(&p)) // on the call's stream, if the client's level lets it through
				}
			}
		case msg.Method != "" && len(msg.ID) > 0:
			// A request from the upstream on this stream: answer pings,
			// relay sampling and elicitation to the calling client, refuse
			// the rest.
			switch msg.Method {
			case "ping":
				u.postLean(ls, []byte(`{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{}}`))
			case "sampling/createMessage", "elicitation/create":
				go u.answerLean(ctx, ls, msg.Method, bytes.Clone(msg.ID), bytes.Clone(msg.Params))
			default:
				u.postLean(ls, []byte(`{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"reach does not handle `+jsonEscape(msg.Method)+` from upstreams"}}`))
			}
		}
	}
}

// sseCursor is how far a call's SSE answer got: the id of the last event
// and the reconnection delay the upstream asked for (the SSE "id" and
// "retry" fields), to resume the stream when the upstream closes it before
// answering (SEP-1699).
type sseCursor struct {
	lastID string // of the last complete event: where to resume
	idBuf  string // the id field last read; it counts once its event is complete
	retry  time.Duration
}

// field takes in a line of an event that is not data, as a browser does:
// "id" sets the id (an empty one resets it; one with a NUL is ignored),
// "retry" with only digits sets the delay.
func (c *sseCursor) field(line []byte) {
	name, v, _ := bytes.Cut(line, []byte(":"))
	v = bytes.TrimPrefix(v, []byte(" "))
	switch string(name) {
	case "id":
		if bytes.IndexByte(v, 0) < 0 && len(v) <= maxEventID {
			c.idBuf = string(v)
		}
	case "retry":
		ms, err := strconv.ParseUint(string(v), 10, 64)
		switch {
		case err == nil:
			c.retry = time.Duration(min(ms, uint64(maxResumeDelay/time.Millisecond))) * time.Millisecond
		case errors.Is(err, strconv.ErrRange):
			c.retry = maxResumeDelay
		}
	}
}

// errStreamClosed ends an SSE answer the upstream closed, after an event
// with an id, without the response: it can be resumed.
var errStreamClosed = errors.New("the upstream closed the stream before answering")

const (
	maxEventID     = 1024                  // a longer event id is ignored
	maxResumes     = 100                   // reconnections of one call's stream
	minResumeDelay = 50 * time.Millisecond // between two reconnections, whatever the upstream asks
	maxResumeDelay = 30 * time.Second      // and at most
)

// resumeSSE reconnects to a call's SSE stream that the upstream closed
// before answering (SEP-1699 polling): a GET with the Last-Event-ID after
// the delay the upstream asked for, as often as it closes the stream,
// until the response comes, the call ends, or maxResumes reconnections.
// A session that is gone by then is an error, not a new session: the call
// was received, and a new session would run it twice.
func (u *upstream) resumeSSE(ctx context.Context, ls *leanSession, cur *sseCursor, id, token string, sink *progressSink) (*rpcMessage, error) {
	for range maxResumes {
		t := time.NewTimer(min(max(cur.retry, minResumeDelay), maxResumeDelay))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.cfg.URL, nil)
		if err != nil {
			return nil, err
		}
		u.leanHeaders(req, ls)
		req.Header.Del("Content-Type")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", cur.lastID)
		resp, err := u.http.Do(req)
		if err != nil {
			return nil, errors.New(redactURL(err.Error(), u.cfg.URL))
		}
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("the upstream closed the call's stream, and resuming it (GET with Last-Event-ID) was answered %s %s", resp.Status, strings.TrimSpace(string(b)))
		}
		msg, err := u.readSSE(ctx, ls, resp.Body, id, token, sink, cur)
		resp.Body.Close()
		if !errors.Is(err, errStreamClosed) {
			return msg, err
		}
	}
	return nil, fmt.Errorf("the upstream closed the call's stream %d times without answering", maxResumes+1)
}

// answerLean answers an upstream's sampling or elicitation request, made
// on the stream of a tool call (ctx), through the client of that call, and
// posts the answer on the session.
func (u *upstream) answerLean(ctx context.Context, ls *leanSession, method string, id, params json.RawMessage) {
	var res any
	var err error
	down := downstreamFrom(ctx)
	switch method {
	case "sampling/createMessage":
		var p mcp.CreateMessageParams
		if err = json.Unmarshal(params, &p); err != nil {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "reach could not read the sampling request: " + err.Error()}
		} else {
			res, err = u.sample(ctx, ctx, down, &p)
		}
	case "elicitation/create":
		var p mcp.ElicitParams
		if err = json.Unmarshal(params, &p); err != nil {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "reach could not read the elicitation request: " + err.Error()}
		} else {
			res, err = u.elicit(ctx, ctx, down, &p)
		}
	}
	var b []byte
	if err == nil {
		b, err = json.Marshal(res)
	}
	var out []byte
	if err != nil {
		we := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		errors.As(err, &we)
		e, _ := json.Marshal(we)
		out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, id, e)
	} else {
		out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, b)
	}
	u.postLean(ls, out)
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// cancelLean tells the upstream that the call id is cancelled.
func (u *upstream) cancelLean(ls *leanSession, id string, ctx context.Context) {
	reason, _ := json.Marshal(context.Cause(ctx).Error())
	go u.postLean(ls, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":`+string(reason)+`}}`))
}

// postLean posts a notification or a response on the session.
func (u *upstream) postLean(ls *leanSession, body []byte) {
	ctx, cancel := context.WithTimeout(u.g.ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return
	}
	u.leanHeaders(req, ls)
	resp, err := u.http.Do(req)
	if err != nil {
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
}

// leanResult is a tool result as the lean client reads it.
type leanResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
}

// data turns the result into the call's data, as resultData does for the
// SDK's results: the structured content, else the text, else the content.
func (r *leanResult) data(red *redact.Redactor) json.RawMessage {
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		return r.StructuredContent
	}
	text, allText := r.text(red)
	if allText {
		if b := bytes.TrimSpace([]byte(text)); len(b) > 0 && (b[0] == '{' || b[0] == '[') && json.Valid(b) {
			return b
		}
		s, _ := json.Marshal(text)
		return s
	}
	b, _ := json.Marshal(r.Content)
	return b
}

// text joins the text contents as contentText does, and reports whether
// every content is text.
func (r *leanResult) text(red *redact.Redactor) (string, bool) {
	var texts []string
	all, lead := true, false
	for i, c := range r.Content {
		typ, text, ok := leanContentText(c)
		if !ok || typ != "text" {
			all = false
			continue
		}
		lead = lead || (i > 0 && len(texts) == 0)
		texts = append(texts, text)
	}
	return joinTexts(texts, lead, red), all
}
