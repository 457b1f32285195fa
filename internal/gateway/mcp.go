package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// Keys the gateway reads from and writes to MCP _meta.
const (
	MetaRequest        = "reach/request"         // the request a call belongs to
	MetaBudget         = "reach/budget"          // a budget name or amounts, for a new request
	MetaScene          = "reach/scene"           // the conversation's scene (e.g. chitchat), for a new request
	MetaWhy            = "reach/why"             // the caller's reason, recorded as Call.Why
	MetaParent         = "reach/parent"          // the parent frame id (16 hex digits)
	MetaCallID         = "reach/call_id"         // the caller's call id
	MetaIdempotencyKey = "reach/idempotency_key" // an idempotency key for the call
	MetaFrame          = "reach/frame"           // in results: the call's frame id
	MetaStatus         = "reach/status"          // in results: success, error, refused, ...
	MetaError          = "reach/error"           // in results: the structured error
	MetaTraceparent    = "traceparent"
	MetaBaggage        = "baggage"
)

func (g *Gateway) newMCPServer() *mcp.Server {
	opts := &mcp.ServerOptions{
		Instructions: "Tools served through Agent-Reach. A refused call explains why and what to do instead; " +
			"follow its suggestion rather than retrying the same call.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Logger:       g.sdkLogger("mcp"),
	}
	if g.upstreamsComplete() {
		opts.CompletionHandler = g.complete
	}
	if g.upstreamsSubscribe() {
		opts.SubscribeHandler, opts.UnsubscribeHandler = g.subscribe, g.unsubscribe
		opts.Capabilities.Resources = &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}
	}
	g.serverInfo = &mcp.Implementation{Name: "reach", Title: "Agent-Reach", Version: g.version()}
	s := mcp.NewServer(g.serverInfo, opts)
	s.AddReceivingMiddleware(g.mcpCalls)
	return s
}

// mcpCalls answers tools/call itself, through the runtime; every other
// method goes to the SDK.
func (g *Gateway) mcpCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" {
			g.bindSession(req)
		}
		if method == "tools/call" {
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return g.callTool(ctx, r)
			}
		}
		if method == "logging/setLevel" {
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && r.Params != nil && !slices.Contains(logLevels, r.Params.Level) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("unknown logging level %q; use one of %v", r.Params.Level, logLevels)}
			}
		}
		res, err := next(ctx, method, req)
		if method == "tools/list" && err == nil {
			res = g.filterList(ctx, req, res)
		}
		if method == "logging/setLevel" && err == nil {
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok {
				g.setLoggingLevel(ctx, r.Session, r.Params)
			}
		}
		return res, err
	}
}

var mcpCallSeq atomic.Uint64

// session is the state the gateway keeps per MCP session.
type session struct {
	request string    // the session's current request; guarded by requests.mu
	made    time.Time // for a sessionless client's: when it was made
	// owner is the sessionOwner of who opened a Streamable HTTP session
	// when the gateway authenticates (set at initialize); nil otherwise.
	owner atomic.Pointer[string]
}

// sessionOf returns the gateway's state for the session a call came in.
// A long-lived session (stdio, in-memory, or Streamable HTTP with a session
// id) is keyed by itself, and its request ends when it closes. Sessionless
// HTTP clients (protocol 2026-07-28 and later, where every POST has a
// session of its own) are keyed by their clientInfo name and version, so that
// one client's calls share a request until it has been idle for the gap.
func (g *Gateway) sessionOf(req *mcp.CallToolRequest) *session {
	ss := req.Session
	if ss == nil {
		return &session{}
	}
	if ss.ID() == "" && req.Extra != nil && req.Extra.Header != nil {
		var name, version string
		if ci := req.ClientInfo(); ci != nil {
			name, version = ci.Name, ci.Version
		}
		return g.clientSession(g.identityOf(context.Background(), req.Extra.Header), name, version)
	}
	return g.sessionFor(ss)
}

// clientSession returns the state of a sessionless client: its principal
// in its tenant (sessionOwner: alice of one tenant never shares alice of
// another's request) and clientInfo name and version.
func (g *Gateway) clientSession(id *auth.Identity, name, version string) *session {
	// NUL-separated and bounded: the parts cannot run into each other, and
	// a huge clientInfo is not kept.
	key := "client\x00" + sessionOwner(id) + "\x00" + clip(name, 128) + "\x00" + clip(version, 64)
	if v, ok := g.sessions.Load(key); ok {
		return v.(*session)
	}
	v, _ := g.sessions.LoadOrStore(key, &session{made: time.Now()})
	return v.(*session)
}

