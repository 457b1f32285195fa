package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
)

// TestTenantOperatorJWT: with JWTs of one identity provider for two
// tenants, a token with the role operator and the tenant claim acme (what
// acme's admin can give itself there) lists acme's requests and reads
// acme's audit events only, and cannot read or stop globex's; a token with
// the role operator and no tenant claim sees both tenants'.
func TestTenantOperatorJWT(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	jb, _ := json.Marshal(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, jb, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("data: "+t.TempDir()+"\nexamples: true\nauth:\n  jwt:\n    jwks: "+jwks+
		"\n    issuer: https://idp.example\n    audience: reach\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	now := time.Now().Unix()
	token := func(sub, tenant string, roles ...string) map[string]string {
		claims := map[string]any{"iss": "https://idp.example", "aud": "reach", "sub": sub, "iat": now, "exp": now + 300}
		if tenant != "" {
			claims["tenant"] = tenant
		}
		if len(roles) > 0 {
			claims["roles"] = roles
		}
		return map[string]string{"Authorization": "Bearer " + signJWT(key, "k1", claims)}
	}
	for tenant, id := range map[string]string{"acme": "acme-1", "globex": "globex-1"} {
		body := `{"request_id":"` + id + `","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`
		if status, out := do(t, "POST", url+"/v1/calls", body, token("alice", tenant)); status != 200 {
			t.Fatalf("alice of %s's call = %d %v", tenant, status, out)
		}
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	seen := func(h map[string]string) (requests, events map[string]bool) {
		t.Helper()
		requests, events = map[string]bool{}, map[string]bool{}
		_, out := do(t, "GET", url+"/v1/requests", "", h)
		for _, r := range out["requests"].([]any) {
			requests[fmt.Sprint(path(r, "id"))] = true
		}
		_, out = do(t, "GET", url+"/v1/audit", "", h)
		for _, e := range out["events"].([]any) {
			events[fmt.Sprint(path(e, "event", "tenant"))] = true
		}
		return requests, events
	}
	if rs, es := seen(token("ops", "acme", "operator")); !rs["acme-1"] || rs["globex-1"] || !es["acme"] || es["globex"] {
		t.Errorf("acme's operator sees requests %v, events of tenants %v; want acme's only", rs, es)
	}
	if rs, es := seen(token("root", "", "operator")); !rs["acme-1"] || !rs["globex-1"] || !es["acme"] || !es["globex"] {
		t.Errorf("the operator of no tenant sees requests %v, events of tenants %v; want both", rs, es)
	}
	if status, out := do(t, "GET", url+"/v1/requests/globex-1", "", token("ops", "acme", "operator")); status != http.StatusNotFound {
		t.Errorf("acme's operator reading globex-1 = %d %v, want 404, as an id no request has", status, out)
	}
	if status, out := do(t, "POST", url+"/v1/requests/globex-1/cancel", `{"mode":"cancel"}`, token("ops", "acme", "operator")); status != http.StatusNotFound {
		t.Errorf("acme's operator stopping globex-1 = %d %v, want 404, as an id no request has", status, out)
	}
	if _, out := do(t, "GET", url+"/v1/requests/globex-1", "", token("alice", "globex")); out["state"] != "running" {
		t.Errorf("globex-1 after the refused stop = %v, want running", out["state"])
	}
}
