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
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// leanMCP wraps the SDK's stateful /mcp handler. It reads each POST on a
// session once: a single tools/call from a client whose answers need not
// be streams (see streams) is answered by the lean path; a client's
// notifications/cancelled cancels its lean call, or keeps its reason for
// a call through the SDK (cancelReason); everything else goes to the SDK,
// a tools/call marked with its id (headerRPCID).
func (g *Gateway) leanMCP(sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get(mcpwire.HeaderSession)
		if r.Method != http.MethodPost || sid == "" {
			sdk.ServeHTTP(w, r)
			return
		}
		buf := mcpwire.GetBuffer()
		defer mcpwire.PutBuffer(buf)
		body, msg, ok := mcpwire.ReadMessage(w, r, buf)
		if body == nil {
			return // answered
		}
		if !ok {
			g.passOn(sdk, w, r, body)
			return
		}
		ss := g.sessionByID(sid)
		lean := ss != nil && ss.InitializeParams() != nil && ss.InitializeParams().ProtocolVersion < mcpwire.StatelessProtocol && !g.streams(ss)
		switch {
		case msg.Method == "tools/call" && mcpwire.RequestID(msg.ID):
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
		buf := mcpwire.GetBuffer()
		defer mcpwire.PutBuffer(buf)
		body, msg, ok := mcpwire.ReadMessage(w, r, buf)
		if body == nil {
			return // answered
		}
		var p mcpwire.CallParams
		// Anything the SDK checks beyond this (headers that must match the
		// body, versions, capabilities, a malformed reach _meta) is the
		// SDK's to answer.
		if !ok || msg.Method != "tools/call" || !mcpwire.RequestID(msg.ID) ||
			mcpwire.ParseCallParams(msg.Params, &p) != nil || p.Name == "" || p.Meta["progressToken"] != nil ||
			r.Header.Get(mcpwire.HeaderProtocol) != mcpwire.StatelessProtocol || p.Meta[metaProtocolVersion] != mcpwire.StatelessProtocol ||
			r.Header.Get("Mcp-Name") != p.Name || p.Meta[metaClientCapabilities] == nil || hasParamHeaders(r.Header) {
			g.passOn(sdk, w, r, body)
			return
		}
		if _, err := link.FromMeta(p.Meta); err != nil {
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
		res, err := g.dispatch(ctx, g.clientSession(g.identityOf(ctx, r.Header), ci.Name, ci.Version), nil, ci.Name, p.Name, p.Arguments, p.Meta, nil)
		var we *jsonrpc.Error
		switch {
		case errors.As(err, &we):
			mcpwire.WriteResponse(w, id, nil, we)
		case err != nil:
			mcpwire.WriteResponse(w, id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		default:
			res.Meta[metaServerInfo] = g.serverInfo
			mcpwire.WriteResponse(w, id, res, nil)
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
func cancelled(sid string, msg *mcpwire.Message) (key, reason string, ok bool) {
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
func (g *Gateway) leanCall(w http.ResponseWriter, r *http.Request, ss *mcp.ServerSession, sid string, msg *mcpwire.Message) bool {
	var p mcpwire.CallParams
	if err := mcpwire.ParseCallParams(msg.Params, &p); err != nil || p.Name == "" {
		m := "tools/call params must be an object with a tool name"
		if errors.Is(err, mcpwire.ErrBadMeta) {
			m = "tools/call params._meta must be an object"
		}
		mcpwire.WriteResponse(w, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m})
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
	res, err := g.dispatch(ctx, g.sessionFor(ss), ss, agent, p.Name, p.Arguments, p.Meta, nil)
	if errors.Is(context.Cause(ctx), errClientCancelled) {
		mcpwire.WriteEmptyStream(w) // a cancelled request gets no response
		return true
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		mcpwire.WriteResponse(w, msg.ID, nil, we)
		return true
	}
	if err != nil {
		mcpwire.WriteResponse(w, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		return true
	}
	mcpwire.WriteResponse(w, msg.ID, res, nil)
	return true
}

// leanSession is what the lean client needs of an upstream SDK session.
type leanSession struct {
	cs *mcp.ClientSession
	mcpwire.Session
}

// leanOf returns the lean view of cs, or nil when cs cannot be used
// leanly (stdio, no session id, the sessionless protocol).
func (u *upstream) leanOf(cs *mcp.ClientSession) *leanSession {
	if u.cfg.URL == "" || cs.ID() == "" || cs.InitializeResult() == nil {
		return nil
	}
	v := cs.InitializeResult().ProtocolVersion
	if v >= mcpwire.StatelessProtocol {
		return nil
	}
	return &leanSession{cs: cs, Session: mcpwire.Session{ID: cs.ID(), Protocol: v}}
}

// errSessionGone says the upstream no longer knows the session (HTTP 404).
var errSessionGone = errors.New("the upstream ended the session")

// callLean calls a tool on the upstream without the SDK's decoder: it
// posts tools/call on the session and reads a JSON or SSE answer. When
// ctx ends it drops the HTTP request and tells the upstream with
// notifications/cancelled.
func (u *upstream) callLean(ctx context.Context, ls *leanSession, name string, args json.RawMessage, meta mcp.Meta, sink *progressSink) (*mcpwire.Result, error) {
	id := `"reach-` + strconv.FormatUint(u.tokens.Add(1), 10) + `"`
	var token string
	if sink != nil {
		token = u.cfg.Name + "-" + strconv.FormatUint(u.tokens.Add(1), 10)
		meta["progressToken"] = token
	}
	buf := mcpwire.GetBuffer()
	defer mcpwire.PutBuffer(buf)
	buf.Write(mcpwire.AppendCall(buf.AvailableBuffer(), id, name, args, meta))
	if p := u.wire; p != nil && !p.Redirected() {
		x, err := p.RoundTrip(ctx, ls.Session, buf.Bytes())
		if err != nil {
			return nil, u.leanFailed(ctx, ls, id, "calling", err)
		}
		if !isRedirect(x.Status) {
			res, err := u.leanAnswer(ctx, ls, x.Status, x.StatusText, x.ContentType, &x.Body, id, token, sink)
			x.Release(ctx.Err() != nil)
			return res, err
		}
		// The endpoint moved (…/mcp to …/mcp/, say): nothing ran. This
		// upstream's calls go through net/http from now on, which follows.
		io.Copy(io.Discard, io.LimitReader(&x.Body, 64<<10))
		x.Release(ctx.Err() != nil)
		if p.MarkRedirected() {
			u.log.Info("the upstream's endpoint redirects; its calls now follow the redirect through net/http", "upstream", u.cfg.Name, "status", x.Status)
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
func (u *upstream) leanAnswer(ctx context.Context, ls *leanSession, status int, statusText, ct string, body io.Reader, id, token string, sink *progressSink) (*mcpwire.Result, error) {
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
	var msg *mcpwire.Message
	var err error
	if strings.HasPrefix(ct, "text/event-stream") {
		var cur mcpwire.SSECursor
		msg, err = u.readSSE(ctx, ls, body, id, token, sink, &cur)
		if errors.Is(err, mcpwire.ErrStreamClosed) {
			msg, err = u.resumeSSE(ctx, ls, &cur, id, token, sink)
		}
	} else {
		msg, err = mcpwire.ReadJSONAnswer(body)
	}
	if err != nil {
		return nil, u.leanFailed(ctx, ls, id, "reading", err)
	}
	if msg.Error != nil {
		return nil, u.callError(msg.Error)
	}
	var res mcpwire.Result
	if err := res.Parse(msg.Result); err != nil {
		return nil, &reach.ToolError{Type: "upstream_error", Message: fmt.Sprintf("upstream %s answered tools/call with something else than a tool result", u.cfg.Name)}
	}
	return &res, nil
}

func (u *upstream) leanHeaders(req *http.Request, ls *leanSession) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderSession, ls.ID)
	req.Header.Set(mcpwire.HeaderProtocol, ls.Protocol)
}

// readSSE reads an SSE answer until the response to id, passing progress
// on to sink and log messages to the calling client, in the order they
// come, and answering the upstream's requests: pings here, sampling and
// elicitation through the calling client, others refused. cur follows the
// stream (see mcpwire.ReadSSE); resumeSSE picks up a stream the upstream
// closed.
func (u *upstream) readSSE(ctx context.Context, ls *leanSession, body io.Reader, id, token string, sink *progressSink, cur *mcpwire.SSECursor) (*mcpwire.Message, error) {
	return mcpwire.ReadSSE(body, cur, func(msg *mcpwire.Message) bool {
		switch {
		case msg.Method == "" && string(msg.ID) == id:
			return true
		case msg.Method == "notifications/progress" && sink != nil:
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(msg.Params, &p) == nil && p.ProgressToken == token {
				p.ProgressToken = sink.token
				p.Meta = nil
				sink.ss.NotifyProgress(routeOf(ctx), &p)
			}
		case msg.Method == "notifications/message":
			if down := downstreamFrom(ctx); down != nil {
				var p mcp.LoggingMessageParams
				if json.Unmarshal(msg.Params, &p) == nil {
					down.Log(routeOf(ctx), &p) // on the call's stream, if the client's level lets it through
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
				out := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":`, msg.ID)
				out = jsonscan.AppendQuoted(out, "reach does not handle "+msg.Method+" from upstreams")
				u.postLean(ls, append(out, "}}"...))
			}
		}
		return false
	})
}

// resumeSSE reconnects to a call's SSE stream that the upstream closed
// before answering (SEP-1699 polling): a GET with the Last-Event-ID after
// the delay the upstream asked for, as often as it closes the stream,
// until the response comes, the call ends, or mcpwire.MaxResumes reconnections.
// A session that is gone by then is an error, not a new session: the call
// was received, and a new session would run it twice.
func (u *upstream) resumeSSE(ctx context.Context, ls *leanSession, cur *mcpwire.SSECursor, id, token string, sink *progressSink) (*mcpwire.Message, error) {
	for range mcpwire.MaxResumes {
		t := time.NewTimer(cur.ResumeDelay())
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
		req.Header.Set("Last-Event-ID", cur.LastID)
		resp, err := u.http.Do(req)
		if err != nil {
			return nil, errors.New(withoutQuery(err.Error(), u.cfg.URL))
		}
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("the upstream closed the call's stream, and resuming it (GET with Last-Event-ID) was answered %s %s", resp.Status, strings.TrimSpace(string(b)))
		}
		msg, err := u.readSSE(ctx, ls, resp.Body, id, token, sink, cur)
		resp.Body.Close()
		if !errors.Is(err, mcpwire.ErrStreamClosed) {
			return msg, err
		}
	}
	return nil, fmt.Errorf("the upstream closed the call's stream %d times without answering", mcpwire.MaxResumes+1)
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

// withoutQuery keeps a transport error's message from echoing the query of
// the upstream's URL (which may carry a key).
func withoutQuery(msg, url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		msg = strings.ReplaceAll(msg, url[i:], "?…")
	}
	return msg
}