// sweepClients forgets the sessionless clients whose request has ended (or
// that never got one within the idle gap), so that a client inventing a
// new clientInfo for every call does not grow the gateway's memory.
func (g *Gateway) sweepClients() {
	g.sessions.Range(func(k, v any) bool {
		if _, isClient := k.(string); !isClient {
			return true
		}
		st := v.(*session)
		if !g.reqs.current(&st.request, st.made) {
			g.sessions.CompareAndDelete(k, v)
		}
		return true
	})
}

// sessionFor returns the state of a long-lived session, made on first use;
// its request ends when the session closes.
func (g *Gateway) sessionFor(ss *mcp.ServerSession) *session {
	if v, ok := g.sessions.Load(ss); ok {
		return v.(*session)
	}
	st := &session{}
	v, loaded := g.sessions.LoadOrStore(ss, st)
	if loaded {
		return v.(*session)
	}
	go func() {
		ss.Wait()
		g.sessions.Delete(ss)
		if id := ss.ID(); id != "" {
			g.byID.Delete(id)
		}
		g.reqs.mu.Lock()
		id := st.request
		g.reqs.mu.Unlock()
		if id != "" {
			g.reqs.end(id)
		}
	}()
	return st
}

// callTool runs one MCP tools/call (that came through the SDK) through the
// runtime.
func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	var h http.Header
	if req.Extra != nil {
		h = req.Extra.Header
	}
	if id := g.identityOf(ctx, h); id != nil {
		ctx = auth.WithIdentity(ctx, id)
	}
	agent := ""
	if ci := req.ClientInfo(); ci != nil {
		agent = ci.Name
	}
	ctx, done := g.cancelReason(ctx, req.Session, h)
	defer done()
	return g.dispatch(ctx, g.sessionOf(req), req.Session, agent, p.Name, p.Arguments, p.Meta, h, p.GetProgressToken())
}

// dispatch runs one tools/call through the runtime. A refusal or a tool
// failure is a result with isError and the text the model should read;
// only a malformed _meta is a protocol error. A call whose _meta names no
// request or frame is linked by the HTTP headers h (baggage, Reach-Request,
// Reach-Parent, traceparent), as an agent that passes on what reach gave
// it with an A2A message sends them. Progress goes to ss under token, when
// both are set.
func (g *Gateway) dispatch(ctx context.Context, st *session, ss *mcp.ServerSession, agent, name string, args json.RawMessage, meta mcp.Meta, h http.Header, token any) (*mcp.CallToolResult, error) {
	m, err := parseCallMeta(meta)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if h != nil && m.link.Request == "" && m.link.Parent == 0 && m.link.Trace == 0 {
		if hl, err := linkFromHeaders(h); err == nil {
			m.link.Request, m.link.Parent, m.link.Trace, m.link.TraceID = hl.Request, hl.Parent, hl.Trace, hl.TraceID
		}
	}
	m.link.Agent = agent
	who, _ := auth.IdentityFrom(ctx)
	m.link.Chosen = g.chosen.get(m.callID, m.link.Request, who)
	cctx, r, done, err := g.place(ctx, m.link, func() (*reach.Request, func(), error) {
		return g.reqs.session(&st.request, m.link, who)
	})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	defer done()
	cctx = withDownstream(cctx, ctx, ss)
	if token != nil && ss != nil {
		cctx = context.WithValue(cctx, progressKey{}, &progressSink{ss: ss, token: token})
	}
	id := m.callID
	if id == "" {
		id = "mcp_" + strconv.FormatUint(mcpCallSeq.Add(1), 10)
	}
	if token != nil && ss != nil {
		defer g.approvalProgress(cctx, r, id, &progressSink{ss: ss, token: token})()
	}
	cctx, kept := withSent(cctx)
	res := g.rt.Call(cctx, &reach.Call{ID: id, Tool: name, Arguments: args, Why: m.why, IdempotencyKey: m.key})
	if out := kept.keptResult(res, r.ID()); out != nil && !g.shaped(name) {
		return out, nil // what the upstream sent (keep.go)
	}
	return mcpResult(res, r.ID()), nil
}

// callMeta is what a tools/call's _meta says to the gateway.
type callMeta struct {
	link   link
	why    string
	key    string
	callID string
}

