package gateway

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway guards tool calls. Resources, resource templates, prompts and
// completions of the upstreams are passed through as they are: listed by the
// gateway's MCP server (prompts under the upstream's prefix, like tools),
// their reads and gets forwarded to the upstream that has them.

// mirror adds every connected upstream's resources, resource templates and
// prompts to the gateway's MCP server.
func (g *Gateway) mirror(ctx context.Context) {
	for _, u := range g.upstreams {
		u.mirror(ctx)
	}
}

// mirrored is what an upstream's mirror put on the gateway's server, by
// URI, URI template and exposed prompt name.
type mirrored struct {
	resources map[string]*mcp.Resource
	templates map[string]*mcp.ResourceTemplate
	prompts   map[string]*mcp.Prompt // as exposed (under the upstream's prefix)
}

// mirror puts the upstream's resources, resource templates and prompts on
// the gateway's server, and takes off those it put there before that the
// upstream no longer lists (unless another upstream lists them: they are
// then that one's). A list that fails, or takes longer than the
// upstream's timeout, keeps what it had.
func (u *upstream) mirror(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, u.timeout())
	defer cancel()
	cs, err := u.session(lctx)
	if err != nil {
		return
	}
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{} // it offers nothing (any more)
	}
	g := u.g
	g.mirrorMu.Lock()
	old := u.mirrored
	g.mirrorMu.Unlock()
	var now mirrored // what the upstream no longer offers goes; a list that fails keeps what it had
	if caps.Resources != nil {
		now.resources, now.templates = old.resources, old.templates
		if res, err := cs.ListResources(lctx, nil); err == nil {
			now.resources = map[string]*mcp.Resource{}
			for _, r := range res.Resources {
				now.resources[r.URI] = r
			}
		}
		if res, err := cs.ListResourceTemplates(lctx, nil); err == nil {
			now.templates = map[string]*mcp.ResourceTemplate{}
			for _, t := range res.ResourceTemplates {
				now.templates[t.URITemplate] = t
			}
		}
	}
	if caps.Prompts != nil {
		now.prompts = old.prompts
		if res, err := cs.ListPrompts(lctx, nil); err == nil {
			now.prompts = map[string]*mcp.Prompt{}
			for _, p := range res.Prompts {
				exposed := *p
				exposed.Name = u.prefix() + p.Name
				now.prompts[exposed.Name] = &exposed
			}
		}
	}
	g.mirrorMu.Lock()
	defer g.mirrorMu.Unlock()
	for _, r := range now.resources {
		g.server.AddResource(r, u.readResource)
	}
	for _, t := range now.templates {
		g.server.AddResourceTemplate(t, u.readResource)
	}
	for name, p := range now.prompts {
		g.server.AddPrompt(p, u.getPrompt(strings.TrimPrefix(name, u.prefix())))
	}
	for uri := range old.resources {
		if now.resources[uri] == nil {
			if o := g.otherMirror(u, func(m mirrored) bool { return m.resources[uri] != nil }); o != nil {
				g.server.AddResource(o.mirrored.resources[uri], o.readResource)
			} else {
				g.server.RemoveResources(uri)
			}
		}
	}
	for tmpl := range old.templates {
		if now.templates[tmpl] == nil {
			if o := g.otherMirror(u, func(m mirrored) bool { return m.templates[tmpl] != nil }); o != nil {
				g.server.AddResourceTemplate(o.mirrored.templates[tmpl], o.readResource)
			} else {
				g.server.RemoveResourceTemplates(tmpl)
			}
		}
	}
	for name := range old.prompts {
		if now.prompts[name] == nil {
			if o := g.otherMirror(u, func(m mirrored) bool { return m.prompts[name] != nil }); o != nil {
				g.server.AddPrompt(o.mirrored.prompts[name], o.getPrompt(strings.TrimPrefix(name, o.prefix())))
			} else {
				g.server.RemovePrompts(name)
			}
		}
	}
	u.mirrored = now
}

// otherMirror returns an upstream other than u whose mirror has what has
// says, or nil; g.mirrorMu is held.
func (g *Gateway) otherMirror(u *upstream, has func(mirrored) bool) *upstream {
	for _, o := range g.upstreams {
		if o != u && has(o.mirrored) {
			return o
		}
	}
	return nil
}

