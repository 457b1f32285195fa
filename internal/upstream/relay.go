package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
// Which call a sampling request belongs to: on an HTTP upstream the wire
// client reads each call's answer stream itself, so a request on it is for
// that call, and it is relayed in order with the call's progress and log
// messages (answerWire). Calls from a client that can sample or elicit use
// an upstream session of their own, one per downstream session, so that
// the upstream's per-session state stays that client's. On the one shared
// session of a stdio upstream (and on the SDK's path for sessionless
// upstreams) the frame the upstream names in the request's _meta (it got
// it with the call) decides. One that names no call is relayed to the
// newest call in flight whose client can sample only while that shared
// session has carried the calls of one owner (principal in tenant) only:
// an upstream may send a request after the call it was for has ended, and
// once another owner's calls share the session, the call in flight may be
// another tenant's. Then it is refused to the upstream (otherCallers).

// Caller is the downstream MCP client a tool call came from: its
// session, the context of the SDK's handler of the call, whose values route
// the messages the gateway sends during the call (progress, log messages,
// sampling and elicitation requests) onto the call's own answer stream,
// and the progress token it gave, if it asked for progress.
type Caller struct {
	Session  *mcp.ServerSession // not nil
	Route    context.Context
	Progress any // the client's progress token; nil when it asked for none
}

type callerKey struct{}

// CallerFrom returns the downstream client of ctx's call, or nil.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// routeOf returns the context whose values send a message on the stream of
// the call of ctx; ctx itself when the call came in otherwise.
func routeOf(ctx context.Context) context.Context {
	if c := CallerFrom(ctx); c != nil && c.Route != nil {
		return c.Route
	}
	return ctx
}

// CanSample reports whether a downstream client accepts sampling (or
// elicitation) requests from the gateway: it declared the capability, on a
// protocol that still has server-initiated requests.
func CanSample(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && (ip.Capabilities.Sampling != nil || ip.Capabilities.Elicitation != nil) &&
		ip.ProtocolVersion < mcpwire.StatelessProtocol
}

// notAsked is the error of a sampling or elicitation request (what) that
// the client of down, whose call's context is ctx, is not asked. A client
// on the sessionless protocol (2026-07-28 and later) is told why: it may
// well answer such requests, but reach relays them only over a session,
// where the upstream's request goes to the client as a request of its own;
// it was told it did not accept them, which its capabilities belied.
func notAsked(ctx context.Context, down *mcp.ServerSession, what string) error {
	k, _ := ctx.Value(keptKey{}).(*Kept)
	sessionless := k != nil && k.fromSessionless()
	if down != nil && !sessionless {
		ip := down.InitializeParams()
		sessionless = ip != nil && ip.ProtocolVersion >= mcpwire.StatelessProtocol
	}
	if sessionless {
		return errors.New("reach: the client that made this tool call is on the sessionless protocol (" + mcpwire.StatelessProtocol +
			" or later), on which reach does not relay " + what + "; connect the client with a session (protocol 2025-11-25 or earlier) for this tool")
	}
	return errors.New("reach: the client that made this tool call does not accept " + what)
}

// onElicit relays an upstream's elicitation request that came through the
// SDK client (a stdio upstream), made while one of its tool calls is in
// flight, to the client that made that call.
func (u *upstream) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	fl := u.open.find(req.Session, req.Params.Meta, CanSample)
	if fl == nil {
		return nil, errors.New(u.open.unnamed(req.Session, "an elicitation request"))
	}
	if !fl.asked.take() {
		return nil, errors.New(tooManyAsked("elicitation/create"))
	}
	defer fl.asked.done()
	return u.elicit(fl.ctx, ctx, fl.ss, req.Params)
}