func parseCallMeta(meta mcp.Meta) (callMeta, error) {
	var m callMeta
	if len(meta) == 0 {
		return m, nil
	}
	str := func(k string) (string, error) {
		v, ok := meta[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("_meta[%q] must be a string", k)
		}
		return s, nil
	}
	var err error
	if m.link.Request, err = str(MetaRequest); err != nil {
		return m, err
	}
	if m.why, err = str(MetaWhy); err != nil {
		return m, err
	}
	if m.key, err = str(MetaIdempotencyKey); err != nil {
		return m, err
	}
	if m.callID, err = str(MetaCallID); err != nil {
		return m, err
	}
	if m.link.Budget, err = parseBudgetSpec(meta[MetaBudget]); err != nil {
		return m, err
	}
	if m.link.Scene, err = str(MetaScene); err != nil {
		return m, err
	}
	if err := checkScene(m.link.Scene); err != nil {
		return m, fmt.Errorf("_meta[%q]: %v", MetaScene, err)
	}
	parent, err := str(MetaParent)
	if err != nil {
		return m, err
	}
	if parent != "" {
		if m.link.Parent, err = parseFrameID(parent); err != nil {
			return m, fmt.Errorf("_meta[%q]: %v", MetaParent, err)
		}
	}
	tp, err := str(MetaTraceparent)
	if err != nil {
		return m, err
	}
	m.link.Trace, m.link.TraceID, _ = parseTraceparent(tp) // a malformed traceparent is ignored, as W3C says
	bg, err := str(MetaBaggage)
	if err != nil {
		return m, err
	}
	if m.link.Request == "" {
		m.link.Request = baggageRequest(bg)
	}
	if len(m.link.Request) > maxRequestID { // as place would, naming where it came from
		return m, fmt.Errorf("_meta[%q] is longer than %d characters", MetaRequest, maxRequestID)
	}
	return m, nil
}

// parseFrameID reads 16 hex digits, not all zero.
func parseFrameID(s string) (reach.FrameID, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("%q is not a frame id (16 hex digits)", s)
	}
	id, err := reach.ParseFrameID(s)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%q is not a frame id (16 hex digits, not all zero)", s)
	}
	return id, nil
}

// parseTraceparent returns the parent span id and the trace id of a W3C
// traceparent ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>").
func parseTraceparent(s string) (reach.FrameID, [16]byte, bool) {
	var trace [16]byte
	s = strings.TrimSpace(s)
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return 0, trace, false
	}
	if !isHex(s[:2]) || !isHex(s[3:35]) || !isHex(s[53:55]) || strings.Trim(s[3:35], "0") == "" {
		return 0, trace, false
	}
	if s[:2] == "00" && len(s) != 55 {
		return 0, trace, false
	}
	id, err := parseFrameID(s[36:52])
	if err != nil {
		return 0, trace, false
	}
	hex.Decode(trace[:], []byte(s[3:35])) // checked above
	return id, trace, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// baggageRequest returns the reach.request entry of a W3C baggage header.
func baggageRequest(s string) string {
	for _, member := range strings.Split(s, ",") {
		kv, _, _ := strings.Cut(member, ";")
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) != "reach.request" {
			continue
		}
		v, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return ""
		}
		return v
	}
	return ""
}

// traceparent renders a W3C traceparent whose parent span id is frame f,
// in the request tree's trace (the one its spans are exported in).
func traceparent(r *reach.Request, f reach.FrameID) string {
	return "00-" + trace.TraceID(r.Trace()).String() + "-" + f.String() + "-01"
}

// mcpResult renders a reach result as an MCP tool result.
func mcpResult(res *reach.Result, request string) *mcp.CallToolResult {
	out := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: modelText(res)}},
		Meta:    mcp.Meta{MetaRequest: request, MetaFrame: res.Frame.String(), MetaStatus: string(res.Status)},
	}
	if res.Status != reach.StatusSuccess {
		out.IsError = true
		if res.Error != nil {
			out.Meta[MetaError] = res.Error
		}
		return out
	}
	if d := bytes.TrimSpace(res.Data); len(d) > 0 && d[0] == '{' {
		out.StructuredContent = json.RawMessage(d)
	}
	if cs := mcpContent(res.Data); cs != nil {
		out.Content = cs
	}
	return out
}

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

// modelText is Result.ModelText with a JSON string's data shown unquoted.
func modelText(res *reach.Result) string {
	if res.Error == nil && len(res.Data) > 0 && res.Data[0] == '"' {
		var s string
		if json.Unmarshal(res.Data, &s) == nil {
			cp := *res
			cp.Data = nil
			return s + cp.ModelText()
		}
	}
	return res.ModelText()
}

