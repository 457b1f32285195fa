package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
)

// TestAttack26JWTClaimOfAnotherShapeRefused: a token whose tenant, roles or
// department claim has another shape than a string (roles: or an array of
// strings) is refused with 401. Before, the claim was left out: a
// contractor whose identity provider sent its tenant as ["contractors"]
// had no tenant, and the policy forbidding the tenant's calls never
// applied (the call ran).
func TestAttack26JWTClaimOfAnotherShapeRefused(t *testing.T) {
	dir := t.TempDir()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	jb, _ := json.Marshal(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	os.WriteFile(filepath.Join(dir, "jwks.json"), jb, 0o600)
	os.WriteFile(filepath.Join(dir, "policy.cedar"), []byte(`permit (principal, action, resource) when { principal.authenticated };
@reason("contractors may not call tools")
forbid (principal, action, resource) when { principal.tenant == "contractors" };
@reason("interns may not call tools")
forbid (principal, action, resource) when { principal.roles.contains("intern") };
`), 0o600)
	cfg, err := config.Parse([]byte("data: "+filepath.Join(dir, "data")+"\nexamples: true\npolicy: {path: "+filepath.Join(dir, "policy.cedar")+"}\n"+
		"auth:\n  jwt:\n    jwks: "+filepath.Join(dir, "jwks.json")+"\n    issuer: https://idp.example\n    audience: reach\n"+
		"    claims: {principal: email, tenant: org, roles: groups, department: dept}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	now := time.Now().Unix()
	for i, tc := range []struct {
		name   string
		claims map[string]any
		status int    // of the HTTP answer
		call   string // the call's status, with 200
	}{
		{"tenant as a string", map[string]any{"org": "contractors"}, 200, "refused"},
		{"tenant in an array", map[string]any{"org": []any{"contractors"}}, 401, ""},
		{"tenant as an object", map[string]any{"org": map[string]any{"name": "contractors"}}, 401, ""},
		{"roles as an array", map[string]any{"groups": []any{"staff", "intern"}}, 200, "refused"},
		{"roles as an object", map[string]any{"groups": map[string]any{"intern": true}}, 401, ""},
		{"a role that is a number", map[string]any{"groups": []any{"staff", 7}}, 401, ""},
		{"department in an array", map[string]any{"dept": []any{"sales"}}, 401, ""},
		{"no tenant, roles or department", map[string]any{}, 200, "success"},
		{"null claims", map[string]any{"org": nil, "groups": nil, "dept": nil}, 200, "success"},
	} {
		c := map[string]any{"iss": "https://idp.example", "aud": "reach", "email": "casey@example.com", "iat": now, "exp": now + 300}
		for k, v := range tc.claims {
			c[k] = v
		}
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`,
			map[string]string{"Authorization": "Bearer " + signJWT(key, "k1", c)})
		if status != tc.status {
			t.Errorf("%d %s: %d %v, want %d", i, tc.name, status, out, tc.status)
			continue
		}
		if got, _ := path(out, "results", 0, "status").(string); status == 200 && got != tc.call {
			t.Errorf("%d %s: the call %s (%v), want %s", i, tc.name, got, out, tc.call)
		}
	}
}
