package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
)

// TestAttack26JWTNamedLocalRefused: a JWT whose principal claim is
// "local", the name of who works without authentication (a stdio session,
// a gateway before auth was turned on), is refused with 401. Before, its
// holder (a user of that name at the identity provider) was the local user:
// the requests the gateway ran without auth, read back from the store, were
// theirs to read (their audit events here), as a stdio session's requests
// and approvals are.
func TestAttack26JWTNamedLocalRefused(t *testing.T) {
	dir := t.TempDir()
	// Without auth: the local user's request, kept in the data folder.
	g := newTestGateway(t, &config.Config{Data: dir})
	srv := serveTest(t, g)
	if status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"mine","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`, nil); status != http.StatusOK {
		t.Fatalf("the local user's call: %d %v", status, out)
	}
	if err := g.audit.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	g.Close()

	// Auth turned on, with JWTs.
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	jb, _ := json.Marshal(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(jwks, jb, 0o600)
	cfg, err := config.Parse([]byte("data: "+dir+"\nexamples: true\nauth:\n  jwt:\n    jwks: "+jwks+
		"\n    issuer: https://idp.example\n    audience: reach\n    claims: {principal: preferred_username}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	now := time.Now().Unix()
	token := func(name string) string {
		return "Bearer " + signJWT(key, "k1", map[string]any{"iss": "https://idp.example", "aud": "reach", "preferred_username": name, "iat": now, "exp": now + 300})
	}
	status, out := do(t, "GET", url+"/v1/audit?request=mine", "", map[string]string{"Authorization": token("local")})
	if status != http.StatusUnauthorized {
		t.Errorf("a token naming local: %d %v, want 401", status, out)
	}
	// Another name is authenticated and sees none of the local user's events.
	status, out = do(t, "GET", url+"/v1/audit?request=mine", "", map[string]string{"Authorization": token("dana")})
	if evs, _ := out["events"].([]any); status != http.StatusOK || len(evs) != 0 {
		t.Errorf("dana reading the local user's request: %d %v, want 200 and no events", status, out)
	}
}