// syncMCPTools makes the MCP tool list match the runtime's tools.
func (g *Gateway) syncMCPTools() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := map[string]bool{}
	for _, t := range g.rt.Tools() {
		if t.Access == reach.Forbidden {
			continue
		}
		now[t.Name] = true
		g.server.AddTool(g.mcpTool(t), unreachable)
	}
	var gone []string
	for name := range g.listed {
		if !now[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		g.server.RemoveTools(gone...)
	}
	g.listed = now
}

func unreachable(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("reach: tools/call reached the SDK's handler")
}

// mcpTool describes a runtime tool for tools/list. Called with g.mu held.
func (g *Gateway) mcpTool(t reach.Tool) *mcp.Tool {
	mt := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: objectSchema(t.InputSchema)}
	var orig *mcp.Tool
	if u := g.upstreamOf(t); u != nil {
		orig = u.original(t.Name)
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
		// Within the bounds of what is forwarded (upstream.go, toolLimits).
		mt.Title = clipText(orig.Title, MaxToolTitle, "title")
		if b, err := json.Marshal(orig.Icons); err == nil && len(b) <= MaxToolSchema {
			mt.Icons = orig.Icons
		}
		if orig.InputSchema != nil && t.InputSchema == nil {
			if b, err := json.Marshal(orig.InputSchema); err == nil && len(b) <= MaxToolSchema {
				mt.InputSchema = objectSchema(b)
			}
		}
		if a := orig.Annotations; a != nil {
			ann.Title = clipText(a.Title, MaxToolTitle, "title")
			ann.OpenWorldHint = a.OpenWorldHint
			ann.IdempotentHint = ann.IdempotentHint || a.IdempotentHint
		}
	}
	mt.Annotations = ann
	if len(t.OutputSchema) > 0 && json.Valid(t.OutputSchema) {
		mt.OutputSchema = json.RawMessage(t.OutputSchema)
	}
	return mt
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

// progressSink is where progress of a call goes: the downstream session and
// the token its client gave.
type progressSink struct {
	ss    *mcp.ServerSession
	token any
}

type progressKey struct{}

func progressFrom(ctx context.Context) *progressSink {
	p, _ := ctx.Value(progressKey{}).(*progressSink)
	return p
}

// approvalEvery is how often a client that asked for progress hears that
// its call still waits for approval.
var approvalEvery = 2 * time.Second

// approvalProgress tells the client, with progress notifications, while its
// call (id, in r) waits for approval (approvals: wait). Call the returned
// func when the call is over.
func (g *Gateway) approvalProgress(ctx context.Context, r *reach.Request, id string, sink *progressSink) func() {
	ctx, cancel := context.WithCancel(ctx)
	every := approvalEvery
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
			var waiting *reach.Frame
			for _, f := range slices.Backward(r.Frames()) {
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
			sink.ss.NotifyProgress(routeOf(ctx), &mcp.ProgressNotificationParams{ProgressToken: sink.token, Progress: float64(n), Message: msg})
		}
	}()
	return cancel
}

// sdkLogger is the logger of a part of the SDK (its server, its HTTP
// handlers): the gateway's, with session ids hidden (hideSessionIDs).
func (g *Gateway) sdkLogger(component string) *slog.Logger {
	return slog.New(hideSessionIDs{g.log.Handler()}).With("component", component)
}

// sessionRef is a session id's short hash in the log: no secret, so the
// log's redactor (redactHandler) leaves it as it is.
type sessionRef string

// hideSessionIDs replaces the value of every session_id attribute (the SDK
// logs one when a session connects, subscribes, ...) by a short hash of it:
// an Mcp-Session-Id is all a client on loopback needs to take a session
// over, and the hash still tells sessions apart in the log.
type hideSessionIDs struct{ h slog.Handler }

func (h hideSessionIDs) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h hideSessionIDs) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, rec.Message, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(hideSessionID(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h hideSessionIDs) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = hideSessionID(a)
	}
	return hideSessionIDs{h.h.WithAttrs(out)}
}

func (h hideSessionIDs) WithGroup(name string) slog.Handler {
	return hideSessionIDs{h.h.WithGroup(name)}
}

func hideSessionID(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch {
	case v.Kind() == slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, x := range as {
			out[i] = hideSessionID(x)
		}
		return slog.Group(a.Key, out...)
	case strings.EqualFold(strings.NewReplacer("_", "", "-", "").Replace(a.Key), "sessionid"):
		s := v.String()
		if s == "" {
			return a
		}
		sum := sha256.Sum256([]byte(s))
		return slog.Any(a.Key, sessionRef("#"+hex.EncodeToString(sum[:6])))
	}
	return a
}
