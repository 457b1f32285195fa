package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	// Open without credentials: health and the probes (the UI, and the
	// redirect of GET / to it, are served before this: uiSignsIn).
	opts := &auth.Options{Logger: g.log.With("component", "auth"), Open: []string{"/healthz", "/livez", "/readyz"}}
	if a.Keys {
		dir, err := g.cfg.EnsureDataDir()
		if err != nil {
			return nil, err
		}
		keys, err := auth.OpenKeys(auth.KeysPath(dir))
		if err != nil {
			return nil, g.cfg.errorf([]any{"auth", "keys"}, "auth: %v", err)
		}
		opts.Keys = keys
	}
	if j := a.JWT; j != nil {
		jwks := j.JWKS
		remote := strings.HasPrefix(jwks, "http://") || strings.HasPrefix(jwks, "https://")
		if !remote {
			jwks = g.cfg.path(jwks)
		}
		v, err := auth.NewVerifier(&auth.JWTOptions{JWKS: jwks, Issuer: j.Issuer, Audience: j.Audience,
			PrincipalClaim: j.Claims.Principal, RolesClaim: j.Claims.Roles, TenantClaim: j.Claims.Tenant, DepartmentClaim: j.Claims.Department})
		if err != nil {
			return nil, g.cfg.errorf([]any{"auth", "jwt"}, "auth: jwt: %v", err)
		}
		// Read the key set now: a missing or broken one fails here, with
		// its line, not as a 401 for every token (offline, a URL is not
		// fetched).
		if !remote || !g.opts.Offline {
			if err := v.Refresh(g.ctx); err != nil {
				return nil, g.cfg.errorf([]any{"auth", "jwt"}, "auth: %v; check auth.jwt.jwks", err)
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
		w, err := policy.NewWatcher(g.policy, g.cfg.path(p.Path), &policy.WatchOptions{Logger: g.log.With("component", "policy"),
			OnError: func(err error) { g.log.Warn("policies not reloaded; the previous ones stay in force", "err", err) },
			OnReload: func(s *policy.Set) {
				g.log.Info("policies reloaded", "policies", s.Len())
			}})
		if err != nil {
			return g.cfg.errorf([]any{"policy", "path"}, "policy: %v", err)
		}
		go w.Run(g.ctx)
	}
	ro.Authorizer = g.policy
	return nil
}

// identityOf returns who makes a call: the identity the auth middleware
// put in ctx, or, for MCP messages the SDK handles, the one their HTTP
// headers authenticate.
func (g *Gateway) identityOf(ctx context.Context, h http.Header) *auth.Identity {
	if id, ok := auth.IdentityFrom(ctx); ok {
		return id
	}
	if g.authn == nil || h == nil {
		return nil
	}
	id, err := g.authn.Authenticate(&http.Request{Header: h})
	if err != nil {
		return nil
	}
	return id
}

// principal is the policies' view of a caller (the local user without auth).
func principalFor(id *auth.Identity) policy.Principal {
	if id == nil {
		return policy.Principal{ID: localPrincipal}
	}
	return policy.Principal{ID: id.Principal, Roles: id.Roles, Tenant: id.Tenant, Attributes: id.Attributes}
}

// visibleTools returns the tools the caller could call, at most 50, or
// every listed tool without policies.
func (g *Gateway) visibleTools(id *auth.Identity) []reach.Tool {
	tools := g.rt.Tools()
	tools = slices.DeleteFunc(tools, func(t reach.Tool) bool { return t.Access == reach.Forbidden || g.held(t.Name) })
	if g.policy == nil {
		return tools
	}
	return g.policy.Filter(principalFor(id), "", tools, nil)
}

// filterList narrows an MCP tools/list answer to what the caller may see.
func (g *Gateway) filterList(ctx context.Context, req mcp.Request, res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || (g.policy == nil && !g.anyHeld()) {
		return res
	}
	var h http.Header
	if ex := req.GetExtra(); ex != nil {
		h = ex.Header
	}
	vis := map[string]bool{}
	for _, t := range g.visibleTools(g.identityOf(ctx, h)) {
		vis[t.Name] = true
	}
	out := *lr
	out.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool { return !vis[t.Name] })
	return &out
}

// toolView is a tool in GET /v1/tools.
type toolView struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Access      reach.Access `json:"access"`
	InputSchema any          `json:"input_schema,omitempty"`
}

