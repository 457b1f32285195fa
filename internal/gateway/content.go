package gateway

import (
	"context"
	"net/http"
	"slices"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/upstream"
)

// An upstream's resources, resource templates, prompts and completions go
// through the policies as tool calls do, when policies are in force (auth
// or a policy file; without either, they pass through, as every tool
// call's access level decides alone). Each read, get, completion and
// subscription is one policy.Ask (upstream.Guard), denied unless a permit
// applies; a refusal is a JSON-RPC error (codeRefused) that names what was
// refused and the policy that would allow it, and the upstream is not
// asked. The listings (resources/list, resources/templates/list,
// prompts/list) leave out what the caller may not read or get, as
// tools/list leaves out the tools it may not call. A refusal is logged; it
// is no audit event, as a read is not: the audit log records runs of tool
// calls, and nothing of a resource read changes anything.

// codeRefused is the JSON-RPC error code of a refused resource read,
// prompt get, completion or subscription.
const codeRefused = -32010

// contentGuard is the pool's Guard under the policies in force.
func (g *Gateway) contentGuard(ctx context.Context, req mcp.Request, a upstream.Asked) error {
	p := g.askerOf(ctx, req)
	ask := askOf(a)
	r := g.policy.Ask(p, ask)
	if r.Decision == reach.Permit {
		return nil
	}
	msg := policy.Refusal(p, ask, r)
	g.log.Info("refused", "principal", p.ID, "action", a.Action, "name", g.redactor.RedactString(a.Name), "upstream", a.Upstream, "policies", r.Policies, "errors", r.Errors)
	return &jsonrpc.Error{Code: codeRefused, Message: g.redactor.RedactString(msg)}
}

func askOf(a upstream.Asked) policy.Ask {
	ask := policy.Ask{Type: policy.ResourceType, Name: a.Name, Upstream: a.Upstream}
	if a.Prompt {
		ask.Type = policy.PromptType
	}
	switch a.Action {
	case "get_prompt":
		ask.Action = policy.GetPromptAction
	case "complete":
		ask.Action = policy.CompleteAction
	default:
		ask.Action = policy.ReadResourceAction
	}
	return ask
}

// identityOf returns who sent an MCP request: the identity in ctx, or the
// one its HTTP headers authenticate (the SDK runs some handlers without
// the HTTP request's context); nil without auth.
func (g *Gateway) identityOf(ctx context.Context, req mcp.Request) *auth.Identity {
	if id, ok := auth.IdentityFrom(ctx); ok {
		return id
	}
	if g.authn == nil || req == nil || req.GetExtra() == nil || req.GetExtra().Header == nil {
		return nil
	}
	id, err := g.authn.Authenticate(&http.Request{Header: req.GetExtra().Header})
	if err != nil {
		return nil
	}
	return id
}

// askerOf is who the policies see sending req: the local user without
// auth, and nobody ("anonymous") when auth is on and no identity is found.
// Without req (a resource embedded in a tool's result), it is the
// principal of the request the call in ctx belongs to, whose credentials
// the call was authorized for.
func (g *Gateway) askerOf(ctx context.Context, req mcp.Request) policy.Principal {
	if req == nil {
		if r, ok := reach.RequestFrom(ctx); ok {
			return policy.PrincipalOf(r)
		}
	}
	id := g.identityOf(ctx, req)
	if id == nil && g.authn != nil {
		return policy.Principal{ID: "anonymous"}
	}
	return principalFor(id)
}

// filterContent is the MCP server's middleware that narrows the listings of
// resources, resource templates and prompts to what the caller may use.
func (g *Gateway) filterContent(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch res.(type) {
		case *mcp.ListResourcesResult, *mcp.ListResourceTemplatesResult, *mcp.ListPromptsResult:
		default:
			return res, err
		}
		who := g.askerOf(ctx, req)
		allows := func(action types.EntityUID, typ types.EntityType, name string, prompt bool) bool {
			return g.policy.Allows(who,
				policy.Ask{Action: action, Type: typ, Name: name, Upstream: g.pool.Owner(prompt, name)})
		}
		switch r := res.(type) {
		case *mcp.ListResourcesResult:
			out := *r
			out.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(x *mcp.Resource) bool {
				return !allows(policy.ReadResourceAction, policy.ResourceType, x.URI, false)
			})
			return &out, nil
		case *mcp.ListResourceTemplatesResult:
			out := *r
			out.ResourceTemplates = slices.DeleteFunc(slices.Clone(r.ResourceTemplates), func(x *mcp.ResourceTemplate) bool {
				return !allows(policy.ReadResourceAction, policy.ResourceType, x.URITemplate, false)
			})
			return &out, nil
		case *mcp.ListPromptsResult:
			out := *r
			out.Prompts = slices.DeleteFunc(slices.Clone(r.Prompts), func(x *mcp.Prompt) bool {
				return !allows(policy.GetPromptAction, policy.PromptType, x.Name, true)
			})
			return &out, nil
		}
		return res, err
	}
}