// remirror mirrors the upstream again after it said its resources or
// prompts changed. Changes announced while a mirror runs are folded into
// one more.
func (u *upstream) remirror() {
	select { // a change announced while the gateway is being built is seen by the build
	case <-u.g.ready:
	case <-u.g.ctx.Done():
		return
	}
	u.mu.Lock()
	if u.mirroring {
		u.mirrorAgain = true
		u.mu.Unlock()
		return
	}
	u.mirroring = true
	u.mu.Unlock()
	for {
		u.mirror(u.g.ctx)
		u.mu.Lock()
		if !u.mirrorAgain {
			u.mirroring = false
			u.mu.Unlock()
			return
		}
		u.mirrorAgain = false
		u.mu.Unlock()
	}
}

func (u *upstream) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	p := *req.Params
	p.Meta = upstreamMeta(p.Meta)
	return cs.ReadResource(ctx, &p)
}

// upstreamMeta returns a client's _meta without the keys of its protocol
// (io.modelcontextprotocol/..., which name its protocol version, say): the
// gateway's session with the upstream has a protocol of its own, and an
// upstream refuses a request that names another.
func upstreamMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

func (u *upstream) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		cs, err := u.session(ctx)
		if err != nil {
			return nil, err
		}
		p := *req.Params
		p.Name = name
		p.Meta = upstreamMeta(p.Meta)
		return cs.GetPrompt(ctx, &p)
	}
}

// upstreamFor finds the upstream a completion or subscription is about: by
// a prompt's prefixed name, or by trying each upstream for a resource.
func (g *Gateway) upstreamsFor(prompt string) []*upstream {
	var out []*upstream
	for _, u := range g.upstreams {
		if prompt == "" || strings.HasPrefix(prompt, u.prefix()) {
			out = append(out, u)
		}
	}
	return out
}

// complete forwards completion/complete to the upstream of the reference.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	p.Meta = upstreamMeta(p.Meta)
	prompt := ""
	if p.Ref != nil && p.Ref.Type == "ref/prompt" {
		prompt = p.Ref.Name
	}
	var last error = errors.New("no upstream completes this reference")
	for _, u := range g.upstreamsFor(prompt) {
		cs, err := u.session(ctx)
		if err != nil {
			last = err
			continue
		}
		if c := cs.InitializeResult().Capabilities; c == nil || c.Completions == nil {
			continue
		}
		q := p
		if prompt != "" {
			ref := *p.Ref
			ref.Name = strings.TrimPrefix(prompt, u.prefix())
			q.Ref = &ref
		}
		res, err := cs.Complete(ctx, &q)
		if err == nil {
			return res, nil
		}
		last = err
	}
	return nil, last
}

// subscribe subscribes the upstream to a resource for a client. The
// upstream's session is shared: it is subscribed when the first client
// subscribes, and unsubscribed when the last one unsubscribes or leaves.
// The changes of one resource's subscriptions happen one at a time
// (lockURI, held across the upstream's answer, which the upstream's
// timeout bounds), so that an unsubscribe on its way never ends one that
// a subscribe just counted on; other resources' do not wait.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri, ss := req.Params.URI, req.Session
	defer g.lockURI(uri)()
	g.subMu.Lock()
	for _, u := range g.upstreams {
		if len(u.subs[uri]) > 0 {
			u.addSubLocked(uri, ss)
			g.subMu.Unlock()
			return nil // the upstream sends this resource's updates already
		}
	}
	g.subMu.Unlock()
	return g.eachSubscribable(ctx, func(u *upstream, cs *mcp.ClientSession) error {
		sctx, cancel := context.WithTimeout(ctx, u.timeout())
		defer cancel()
		if err := cs.Subscribe(sctx, &mcp.SubscribeParams{Meta: upstreamMeta(req.Params.Meta), URI: uri}); err != nil {
			return err
		}
		g.subMu.Lock()
		u.addSubLocked(uri, ss)
		g.subMu.Unlock()
		return nil
	})
}

// unsubscribe ends a client's subscription, and the upstream's when no
// other client has one.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	defer g.lockURI(req.Params.URI)()
	return g.unsubscribeURI(ctx, req.Params.URI, req.Session, upstreamMeta(req.Params.Meta))
}