// listTools is GET /v1/tools: the tools the caller may call, at most 50.
func (g *Gateway) listTools(w http.ResponseWriter, r *http.Request) {
	tools := g.visibleTools(g.identityOf(r.Context(), nil))
	if len(tools) > 50 {
		tools = tools[:50]
	}
	out := make([]toolView, 0, len(tools))
	for _, t := range tools {
		v := toolView{Name: t.Name, Description: t.Description, Access: t.Access}
		if len(t.InputSchema) > 0 {
			v.InputSchema = json.RawMessage(t.InputSchema)
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}

// operatorRole is the role whose principals see and stop every request and
// handle dead letters, when the gateway authenticates; everyone else sees
// and stops their own requests only.
const operatorRole = "operator"

// isOperator reports whether the HTTP request r comes from an operator: any
// caller when the gateway authenticates nobody (it serves loopback only),
// else a principal with operatorRole.
func (g *Gateway) isOperator(r *http.Request) bool {
	if g.authn == nil {
		return true
	}
	id, ok := auth.IdentityFrom(r.Context())
	return ok && id.HasRole(operatorRole)
}

// sees reports whether the HTTP request r may see and stop req: an
// operator, or the owner of req's root request (checkOwner).
func (g *Gateway) sees(r *http.Request, req *reach.Request) bool {
	if g.isOperator(r) {
		return true
	}
	id, ok := auth.IdentityFrom(r.Context())
	return ok && checkOwner(id, req) == nil
}

// checkOwner refuses a call into, or a look at, a request of another
// owner: a request is owned by the principal and tenant of its root request
// (a principal of the same name in another tenant is someone else); id nil
// is the local user, of no tenant.
func checkOwner(id *auth.Identity, r *reach.Request) error {
	principal, tenant := localPrincipal, ""
	if id != nil {
		principal, tenant = id.Principal, id.Tenant
	}
	if root := r.Root(); root.Principal() != principal || root.Tenant() != tenant {
		return &linkError{Status: http.StatusForbidden, Code: "not_your_request",
			Message:    fmt.Sprintf("Request %s belongs to another principal.", r.ID()),
			Suggestion: "Work in your own requests: omit the request id, or send one of yours."}
	}
	return nil
}

// held reports whether a tool's changed definition waits for approval.
func (g *Gateway) held(name string) bool {
	_, ok := g.heldTools.Load(name)
	return ok
}

// anyHeld reports whether any tool is held.
func (g *Gateway) anyHeld() bool {
	found := false
	g.heldTools.Range(func(_, _ any) bool { found = true; return false })
	return found
}

// MCP sessions belong to who opened them. With auth, every /mcp request
// carries the go-sdk's TokenInfo naming its caller (bindSessions), so the
// SDK's Streamable HTTP handler ties a session to the identity that
// initialized it and refuses another's GET, POST or DELETE on it; the
// gateway keeps the same owner (bindSession) for the paths it answers
// itself (leanMCP: the lean tools/call, notifications/cancelled), and the
// sessionless protocol keys its clients by the same owner (clientSession).

// sessionOwner names who an MCP session belongs to: the principal in its
// tenant, each quoted so that no two identities share a name; "" for the
// local user of a gateway that authenticates nobody.
func sessionOwner(id *auth.Identity) string {
	if id == nil {
		return ""
	}
	return strconv.Quote(id.Tenant) + "/" + strconv.Quote(id.Principal)
}

// bindSessions gives each authenticated /mcp request the SDK's TokenInfo,
// its UserID the caller's sessionOwner. The SDK takes TokenInfo only from
// its bearer middleware, which reads the Authorization header: the header
// is set for that middleware alone and put back as the client sent it
// before next runs (the caller is already authenticated, by API key or
// JWT, and the token is not read again).
func (g *Gateway) bindSessions(next http.Handler) http.Handler {
	if g.authn == nil {
		return next
	}
	verify := func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		if b, ok := ctx.Value(bindingKey{}).(*binding); ok {
			return &b.info, nil
		}
		return nil, sdkauth.ErrInvalidToken
	}
	bearer := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{
		AllowMissingExpiration: true, // the gateway's authenticator checked the expiry
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := r.Context().Value(bindingKey{}).(*binding)
		if b.had {
			r.Header["Authorization"] = b.authz
		} else {
			delete(r.Header, "Authorization")
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := auth.IdentityFrom(r.Context())
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthenticated", "This endpoint needs credentials.",
				"Send an API key (Authorization: Bearer rk_... or X-Reach-Key: rk_...) or a bearer JWT from the configured issuer.")
			return
		}
		b := &binding{info: sdkauth.TokenInfo{UserID: sessionOwner(id)}}
		b.authz, b.had = r.Header["Authorization"]
		r.Header["Authorization"] = bindingBearer // read only, by the SDK, and replaced before next
		bearer.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bindingKey{}, b)))
	})
}

// binding is what bindSessions keeps for one request: the TokenInfo to
// give the SDK and the Authorization header to put back.
type binding struct {
	info  sdkauth.TokenInfo
	authz []string
	had   bool
}

type bindingKey struct{}

var bindingBearer = []string{"Bearer reach-identity"}

// bindSession records who opens an MCP session (an initialize request):
// the TokenInfo user bindSessions gave its HTTP request.
func (g *Gateway) bindSession(req mcp.Request) {
	if g.authn == nil {
		return
	}
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || ss.ID() == "" {
		return // stdio, in memory, or the sessionless protocol: no id to take over
	}
	owner := ""
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		owner = ex.TokenInfo.UserID
	}
	g.sessionFor(ss).owner.Store(&owner)
}

// ownsSession reports whether the HTTP request r comes from who opened
// session ss; without auth, anyone on loopback does. A session whose owner
// was not recorded belongs to nobody.
func (g *Gateway) ownsSession(r *http.Request, ss *mcp.ServerSession) bool {
	if g.authn == nil {
		return true
	}
	id, ok := auth.IdentityFrom(r.Context())
	if !ok {
		return false
	}
	owner := g.sessionFor(ss).owner.Load()
	return owner != nil && *owner != "" && *owner == sessionOwner(id)
}

// notYourSession answers a request on another identity's MCP session.
func notYourSession(w http.ResponseWriter) {
	writeError(w, http.StatusForbidden, "not_your_session",
		"This MCP session belongs to another principal.",
		"Open a session of your own: send initialize without an Mcp-Session-Id header.")
}
