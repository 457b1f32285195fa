package gateway

import (
	"slices"
	"strings"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/policy"
)

// Permissions (P1-P3, P5). With auth configured, every endpoint but
// /healthz needs an API key (keys.json in the data folder) or a bearer JWT;
// the requests a client works in carry its principal, roles, tenant and
// department, and nobody may join another principal's request. The Cedar
// policies (policy.path, or the shipped defaults when auth is on) decide
// every call, and a principal is shown only the tools it could call, at
// most 50 (tools/list and GET /v1/tools).

// authenticator builds the authenticator the configuration asks for, or
// nil.
func (g *Gateway) authenticator() (*auth.Authenticator, error) {
	a := g.cfg.Auth
	if !g.cfg.Authenticates() {
		return nil, nil
	}
	opts := &auth.Options{Logger: g.log.With("component", "auth")}
	if a.Keys {
		dir, err := g.cfg.EnsureDataDir()
		if err != nil {
			return nil, err
		}
		keys, err := auth.OpenKeys(auth.KeysPath(dir))
		if err != nil {
			return nil, g.cfg.Errorf([]any{"auth", "keys"}, "auth: %v", err)
		}
		opts.Keys = keys
	}
	if j := a.JWT; j != nil {
		jwks := j.JWKS
		remote := strings.HasPrefix(jwks, "http://") || strings.HasPrefix(jwks, "https://")
		if !remote {
			jwks = g.cfg.Path(jwks)
		}
		v, err := auth.NewVerifier(&auth.JWTOptions{JWKS: jwks, Issuer: j.Issuer, Audience: j.Audience,
			PrincipalClaim: j.Claims.Principal, RolesClaim: j.Claims.Roles, TenantClaim: j.Claims.Tenant, DepartmentClaim: j.Claims.Department})
		if err != nil {
			return nil, g.cfg.Errorf([]any{"auth", "jwt"}, "auth: jwt: %v", err)
		}
		// Read the key set now: a missing or broken one fails here, with
		// its line, not as a 401 for every token (offline, a URL is not
		// fetched).
		if !remote || !g.opts.Offline {
			if err := v.Refresh(g.ctx); err != nil {
				return nil, g.cfg.Errorf([]any{"auth", "jwt"}, "auth: %v; check auth.jwt.jwks", err)
			}
		}
		opts.JWT = v
	}
	return auth.New(opts), nil
}

// authorizer sets up the policy engine when policies are configured or
// clients authenticate (otherwise the runtime decides by access level).
func (g *Gateway) authorizer(ro *reach.Options) error {
	if g.cfg.Policy == nil && g.authn == nil {
		return nil
	}
	g.policy = policy.New(&policy.Options{Tools: func() []reach.Tool { return g.rt.Tools() }, Logger: g.log.With("component", "policy")})
	if p := g.cfg.Policy; p != nil && p.Path != "" {
		w, err := policy.NewWatcher(g.policy, g.cfg.Path(p.Path), &policy.WatchOptions{Logger: g.log.With("component", "policy"),
			OnError: func(err error) { g.log.Warn("policies not reloaded; the previous ones stay in force", "err", err) },
			OnReload: func(s *policy.Set) {
				g.log.Info("policies reloaded", "policies", s.Len())
			}})
		if err != nil {
			return g.cfg.Errorf([]any{"policy", "path"}, "policy: %v", err)
		}
		go w.Run(g.ctx)
	}
	ro.Authorizer = g.policy
	return nil
}

// principal is the policies' view of a caller (the local user without auth).
func principalFor(id *auth.Identity) policy.Principal {
	if id == nil {
		return policy.Principal{ID: link.LocalPrincipal}
	}
	return policy.Principal{ID: id.Principal, Roles: id.Roles, Tenant: id.Tenant, Attributes: id.Attributes}
}

// Visible returns the tools the caller id could call, at most 50, or every
// listed tool without policies.
func (g *Gateway) Visible(id *auth.Identity) []reach.Tool {
	tools := g.rt.Tools()
	tools = slices.DeleteFunc(tools, func(t reach.Tool) bool { return t.Access == reach.Forbidden || g.awaitingApproval(t.Name) })
	if g.policy == nil {
		return tools
	}
	return g.policy.Filter(principalFor(id), "", tools, nil)
}

// Narrows reports whether Visible may leave out tools the MCP server
// lists: policies decide who sees what, or a tool is held.
func (g *Gateway) Narrows() bool { return g.policy != nil || g.anyAwaitingApproval() }

// awaitingApproval reports whether a tool is held: its changed definition
// waits for approval (pinning).
func (g *Gateway) awaitingApproval(name string) bool {
	_, ok := g.awaiting.Load(name)
	return ok
}

// anyAwaitingApproval reports whether any tool is held.
func (g *Gateway) anyAwaitingApproval() bool {
	found := false
	g.awaiting.Range(func(_, _ any) bool { found = true; return false })
	return found
}
