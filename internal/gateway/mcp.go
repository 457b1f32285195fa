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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (g *Gateway) newMCPServer() *mcp.Server {
	opts := &mcp.ServerOptions{
		Instructions: "Tools served through Agent-Reach. A refused call explains why and what to do instead; " +
			"follow its suggestion rather than retrying the same call.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Logger:       g.sdkLogger("mcp"),
	}
	if g.pool != nil && g.pool.Completes() {
		opts.CompletionHandler = g.pool.Complete
	}
	if g.pool != nil && g.pool.Subscribes() {
		opts.SubscribeHandler, opts.UnsubscribeHandler = g.pool.Subscribe, g.pool.Unsubscribe
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

// session is the state the gateway keeps per MCP session (or sessionless
// client).
type session struct {
	link.Session // the request its calls run in
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
	v, _ := g.sessions.LoadOrStore(key, &session{Session: *g.owned.NewSession()})
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
		if !g.owned.Current(&v.(*session).Session) {
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
		g.owned.EndSession(&st.Session)
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
	return g.dispatch(ctx, g.sessionOf(req), req.Session, agent, p.Name, p.Arguments, p.Meta, p.GetProgressToken())
}

// dispatch runs one tools/call through the runtime. A refusal or a tool
// failure is a result with isError and the text the model should read;
// only a malformed _meta is a protocol error. Progress goes to ss under
// token, when both are set.
func (g *Gateway) dispatch(ctx context.Context, st *session, ss *mcp.ServerSession, agent, name string, args json.RawMessage, meta mcp.Meta, token any) (*mcp.CallToolResult, error) {
	m, err := link.FromMeta(meta)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	m.Agent = agent
	who, _ := auth.IdentityFrom(ctx)
	m.Chosen = g.chosen.Get(m.CallID, m.Request, who)
	cctx, r, done, err := g.owned.Place(ctx, m.Target, &st.Session)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	defer done()
	var caller *upstream.Caller
	if ss != nil {
		caller = &upstream.Caller{Session: ss, Route: ctx, Progress: token}
		cctx = upstream.WithCaller(cctx, caller)
	}
	id := m.CallID
	if id == "" {
		id = "mcp_" + strconv.FormatUint(mcpCallSeq.Add(1), 10)
	}
	if caller != nil && token != nil {
		defer g.approvalProgress(cctx, r, id, caller)()
	}
	res := g.rt.Call(cctx, &reach.Call{ID: id, Tool: name, Arguments: args, Why: m.Why, IdempotencyKey: m.IdempotencyKey})
	return mcpResult(res, r.ID()), nil
}

// mcpResult renders a reach result as an MCP tool result.
func mcpResult(res *reach.Result, request string) *mcp.CallToolResult {
	out := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: modelText(res)}},
		Meta:    mcp.Meta{link.MetaRequest: request, link.MetaFrame: res.Frame.String(), link.MetaStatus: string(res.Status)},
	}
	if res.Status != reach.StatusSuccess {
		out.IsError = true
		if res.Error != nil {
			out.Meta[link.MetaError] = res.Error
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
	if g.pool != nil {
		orig = g.pool.Original(t)
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
		mt.Title = upstream.ClipText(orig.Title, upstream.MaxToolTitle, "title")
		if b, err := json.Marshal(orig.Icons); err == nil && len(b) <= upstream.MaxToolSchema {
			mt.Icons = orig.Icons
		}
		if orig.InputSchema != nil && t.InputSchema == nil {
			if b, err := json.Marshal(orig.InputSchema); err == nil && len(b) <= upstream.MaxToolSchema {
				mt.InputSchema = objectSchema(b)
			}
		}
		if a := orig.Annotations; a != nil {
			ann.Title = upstream.ClipText(a.Title, upstream.MaxToolTitle, "title")
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

// approvalEvery is how often a client that asked for progress hears that
// its call still waits for approval.
var approvalEvery = 2 * time.Second

// approvalProgress tells the client, with progress notifications, while its
// call (id, in r) waits for approval (approvals: wait). Call the returned
// func when the call is over.
func (g *Gateway) approvalProgress(ctx context.Context, r *reach.Request, id string, c *upstream.Caller) func() {
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
			msg := fmt.Sprintf("%s waits for approval (GET /v1/approvals)", waiting.Name)
			if e := waiting.Err(); e != nil && e.Message != "" {
				msg = e.Message
			}
			c.Session.NotifyProgress(c.Route, &mcp.ProgressNotificationParams{ProgressToken: c.Progress, Progress: float64(n), Message: msg})
		}
	}()
	return cancel
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// streams reports whether a client's calls need answers that are streams:
// it can sample or elicit, or asked for log messages.
func (g *Gateway) streams(ss *mcp.ServerSession) bool {
	return ss != nil && (upstream.CanSample(ss) || g.logs(ss))
}

// logLevels orders MCP logging levels from the most verbose.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLoggingLevel records a client's logging/setLevel and passes it on to
// the upstream sessions its calls use, so that upstreams send their log
// messages: the client's own sessions get its level (a session made later
// gets it when it is made), shared sessions the most verbose level any
// client asked for. Each client then gets the messages its level lets
// through.
func (g *Gateway) setLoggingLevel(ctx context.Context, down *mcp.ServerSession, params *mcp.SetLoggingLevelParams) {
	if _, had := g.levels.Swap(down, params.Level); !had {
		go func() {
			down.Wait()
			g.levels.Delete(down)
		}()
	}
	if g.pool != nil {
		g.pool.SetLevel(ctx, down, params.Level, g.SharedLevel())
	}
}

// Level is the logging level the client of down asked for, if it did.
func (g *Gateway) Level(down *mcp.ServerSession) (mcp.LoggingLevel, bool) {
	v, ok := g.levels.Load(down)
	if !ok {
		return "", false
	}
	return v.(mcp.LoggingLevel), true
}

// SharedLevel is the most verbose level a client asked for ("" when none
// did): what shared upstream sessions are set to.
func (g *Gateway) SharedLevel() mcp.LoggingLevel {
	var shared mcp.LoggingLevel
	g.levels.Range(func(_, v any) bool {
		if lv := v.(mcp.LoggingLevel); shared == "" || slices.Index(logLevels, lv) < slices.Index(logLevels, shared) {
			shared = lv
		}
		return true
	})
	return shared
}

// logs reports whether a client asked for log messages.
func (g *Gateway) logs(ss *mcp.ServerSession) bool {
	_, ok := g.levels.Load(ss)
	return ok
}

// sdkLogger is the logger of a part of the SDK (its server, its HTTP
// handlers): the gateway's, with session ids hidden (hideSessionIDs).
func (g *Gateway) sdkLogger(component string) *slog.Logger {
	return slog.New(hideSessionIDs{g.log.Handler()}).With("component", component)
}

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
		return slog.String(a.Key, "#"+hex.EncodeToString(sum[:6]))
	}
	return a
}
