package gateway

import (
	"context"
	"errors"
	"strings"

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

// mirrored is what an upstream's mirror put on the gateway's server.
type mirrored struct {
	resources, templates, prompts map[string]bool // URIs, URI templates, exposed names
}

// mirror puts the upstream's resources, resource templates and prompts on
// the gateway's server, and takes off those it put there before that the
// upstream no longer lists. A list that fails keeps what it had.
func (u *upstream) mirror(ctx context.Context) {
	u.mirrorMu.Lock()
	defer u.mirrorMu.Unlock()
	cs, err := u.session(ctx)
	if err != nil {
		return
	}
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		return
	}
	g, old := u.g, u.mirrored
	now := mirrored{resources: map[string]bool{}, templates: map[string]bool{}, prompts: map[string]bool{}}
	if caps.Resources != nil {
		if res, err := cs.ListResources(ctx, nil); err == nil {
			for _, r := range res.Resources {
				g.server.AddResource(r, u.readResource)
				now.resources[r.URI] = true
			}
		} else {
			now.resources = old.resources
		}
		if res, err := cs.ListResourceTemplates(ctx, nil); err == nil {
			for _, t := range res.ResourceTemplates {
				g.server.AddResourceTemplate(t, u.readResource)
				now.templates[t.URITemplate] = true
			}
		} else {
			now.templates = old.templates
		}
	}
	if caps.Prompts != nil {
		if res, err := cs.ListPrompts(ctx, nil); err == nil {
			for _, p := range res.Prompts {
				exposed := *p
				exposed.Name = u.prefix() + p.Name
				g.server.AddPrompt(&exposed, u.getPrompt(p.Name))
				now.prompts[exposed.Name] = true
			}
		} else {
			now.prompts = old.prompts
		}
	}
	if gone := dropped(old.resources, now.resources); len(gone) > 0 {
		g.server.RemoveResources(gone...)
	}
	if gone := dropped(old.templates, now.templates); len(gone) > 0 {
		g.server.RemoveResourceTemplates(gone...)
	}
	if gone := dropped(old.prompts, now.prompts); len(gone) > 0 {
		g.server.RemovePrompts(gone...)
	}
	u.mirrored = now
}

// dropped returns the keys of old that now lacks.
func dropped(old, now map[string]bool) []string {
	var out []string
	for k := range old {
		if !now[k] {
			out = append(out, k)
		}
	}
	return out
}

// remirror mirrors the upstream again after it said its resources or
// prompts changed.
func (u *upstream) remirror() {
	select { // a change announced while the gateway is being built is seen by the build
	case <-u.g.ready:
	case <-u.g.ctx.Done():
		return
	}
	u.mirror(u.g.ctx)
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
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri, ss := req.Params.URI, req.Session
	for _, u := range g.upstreams {
		if u.subscribers(uri) > 0 {
			u.subscribe(uri, ss)
			return nil // the upstream sends this resource's updates already
		}
	}
	return g.eachSubscribable(ctx, func(u *upstream, cs *mcp.ClientSession) error {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{Meta: upstreamMeta(req.Params.Meta), URI: uri}); err != nil {
			return err
		}
		u.subscribe(uri, ss)
		return nil
	})
}

// unsubscribe ends a client's subscription, and the upstream's when no
// other client has one.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	for _, u := range g.upstreams {
		had, left := u.unsubscribe(req.Params.URI, req.Session)
		if !had {
			continue
		}
		if left > 0 {
			return nil // other clients still want its updates
		}
		cs, err := u.session(ctx)
		if err != nil {
			return err
		}
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{Meta: upstreamMeta(req.Params.Meta), URI: req.Params.URI})
	}
	return nil // it had no subscription to end; other clients' stay
}

// subscribers counts the clients subscribed to uri through u.
func (u *upstream) subscribers(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.subs[uri])
}

// subscribe records that ss subscribed to uri through u; the record goes
// when ss ends.
func (u *upstream) subscribe(uri string, ss *mcp.ServerSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.subs == nil {
		u.subs = map[string]map[*mcp.ServerSession]bool{}
	}
	if u.subs[uri] == nil {
		u.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	if u.subs[uri][ss] {
		return
	}
	u.subs[uri][ss] = true
	go func() {
		ss.Wait()
		u.g.unsubscribe(u.g.ctx, &mcp.UnsubscribeRequest{Session: ss, Params: &mcp.UnsubscribeParams{URI: uri}})
	}()
}

// unsubscribe forgets that ss subscribed to uri through u: whether it had,
// and how many clients still have.
func (u *upstream) unsubscribe(uri string, ss *mcp.ServerSession) (had bool, left int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.subs[uri][ss] {
		return false, len(u.subs[uri])
	}
	delete(u.subs[uri], ss)
	left = len(u.subs[uri])
	if left == 0 {
		delete(u.subs, uri)
	}
	return true, left
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
