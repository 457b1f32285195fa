package auth

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAttack38NamespacedClaims: identity providers that take custom
// claims only under a namespace (Auth0: "https://reach.example.com/tenant")
// give claim names with dots, which were read as a path into objects
// only: the tenant claim was not found, so the token's holder was of no
// tenant (an operator of acme an operator of every tenant), and a forbid
// on its roles never applied. A claim of the configured name as it is
// comes first; a dotted path reaches into objects when there is none.
func TestAttack38NamespacedClaims(t *testing.T) {
	rs := newRSA(t, "k", 2048)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs)
	const ns = "https://reach.example.com/"
	v, err := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, PrincipalClaim: ns + "email", RolesClaim: ns + "roles",
		TenantClaim: ns + "tenant", DepartmentClaim: "org.dept", Attributes: map[string]string{"level": ns + "level"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := rs.token(t, nil, map[string]any{"iss": issuer, "exp": time.Now().Unix() + 60, "sub": "auth0|123",
		ns + "email": "carol@example.com", ns + "roles": []string{"operator"}, ns + "tenant": "acme", ns + "level": 2,
		"org": map[string]any{"dept": "it"}})
	id, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := &Identity{Principal: "carol@example.com", Roles: []string{"operator"}, Tenant: "acme",
		Attributes: map[string]string{"department": "it", "level": "2"}, Method: "jwt", KeyID: "k"}
	if diff := cmp.Diff(want, id); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// A tenant claim of another shape under the namespaced name is refused
	// as it is under a plain name, not read as absent.
	bad := rs.token(t, nil, map[string]any{"iss": issuer, "exp": time.Now().Unix() + 60,
		ns + "email": "dave@example.com", ns + "tenant": []string{"acme"}})
	if id, err := v.Verify(t.Context(), bad); err == nil {
		t.Errorf("a tenant claim that is an array was accepted: %+v", id)
	}
}

// TestAttack38AttributeClaimOfAnotherShape: a claim mapped to an attribute
// that is an array or an object was left out without a word, as roles and
// tenants of another shape were before they were refused: a forbid guarded
// with has (as the policies' examples are) never applied to its holder.
// It is refused as they are; absent or null, it is none.
func TestAttack38AttributeClaimOfAnotherShape(t *testing.T) {
	rs := newRSA(t, "k", 2048)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs)
	v, err := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, Attributes: map[string]string{"groups": "groups", "level": "lvl"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		val  any
		ok   bool
		want map[string]string
	}{
		{"string", "contractors", true, map[string]string{"groups": "contractors", "level": "3"}},
		{"null", nil, true, map[string]string{"level": "3"}},
		{"array", []string{"contractors"}, false, nil},
		{"object", map[string]any{"name": "contractors"}, false, nil},
	} {
		tok := rs.token(t, nil, map[string]any{"iss": issuer, "exp": time.Now().Unix() + 60, "sub": "erin", "groups": c.val, "lvl": 3})
		id, err := v.Verify(t.Context(), tok)
		if !c.ok {
			if err == nil {
				t.Errorf("%s: a groups claim of another shape was accepted: attributes %v", c.name, id.Attributes)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.want, id.Attributes); diff != "" {
			t.Errorf("%s: attributes (-want +got)\n%s", c.name, diff)
		}
	}
}
