// Package auth authenticates the callers of the gateway (P1): API keys kept
// hashed in a file under the data folder, and bearer JWTs checked against a
// JWKS (RS256, ES256). Its middleware puts the caller's [Identity] in the
// request's context.
//
//	keys, _ := auth.OpenKeys(auth.KeysPath(dataDir))
//	jwt, _ := auth.NewVerifier(&auth.JWTOptions{JWKS: "https://idp/.well-known/jwks.json", Issuer: "https://idp/"})
//	a := auth.New(&auth.Options{Keys: keys, JWT: jwt})
//	http.ListenAndServe(addr, a.Middleware(mux))
//	// in a handler:
//	id, _ := auth.IdentityFrom(r.Context())
//	id.Apply(&requestOptions) // principal, roles, tenant, attributes for policies
package auth

import (
	"context"
	"maps"
	"slices"

	"github.com/agentreach/reach"
)

// LocalPrincipal is who works with a gateway that authenticates nobody (and
// a stdio session, which authenticates nobody either): the requests it
// begins and the approvals given at its API and UI. An API key may name it
// (reach keys create --principal local decides a stdio session's
// approvals); a JWT may not.
const LocalPrincipal = "local"

// Identity is an authenticated caller.
type Identity struct {
	Principal string   `json:"principal"`
	Roles     []string `json:"roles,omitempty"`
	Tenant    string   `json:"tenant,omitempty"`
	// Attributes describe the principal for policies (e.g. department).
	Attributes map[string]string `json:"attributes,omitempty"`
	// Method is how it was authenticated: "api_key" or "jwt".
	Method string `json:"method"`
	// KeyID names the API key used, or the JWT's issuer key (kid).
	KeyID string `json:"key_id,omitempty"`
}

// HasRole reports whether the identity has the role.
func (id *Identity) HasRole(role string) bool { return slices.Contains(id.Roles, role) }

// Apply sets a request's principal, roles, tenant and attributes from the
// identity, for the policies to see.
func (id *Identity) Apply(o *reach.RequestOptions) {
	o.Principal = id.Principal
	o.Roles = slices.Clone(id.Roles)
	o.Tenant = id.Tenant
	o.Attributes = maps.Clone(id.Attributes)
}

type identityKey struct{}

// WithIdentity returns a context carrying the identity.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity in ctx, if any.
func IdentityFrom(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok
}
