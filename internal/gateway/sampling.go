package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentreach/reach"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sampling (G1): an upstream server may ask for a model completion
// (sampling/createMessage) while one of its tool calls is in flight. Reach
// makes that completion a model frame under the tool call (it passes the
// admit checks and budgets like any turn, and its tokens are charged to the
// request), forwards it to the downstream MCP client that made the call,
// with the model frame's id in _meta ("reach/parent", "traceparent",
// "reach/request"), and the calls the client makes with that _meta nest
// under the model frame.
//
// Which call a sampling request belongs to: calls from a client that
// declared the sampling capability go to an HTTP upstream on a session of
// their own, one per downstream session (through the SDK, not the lean
// path), so a sampling request on that session is for that client; within
// it (and on the one shared session of a stdio upstream) the frame the
// upstream names in the request's _meta (it got it with the call) decides,
// otherwise the newest call in flight whose client can sample.

// downstreamKey carries the downstream MCP session a call came in on.
type downstreamKey struct{}

func withDownstream(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, downstreamKey{}, ss)
}

func downstreamFrom(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(downstreamKey{}).(*mcp.ServerSession)
	return ss
}

// canSample reports whether a downstream client accepts sampling requests
// from the gateway: it declared the capability, on a protocol that still
// has server-initiated requests.
func canSample(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && (ip.Capabilities.Sampling != nil || ip.Capabilities.Elicitation != nil) &&
		ip.ProtocolVersion < statelessProtocol
}

// onElicit relays an upstream's elicitation request, made while one of its
// tool calls is in flight, to the client that made that call.
func (u *upstream) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	fl := u.flights.find(req.Session, req.Params.Meta)
	if fl == nil {
		return nil, errors.New("reach: an elicitation request needs a tool call in flight from a client that can answer it; none is")
	}
	ip := fl.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil, errors.New("reach: the client that made this tool call does not accept elicitation")
	}
	ectx, stop := mergeCancel(fl.ctx, ctx)
	defer stop()
	return fl.ss.Elicit(ectx, req.Params)
}

// sampleAware routes the MCP posts of clients that can sample to the SDK
// (whose answers are streams that can carry the gateway's own requests),
// and everything else to the lean front.
func (g *Gateway) sampleAware(lean, sdk http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && canSample(g.sessionByID(sid)) {
				sdk.ServeHTTP(w, r)
				return
			}
		}
		lean.ServeHTTP(w, r)
	})
}

// flight is one upstream tool call in flight through the SDK.
type flight struct {
	ctx   context.Context // the tool call's context: its frame, its request
	frame *reach.Frame
	ss    *mcp.ServerSession // the downstream session that made the call, if any
}

// flights are the calls in flight per upstream client session.
type flights struct {
	mu sync.Mutex
	m  map[*mcp.ClientSession][]*flight
}

// add records a call in flight on cs; call the returned func when it is over.
func (fs *flights) add(cs *mcp.ClientSession, fl *flight) func() {
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[*mcp.ClientSession][]*flight{}
	}
	fs.m[cs] = append(fs.m[cs], fl)
	fs.mu.Unlock()
	return func() {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		l := fs.m[cs]
		for i, x := range l {
			if x == fl {
				l = append(l[:i:i], l[i+1:]...)
				break
			}
		}
		if len(l) == 0 {
			delete(fs.m, cs)
		} else {
			fs.m[cs] = l
		}
	}
}

