package front

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP sessions belong to who opened them. With auth, every /mcp request
// carries the go-sdk's TokenInfo naming its caller (bindSessions), so the
// SDK's Streamable HTTP handler ties a session to the identity that
// initialized it and refuses another's GET, POST or DELETE on it; the
// gateway keeps the same owner (bindSession) for the paths it answers
// itself (fastPath: the fast tools/call, notifications/cancelled), and the
// sessionless protocol keys its clients by the same owner (clientSession).

// identityOf returns who makes a call: the identity the auth middleware
// put in ctx, or, for MCP messages the SDK handles, the one their HTTP
// headers authenticate.
func (s *Server) identityOf(ctx context.Context, h http.Header) *auth.Identity {
	if id, ok := auth.IdentityFrom(ctx); ok {
		return id
	}
	if s.authn == nil || h == nil {
		return nil
	}
	id, err := s.authn.Authenticate(&http.Request{Header: h})
	if err != nil {
		return nil
	}
	return id
}

// filterList narrows an MCP tools/list answer to what the caller may see.
func (s *Server) filterList(ctx context.Context, req mcp.Request, res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || !s.tools.Narrows() {
		return res
	}
	var h http.Header
	if ex := req.GetExtra(); ex != nil {
		h = ex.Header
	}
	vis := map[string]bool{}
	for _, t := range s.tools.Visible(s.identityOf(ctx, h)) {
		vis[t.Name] = true
	}
	out := *lr
	out.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool { return !vis[t.Name] })
	return &out
}

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
func (s *Server) bindSessions(next http.Handler) http.Handler {
	if s.authn == nil {
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
			auth.Unauthorized(w, auth.ErrNoCredentials)
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
func (s *Server) bindSession(req mcp.Request) {
	if s.authn == nil {
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
	s.sessionFor(ss).owner.Store(&owner)
}

// ownsSession reports whether the HTTP request r comes from who opened
// session ss; without auth, anyone on loopback does. A session whose owner
// was not recorded belongs to nobody.
func (s *Server) ownsSession(r *http.Request, ss *mcp.ServerSession) bool {
	return s.ownsSessionCtx(r.Context(), ss)
}

// ownsSessionCtx is ownsSession for the identity in ctx.
func (s *Server) ownsSessionCtx(ctx context.Context, ss *mcp.ServerSession) bool {
	return s.ownsStateCtx(ctx, s.sessionFor(ss))
}

// ownsStateCtx is ownsSessionCtx for the state of a session.
func (s *Server) ownsStateCtx(ctx context.Context, st *session) bool {
	if s.authn == nil {
		return true
	}
	id, ok := auth.IdentityFrom(ctx)
	if !ok {
		return false
	}
	owner := st.owner.Load()
	return owner != nil && *owner != "" && *owner == sessionOwner(id)
}

// notYourSession answers a request on another identity's MCP session.
func notYourSession(w http.ResponseWriter) {
	httpjson.WriteError(w, http.StatusForbidden, "not_your_session",
		"This MCP session belongs to another principal.",
		"Open a session of your own: send initialize without an Mcp-Session-Id header.")
}