// elicit relays an elicitation request to down, the client of the tool
// call whose context is callCtx; it ends when either context does.
func (u *upstream) elicit(callCtx, reqCtx context.Context, down *mcp.ServerSession, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if down == nil || !CanSample(down) || down.InitializeParams().Capabilities.Elicitation == nil {
		return nil, notAsked(callCtx, down, "elicitation")
	}
	shown := u.p.maskElicit(params)
	if shown == nil {
		return nil, errors.New("reach did not relay this elicitation request: " + unmaskableText + "; send it without the secret")
	}
	ectx, stop := onStream(callCtx, callCtx, reqCtx)
	defer stop()
	a := &answered{}
	res, err := down.Elicit(context.WithValue(ectx, answeredKey{}, a), shown)
	if err != nil || res == nil || !a.set {
		return res, err
	}
	res.Content = a.content
	if outer, ok := reqCtx.Value(answeredKey{}).(*answered); ok { // the SDK's client fills them in again (answerAsGiven)
		outer.content, outer.set = maps.Clone(a.content), true
	}
	return res, nil
}

// An answer to an elicitation goes to the upstream as the client gave it.
// The Go SDK's Elicit (the gateway's server asking its client) and its
// client's elicitation handling (a stdio upstream asking the gateway) fill
// the fields the answer left out with the form's defaults: the upstream
// got choices the user never made, and could not tell them from the
// user's. keptAnswer takes the answer before the server's Elicit fills it
// in, and answerAsGiven puts it back after the client's.

// answeredKey carries an *answered in the context of an elicitation.
type answeredKey struct{}

// answered is the content of a client's answer to an elicitation, as the
// client sent it.
type answered struct {
	content map[string]any
	set     bool
}

// keptAnswer is the gateway's server's sending middleware that keeps an
// elicitation's answer as its client sent it, for elicit.
func keptAnswer(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "elicitation/create" || err != nil {
			return res, err
		}
		if a, ok := ctx.Value(answeredKey{}).(*answered); ok {
			if r, ok := res.(*mcp.ElicitResult); ok && r != nil {
				a.content, a.set = maps.Clone(r.Content), true
			}
		}
		return res, err
	}
}

// answerAsGiven is an upstream client's receiving middleware that answers
// an upstream's elicitation with the content elicit got from the client.
func answerAsGiven(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "elicitation/create" {
			return next(ctx, method, req)
		}
		a := &answered{}
		res, err := next(context.WithValue(ctx, answeredKey{}, a), method, req)
		if err != nil || !a.set {
			return res, err
		}
		if r, ok := res.(*mcp.ElicitResult); ok && r != nil {
			r.Content = a.content
		}
		return res, err
	}
}

// maskElicit returns an upstream's elicitation request as the client may
// see it (P6): its message masked, and the registered secrets masked in
// all the rest (the requested form's titles, descriptions, defaults and
// choices, a URL), as in a tool's definition: a form's field named
// "password" is a field, not a secret. p itself when nothing is masked;
// nil when it cannot be masked (maskedOK): it is then not relayed.
func (pl *Pool) maskElicit(p *mcp.ElicitParams) *mcp.ElicitParams {
	if m := pl.redactor.RedactString(p.Message); m != p.Message {
		c := *p
		c.Message = m
		p = &c
	}
	m, ok := maskedOK(p, pl.redactor.Values)
	if !ok {
		return nil
	}
	return m
}

// maskSampling masks what an upstream's sampling request would show the
// client's model (P6): the texts of its messages, as the blocks of one
// text (a secret may be split across two), and its system prompt; and the
// registered secrets in all the rest (its metadata, model hints, stop
// sequences), as in a tool's definition. p is a copy of the request; a
// message it masks is replaced, not changed. It reports false when p
// cannot be masked (maskedOK: a secret in an image's or audio's bytes,
// found in their base64): p is then not relayed.
func (pl *Pool) maskSampling(p *mcp.CreateMessageParams) bool {
	var texts []string
	var at []int
	for i, m := range p.Messages {
		if m == nil {
			continue
		}
		if t, ok := m.Content.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
			at = append(at, i)
		}
	}
	blocks := pl.redactor.Blocks(texts)
	cloned := false
	for j, i := range at {
		if blocks[j] == texts[j] {
			continue
		}
		if !cloned {
			p.Messages, cloned = slices.Clone(p.Messages), true
		}
		m := *p.Messages[i]
		t := *m.Content.(*mcp.TextContent)
		t.Text = blocks[j]
		m.Content = &t
		p.Messages[i] = &m
	}
	p.SystemPrompt = pl.redactor.RedactString(p.SystemPrompt)
	if mp := p.ModelPreferences; mp != nil && slices.Contains(mp.Hints, nil) { // a null hint is no hint
		c := *mp
		c.Hints = slices.DeleteFunc(slices.Clone(mp.Hints), func(h *mcp.ModelHint) bool { return h == nil })
		p.ModelPreferences = &c
	}
	// The rest after the texts: a secret split across two messages is
	// found in them whole, not cut by a pass over one.
	m, ok := maskedOK(p, pl.redactor.Values)
	if !ok {
		return false
	}
	*p = *m
	return true
}