// find returns the call a sampling request on cs belongs to: the one whose
// frame the request's _meta names, else the newest whose client can sample.
func (fs *flights) find(cs *mcp.ClientSession, meta mcp.Meta) *flight {
	var named reach.FrameID
	if s, ok := meta[MetaParent].(string); ok {
		named, _ = parseFrameID(s)
	} else if s, ok := meta[MetaTraceparent].(string); ok {
		named, _ = parseTraceparent(s)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	l := fs.m[cs]
	if named != 0 {
		for _, fl := range l {
			if fl.frame != nil && fl.frame.ID == named {
				return fl
			}
		}
	}
	for i := len(l) - 1; i >= 0; i-- {
		if canSample(l[i].ss) {
			return l[i]
		}
	}
	return nil
}

// onCreateMessage answers an upstream's sampling request through the
// downstream client of the tool call it belongs to, as a model frame under
// that call.
func (u *upstream) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	fl := u.flights.find(req.Session, req.Params.Meta)
	if fl == nil {
		return nil, errors.New("reach: a sampling request needs a tool call in flight from a client that can sample; none is")
	}
	model := "sampling"
	if mp := req.Params.ModelPreferences; mp != nil && len(mp.Hints) > 0 && mp.Hints[0].Name != "" {
		model = mp.Hints[0].Name
	}
	mctx, mf, err := u.g.rt.BeginModel(fl.ctx, model)
	if err != nil {
		return nil, fmt.Errorf("reach refused the model call: %w", err)
	}
	p := *req.Params
	p.Meta = mcp.Meta{}
	for k, v := range req.Params.Meta {
		p.Meta[k] = v
	}
	p.Meta[MetaParent] = mf.ID.String()
	p.Meta[MetaTraceparent] = traceparent(mf.Request, mf.ID)
	p.Meta[MetaRequest] = mf.Request.ID()
	sctx, stop := mergeCancel(mctx, ctx)
	defer stop()
	res, err := fl.ss.CreateMessage(sctx, &p)
	if err != nil {
		mf.FailModel(err)
		return nil, err
	}
	use := usageFromMeta(res.Meta)
	if tc, ok := res.Content.(*mcp.TextContent); ok {
		use.Text = tc.Text
	}
	mf.EndModel(use)
	return res, nil
}

// usageFromMeta reads token usage a client may report in a sampling
// result's _meta: {"usage": {"input_tokens", "output_tokens"}} or the
// OpenAI names prompt_tokens and completion_tokens.
func usageFromMeta(m mcp.Meta) reach.TokenUsage {
	v, ok := m["usage"]
	if !ok {
		return reach.TokenUsage{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return reach.TokenUsage{}
	}
	var u struct {
		Input      int64 `json:"input_tokens"`
		Output     int64 `json:"output_tokens"`
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
	}
	if json.Unmarshal(b, &u) != nil {
		return reach.TokenUsage{}
	}
	return reach.TokenUsage{Input: max(u.Input, u.Prompt), Output: max(u.Output, u.Completion)}
}

// sessionFor returns the upstream session that serves one downstream
// session that can sample: its own, for an HTTP upstream (made on first
// use, closed when either side ends), or the shared one for stdio.
func (u *upstream) sessionFor(ctx context.Context, down *mcp.ServerSession) (*mcp.ClientSession, error) {
	if u.cfg.URL == "" {
		return u.session(ctx)
	}
	if v, ok := u.own.Load(down); ok {
		return v.(*mcp.ClientSession), nil
	}
	u.mu.Lock()
	closed := u.closed
	u.mu.Unlock()
	if closed {
		return nil, errors.New("the gateway is shutting down")
	}
	cs, err := u.connect(ctx)
	if err != nil {
		return nil, err
	}
	if v, loaded := u.own.LoadOrStore(down, cs); loaded {
		go cs.Close()
		return v.(*mcp.ClientSession), nil
	}
	go func() {
		down.Wait()
		u.own.CompareAndDelete(down, cs)
		cs.Close()
	}()
	go func() {
		cs.Wait()
		u.own.CompareAndDelete(down, cs)
	}()
	return cs, nil
}

// closeOwn closes the sessions kept for downstream sessions.
func (u *upstream) closeOwn() {
	u.own.Range(func(k, v any) bool {
		u.own.Delete(k)
		v.(*mcp.ClientSession).Close()
		return true
	})
}

// onLog passes an upstream's log message, sent while one of its tool calls
// is in flight, to the client that made that call.
func (u *upstream) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	fl := u.flights.find(req.Session, req.Params.Meta)
	if fl == nil || fl.ss == nil {
		return
	}
	fl.ss.Log(ctx, req.Params)
}

// setLoggingLevel passes a client's logging/setLevel on to the upstream
// sessions its calls use, so that upstreams send their log messages.
func (g *Gateway) setLoggingLevel(ctx context.Context, down *mcp.ServerSession, params *mcp.SetLoggingLevelParams) {
	for _, u := range g.upstreams {
		// Only sessions that exist: creating one here would race the
		// client's next call.
		var cs *mcp.ClientSession
		if v, ok := u.own.Load(down); ok {
			cs = v.(*mcp.ClientSession)
		} else {
			var err error
			if cs, err = u.session(ctx); err != nil {
				continue
			}
		}
		if c := cs.InitializeResult().Capabilities; c == nil || c.Logging == nil {
			continue
		}
		if err := cs.SetLoggingLevel(ctx, params); err != nil {
			u.log.Debug("logging level not passed upstream", "err", err)
		}
	}
}
