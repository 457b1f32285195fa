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
		cs, err := u.session(ctx)
		if err != nil {
			continue
		}
		caps := cs.InitializeResult().Capabilities
		if caps == nil {
			continue
		}
		if caps.Resources != nil {
			if res, err := cs.ListResources(ctx, nil); err == nil {
				for _, r := range res.Resources {
					g.server.AddResource(r, u.readResource)
				}
			}
			if res, err := cs.ListResourceTemplates(ctx, nil); err == nil {
				for _, t := range res.ResourceTemplates {
					g.server.AddResourceTemplate(t, u.readResource)
				}
			}
		}
		if caps.Prompts != nil {
			if res, err := cs.ListPrompts(ctx, nil); err == nil {
				for _, p := range res.Prompts {
					exposed := *p
					exposed.Name = u.prefix() + p.Name
					g.server.AddPrompt(&exposed, u.getPrompt(p.Name))
				}
			}
		}
	}
}

func (u *upstream) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	return cs.ReadResource(ctx, req.Params)
}

func (u *upstream) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		cs, err := u.session(ctx)
		if err != nil {
			return nil, err
		}
		p := *req.Params
		p.Name = name
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

func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	return g.eachSubscribable(ctx, func(cs *mcp.ClientSession) error { return cs.Subscribe(ctx, req.Params) })
}

func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return g.eachSubscribable(ctx, func(cs *mcp.ClientSession) error { return cs.Unsubscribe(ctx, req.Params) })
}

// eachSubscribable tries f on every upstream that takes resource
// subscriptions until one succeeds.
func (g *Gateway) eachSubscribable(ctx context.Context, f func(*mcp.ClientSession) error) error {
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
		if last = f(cs); last == nil {
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