// maskLog returns an upstream's log message as the client may see it,
// masked (P6): its data, and its logger's name and _meta, which the
// upstream writes as it likes too; p itself when there is nothing to mask,
// nil when it cannot be masked (maskedOK): it is then not passed on.
func (pl *Pool) maskLog(p *mcp.LoggingMessageParams) *mcp.LoggingMessageParams {
	m, ok := maskedOK(p, func(b []byte) []byte { return unforgedMeta(pl.redactor.Redact(b)) })
	if !ok {
		return nil
	}
	return m
}

// maskProgress masks the message of an upstream's progress notification.
func (pl *Pool) maskProgress(p *mcp.ProgressNotificationParams) {
	p.Message = pl.redactor.RedactString(p.Message)
}

// openCall is one upstream tool call in flight through the SDK (or, for a
// client's own session, the wire client).
type openCall struct {
	ctx   context.Context // the tool call's context: its frame, its request
	frame *reach.Frame
	ss    *mcp.ServerSession // the downstream session that made the call, if any
	// own: the upstream session is this downstream session's own (it
	// serves no other client), so what comes on it unnamed is its client's.
	own   bool
	relay *relay // passes the call's notifications on, in order
	asked asking // its sampling and elicitation requests being relayed
}

// MaxAsked bounds the sampling and elicitation requests of one tool call
// that an upstream has relayed to the call's client at once; more are
// answered at once with an error (tooManyAsked). Each one relayed holds a
// goroutine, and its answer a connection to the upstream, for as long as
// the client (a human, for an elicitation) takes: an upstream that asked
// for 200 at once had 200 of each (TestUpstreamRequestFloodBounded).
const MaxAsked = 16

// asking counts the requests of one tool call relayed at once.
type asking struct{ n atomic.Int32 }

// take reports whether one more request may be relayed; done then
// gives its place back.
func (a *asking) take() bool {
	if a.n.Add(1) > MaxAsked {
		a.n.Add(-1)
		return false
	}
	return true
}

func (a *asking) done() { a.n.Add(-1) }

// tooManyAsked is the error of a request past MaxAsked.
func tooManyAsked(method string) string {
	return fmt.Sprintf("reach relays at most %d sampling and elicitation requests of one tool call to its client at once, and did not relay this %s: send it again once one of those is answered",
		MaxAsked, method)
}

// relay passes the notifications of one call on to its client in the order
// they came, on a goroutine of its own, so that a client that reads slowly
// holds up only its own call, never the upstream connection's reader. It
// keeps at most relayMax waiting; more are dropped.
type relay struct {
	mu      sync.Mutex
	queue   []func()
	running bool
	idle    chan struct{} // closed when the queue is empty and nothing runs; nil then
}

const relayMax = 256

// push queues f.
func (r *relay) push(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) >= relayMax {
		return
	}
	r.queue = append(r.queue, f)
	if !r.running {
		r.running = true
		r.idle = make(chan struct{})
		go r.run()
	}
}

func (r *relay) run() {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.running = false
			close(r.idle)
			r.idle = nil
			r.mu.Unlock()
			return
		}
		f := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		f()
	}
}