// unsubscribeURI ends ss's subscription to uri; its lockURI is held.
func (g *Gateway) unsubscribeURI(ctx context.Context, uri string, ss *mcp.ServerSession, meta mcp.Meta) error {
	g.subMu.Lock()
	var last *upstream
	for _, u := range g.upstreams {
		if !u.subs[uri][ss] {
			continue
		}
		delete(u.subs[uri], ss)
		if len(u.subs[uri]) == 0 {
			delete(u.subs, uri)
			last = u
		}
		break
	}
	g.subMu.Unlock()
	if last == nil {
		return nil // it had no subscription to end, or other clients' stay
	}
	cs, err := last.session(ctx)
	if err != nil {
		return err
	}
	uctx, cancel := context.WithTimeout(ctx, last.timeout())
	defer cancel()
	return cs.Unsubscribe(uctx, &mcp.UnsubscribeParams{Meta: meta, URI: uri})
}

// lockURI serializes the subscription changes of one resource: it waits
// for the others' to end and returns the unlock.
func (g *Gateway) lockURI(uri string) func() {
	g.subMu.Lock()
	l := g.uriLocks[uri]
	if l == nil {
		if g.uriLocks == nil {
			g.uriLocks = map[string]*uriLock{}
		}
		l = &uriLock{}
		g.uriLocks[uri] = l
	}
	l.refs++
	g.subMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		g.subMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(g.uriLocks, uri)
		}
		g.subMu.Unlock()
	}
}

type uriLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by g.subMu
}

// addSubLocked records that ss subscribed to uri through u; g.subMu is
// held. The first subscription of a client starts the one watcher that
// ends its subscriptions when it leaves.
func (u *upstream) addSubLocked(uri string, ss *mcp.ServerSession) {
	g := u.g
	if u.subs == nil {
		u.subs = map[string]map[*mcp.ServerSession]bool{}
	}
	if u.subs[uri] == nil {
		u.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	u.subs[uri][ss] = true
	if g.subWatched == nil {
		g.subWatched = map[*mcp.ServerSession]bool{}
	}
	if g.subWatched[ss] {
		return
	}
	g.subWatched[ss] = true
	go func() {
		ss.Wait()
		g.subMu.Lock()
		delete(g.subWatched, ss)
		var uris []string
		for _, u := range g.upstreams {
			for uri, by := range u.subs {
				if by[ss] {
					uris = append(uris, uri)
				}
			}
		}
		g.subMu.Unlock()
		for _, uri := range uris {
			unlock := g.lockURI(uri)
			g.unsubscribeURI(g.ctx, uri, ss, nil)
			unlock()
		}
	}()
}

// resubscribe subscribes a new session of the upstream (after a restart)
// to the resources its clients are subscribed to: the old session's
// subscriptions went with it.
func (u *upstream) resubscribe(cs *mcp.ClientSession) {
	g := u.g
	g.subMu.Lock()
	uris := slices.Collect(maps.Keys(u.subs))
	g.subMu.Unlock()
	for _, uri := range uris {
		unlock := g.lockURI(uri)
		g.subMu.Lock()
		still := len(u.subs[uri]) > 0
		g.subMu.Unlock()
		if still {
			ctx, cancel := context.WithTimeout(g.ctx, u.timeout())
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				u.log.Warn("subscribing the new session again failed; its clients get no updates of the resource", "uri", uri, "err", err)
			}
			cancel()
		}
		unlock()
	}
}

// eachSubscribable tries f on every upstream that takes resource
// subscriptions until one succeeds.
func (g *Gateway) eachSubscribable(ctx context.Context, f func(*upstream, *mcp.ClientSession) error) error {
	var last error = errors.New("no upstream serves this resource")
	for _, u := range g.upstreams {
		cs, err := u.session(ctx)
		if err != nil {
			last = err
			continue
		}
		if c := cs.InitializeResult().Capabilities; c == nil || c.Resources == nil || !c.Resources.Subscribe {
			continue
		}
		if last = f(u, cs); last == nil {
			return nil
		}
	}
	return last
}

// upstreamsComplete reports whether some upstream answers completions.
func (g *Gateway) upstreamsComplete() bool {
	for _, u := range g.upstreams {
		if c := u.capabilities(); c != nil && c.Completions != nil {
			return true
		}
	}
	return false
}

// upstreamsSubscribe reports whether some upstream takes resource subscriptions.
func (g *Gateway) upstreamsSubscribe() bool {
	for _, u := range g.upstreams {
		if c := u.capabilities(); c != nil && c.Resources != nil && c.Resources.Subscribe {
			return true
		}
	}
	return false
}

// capabilities returns what the upstream declared, if it is connected.
func (u *upstream) capabilities() *mcp.ServerCapabilities {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil || cs.InitializeResult() == nil {
		return nil
	}
	return cs.InitializeResult().Capabilities
}
