package auth

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestReview38bClaimBothByNameAndByPathIsRefused: a claim is read by its
// name as it is first, then as a dotted path. A token that holds both a
// claim named "realm_access.roles" and realm_access: {roles: [...]} has two
// answers; the one by name won, so a literal top-level claim (null, or
// other roles) displaced the roles the identity provider put where the
// configuration reads them: a forbid on a role, or a tenant, escaped. Two
// different answers refuse the token; the same value by both ways is one.
func TestReview38bClaimBothByNameAndByPathIsRefused(t *testing.T) {
	rs := newRSA(t, "k", 2048)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs)
	v, err := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, RolesClaim: "realm_access.roles", TenantClaim: "org.tenant"})
	if err != nil {
		t.Fatal(err)
	}
	base := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": issuer, "exp": time.Now().Unix() + 60, "sub": "mallory",
			"realm_access": map[string]any{"roles": []string{"contractor"}}, "org": map[string]any{"tenant": "acme"}}
		for k, x := range extra {
			c[k] = x
		}
		return c
	}
	for name, extra := range map[string]map[string]any{
		"roles null by name":  {"realm_access.roles": nil},
		"roles other by name": {"realm_access.roles": []string{"operator"}},
		"tenant null by name": {"org.tenant": nil},
		"tenant other":        {"org.tenant": "globex"},
	} {
		id, err := v.Verify(t.Context(), rs.token(t, nil, base(extra)))
		if !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("%s: accepted (%v) as roles %v, tenant %q; want the token refused", name, err, id.Roles, id.Tenant)
		}
	}
	// The same value both ways, or one way alone, is read.
	id, err := v.Verify(t.Context(), rs.token(t, nil, base(map[string]any{"realm_access.roles": []string{"contractor"}})))
	if err != nil || len(id.Roles) != 1 || id.Roles[0] != "contractor" || id.Tenant != "acme" {
		t.Errorf("the same roles by name and by path: %+v, %v", id, err)
	}
}