// flush waits until what was pushed has been passed on, for at most d, so
// that a call's notifications go out before its result.
func (r *relay) flush(d time.Duration) {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// openCalls are the calls in flight per upstream client session.
type openCalls struct {
	mu    sync.Mutex
	m     map[*mcp.ClientSession][]*openCall
	ended map[reach.FrameID]struct{} // frames of calls no longer in flight (the last maxEnded)
	// The newest shared session (not a client's own) calls were added on,
	// and whose calls it has carried: one owner's (sharedBy), or mixed.
	// A shared session before it is mixed: unnamed messages on it go to
	// no client, and it is never taken for a new one again (retired; once
	// maxEnded of them are, no shared session is).
	shared   *mcp.ClientSession
	sharedBy owner
	mixed    bool
	retired  map[weak.Pointer[mcp.ClientSession]]struct{} // weak: a closed session is not kept for it
}

// owner is whose a call is: its request's principal in its tenant.
type owner struct{ tenant, principal string }

// callOwner is whose call fl is (the zero owner without a request): read
// on every call a shared session carries, so compared as it is, not made
// into one string.
func callOwner(fl *openCall) owner {
	if fl.frame == nil || fl.frame.Request == nil {
		return owner{}
	}
	return owner{fl.frame.Request.Tenant(), fl.frame.Request.Principal()}
}

// maxEnded bounds the frames of ended calls openCalls remember.
const maxEnded = 4096

// add records a call in flight on cs; call the returned func when it is over.
func (fs *openCalls) add(cs *mcp.ClientSession, fl *openCall) func() {
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[*mcp.ClientSession][]*openCall{}
	}
	fs.m[cs] = append(fs.m[cs], fl)
	if !fl.own {
		fs.carried(cs, callOwner(fl))
	}
	fs.mu.Unlock()
	return func() {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		l := fs.m[cs]
		if fl.frame != nil {
			if fs.ended == nil || len(fs.ended) >= maxEnded {
				fs.ended = map[reach.FrameID]struct{}{}
			}
			fs.ended[fl.frame.ID] = struct{}{}
		}
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

// carried notes that the shared session cs carries a call of owner by.
// fs.mu is held.
func (fs *openCalls) carried(cs *mcp.ClientSession, by owner) {
	if cs == fs.shared {
		fs.mixed = fs.mixed || by != fs.sharedBy
		return
	}
	if fs.retired == nil {
		fs.retired = map[weak.Pointer[mcp.ClientSession]]struct{}{}
	}
	if fs.shared != nil && len(fs.retired) < maxEnded {
		fs.retired[weak.Make(fs.shared)] = struct{}{}
	}
	_, seen := fs.retired[weak.Make(cs)]
	// A session seen before, whose calls are forgotten, or one past the
	// bound of those remembered, counts as mixed.
	fs.shared, fs.sharedBy, fs.mixed = cs, by, seen || len(fs.retired) >= maxEnded
}

// find returns the call a request or notification on cs belongs to: the
// one whose frame its _meta names; none when it names one that is no
// longer in flight (reach/parent, or a traceparent with the span of a call
// that ended); else, when every call in flight on cs comes from one
// downstream session that passes ok, the newest of them; else none (a
// message that could be for either of two clients goes to neither). On a
// shared session (not a client's own) that has carried the calls of more
// than one owner, a message that names no call goes to none either: it
// may be for a call of another owner that has ended.
func (fs *openCalls) find(cs *mcp.ClientSession, meta mcp.Meta, ok func(*mcp.ServerSession) bool) *openCall {
	var named reach.FrameID
	strict := false // the name is reach's own, not another tracer's span
	if s, isStr := meta[link.MetaParent].(string); isStr {
		named, _ = link.ParseFrameID(s)
		strict = true
	} else if s, isStr := meta[link.MetaTraceparent].(string); isStr {
		named, _, _ = link.ParseTraceparent(s)
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
		if _, gone := fs.ended[named]; gone || strict {
			return nil // for a call that is over: its client must not get it, nor another
		}
	}
	// Not named: the call is a guess, made only when it cannot be another
	// client's (every call in flight on cs is from one downstream session).
	var found *openCall
	for _, fl := range l {
		if found != nil && fl.ss != found.ss {
			return nil
		}
		if found == nil || ok(fl.ss) {
			found = fl
		}
	}
	if found == nil || !ok(found.ss) {
		return nil
	}
	if !found.own && (cs != fs.shared || fs.mixed) {
		return nil
	}
	return found
}

// unnamed is why find gave no call for a sampling or elicitation request
// (what) on cs, as the upstream is told.
func (fs *openCalls) unnamed(cs *mcp.ClientSession, what string) string {
	fs.mu.Lock()
	l := fs.m[cs]
	shared := len(l) > 0 && !l[0].own && (cs != fs.shared || fs.mixed)
	fs.mu.Unlock()
	if shared {
		return otherCallers(what)
	}
	return "reach: " + what + " needs the tool call it is for: name it with the _meta (reach/parent) reach sent with the call, or there must be one client with calls in flight on this session, able to answer it"
}

// otherCallers is the error of a sampling or elicitation request (what)
// that names no call on a session shared by several owners' calls.
func otherCallers(what string) string {
	return "reach did not relay " + what + ": it names no tool call, and this session carries the calls of more than one principal, so the call in flight now may not be the one it is for. Send it with the _meta \"reach/parent\" that came with the tool call it belongs to"
}

// hasSession reports whether a call has a downstream session.
func hasSession(ss *mcp.ServerSession) bool { return ss != nil }

// onCreateMessage answers an upstream's sampling request that came
// through the SDK client (a stdio upstream) through the downstream client
// of the tool call it belongs to.
func (u *upstream) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	fl := u.open.find(req.Session, req.Params.Meta, CanSample)
	if fl == nil {
		return nil, errors.New(u.open.unnamed(req.Session, "a sampling request"))
	}
	if !fl.asked.take() {
		return nil, errors.New(tooManyAsked("sampling/createMessage"))
	}
	defer fl.asked.done()
	return u.sample(fl.ctx, ctx, fl.ss, req.Params)
}

// sample answers a sampling request through down, the client of the tool
// call whose context is callCtx, as a model frame under that call; it ends
// when either context does.
func (u *upstream) sample(callCtx, reqCtx context.Context, down *mcp.ServerSession, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if down == nil || !CanSample(down) || down.InitializeParams().Capabilities.Sampling == nil {
		return nil, notAsked(callCtx, down, "sampling requests")
	}
	if err := checkSampling(params); err != nil {
		return nil, err
	}
	p := *params
	u.samplingEmbedsAllowed(callCtx, p.Messages)
	if !u.p.maskSampling(&p) { // before the model frame is named by a hint
		return nil, errors.New("reach did not relay this sampling request: " + unmaskableText + "; send it without the secret")
	}
	model := samplingModel(&p)
	mctx, mf, err := u.p.models.BeginModel(callCtx, model)
	if err != nil {
		return nil, fmt.Errorf("reach refused the model call: %w", err)
	}
	p.Meta = link.FrameMeta(maps.Clone(p.Meta), mf)
	sctx, stop := onStream(callCtx, mctx, reqCtx)
	defer stop()
	res, err := down.CreateMessage(sctx, &p)
	if err != nil {
		mf.FailModel(err)
		return nil, err
	}
	use := usageFromMeta(res.Meta)
	if res.Model != "" && res.Model != model {
		// The hint was a preference: the answer is charged at the price of
		// the model the client says gave it.
		use.Model = res.Model
	}
	if tc, ok := res.Content.(*mcp.TextContent); ok {
		use.Text = tc.Text
	}
	mf.EndModel(use)
	return res, nil
}

// checkSampling refuses a sampling request with a null where a message or
// its content must be: passed on, it crashed the client (the Go SDK's
// reads each message's content), and no model could answer it.
func checkSampling(p *mcp.CreateMessageParams) error {
	for i, m := range p.Messages {
		if m == nil || m.Content == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("reach could not read the sampling request: its message %d has no content; send each message with its role and content", i)}
		}
	}
	return nil
}

// samplingModel names the model frame of a sampling request: its first
// model hint, else "sampling". A hint may be null ({"hints":[null]}).
func samplingModel(p *mcp.CreateMessageParams) string {
	if mp := p.ModelPreferences; mp != nil && len(mp.Hints) > 0 && mp.Hints[0] != nil && mp.Hints[0].Name != "" {
		return mp.Hints[0].Name
	}
	return "sampling"
}

// onStream returns a context for a request the gateway sends during the
// call of callCtx: on that call's stream, ended when either end does.
func onStream(callCtx, end1, end2 context.Context) (context.Context, func()) {
	c1, stop1 := link.MergeCancel(routeOf(callCtx), end1)
	if end2 == end1 {
		return c1, stop1
	}
	c2, stop2 := link.MergeCancel(c1, end2)
	return c2, func() { stop2(); stop1() }
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
	if lvl, ok := u.p.levels.Level(down); ok {
		u.passLevel(ctx, cs, lvl)
	}
	if v, loaded := u.own.LoadOrStore(down, cs); loaded {
		go cs.Close()
		return v.(*mcp.ClientSession), nil
	}
	u.owner.Store(cs, &ownedBy{ss: down, relay: &relay{}})
	go func() {
		down.Wait()
		u.own.CompareAndDelete(down, cs)
		cs.Close()
	}()
	go func() {
		cs.Wait()
		u.own.CompareAndDelete(down, cs)
		u.owner.Delete(cs)
	}()
	return cs, nil
}

// ownedBy is the downstream session whose own upstream session one is
// (sessionFor), with the queue that passes on, in order, what the upstream
// sends on it outside any call.
type ownedBy struct {
	ss    *mcp.ServerSession
	relay *relay
}

// ownerOf returns the downstream session whose own session cs is, if it
// is one.
func (u *upstream) ownerOf(cs *mcp.ClientSession) *ownedBy {
	if v, ok := u.owner.Load(cs); ok {
		return v.(*ownedBy)
	}
	return nil
}

// closeOwn closes the sessions kept for downstream sessions.
func (u *upstream) closeOwn() {
	u.own.Range(func(k, v any) bool {
		u.own.Delete(k)
		v.(*mcp.ClientSession).Close()
		return true
	})
}

// onLog passes an upstream's log message that came through the SDK client
// (an upstream on the sessionless protocol), sent while one of its tool
// calls is in flight, to the client that made that call.
func (u *upstream) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	u.relayLog(req.Session, req.Params)
}

// relayLog passes a log message from the upstream session cs to the client
// of the call it belongs to, on that call's stream; the client's own
// logging level decides whether it is sent.
//
// On a client's own session (sessionFor) a message that belongs to no
// call in flight goes to that client too, outside any call's stream: the
// session serves no one else, and what the upstream logs on it, such as
// the messages of a logging it turned on for its session, is that
// client's. Before, such a message was dropped once the call that turned
// it on had ended. On a shared session it still is: it may be another
// client's.
func (u *upstream) relayLog(cs *mcp.ClientSession, p *mcp.LoggingMessageParams) {
	fl := u.open.find(cs, p.Meta, hasSession)
	if fl == nil {
		o := u.ownerOf(cs)
		if o == nil {
			return
		}
		if p = u.p.maskLog(p); p == nil {
			return
		}
		o.relay.push(func() {
			ctx, cancel := context.WithTimeout(u.p.life, u.timeout())
			defer cancel()
			if err := o.ss.Log(ctx, p); err != nil {
				u.log.Debug("passing a log message on failed", "err", err)
			}
		})
		return
	}
	if p = u.p.maskLog(p); p == nil {
		return
	}
	fl.relay.push(func() {
		if err := fl.ss.Log(routeOf(fl.ctx), p); err != nil {
			u.log.Debug("passing a log message on failed", "err", err)
		}
	})
}

// passLevel sets the logging level of an upstream session, when the
// upstream logs.
func (u *upstream) passLevel(ctx context.Context, cs *mcp.ClientSession, level mcp.LoggingLevel) {
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		u.log.Debug("logging level not passed upstream", "err", err)
	}
}
