package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
)

// TestAttack26JWTAudienceRequired: a JWT configuration without audience
// is refused, naming its line: the gateway took a token the issuer gave any
// other application (one for "another-app" called a tool), and any user of
// a shared issuer (a public identity provider, a company's, where each
// application is a client) can get one for an application of their own.
// With an audience, a token for another is refused (401); audience "*"
// takes every audience, as the configuration says.
func TestAttack26JWTAudienceRequired(t *testing.T) {
	dir := t.TempDir()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwk := map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}}
	jb, _ := json.Marshal(jwk)
	jwks := filepath.Join(dir, "jwks.json")
	os.WriteFile(jwks, jb, 0o600)
	conf := func(audience string) string {
		return "examples: true\nauth:\n  jwt:\n    jwks: " + jwks + "\n    issuer: https://idp.example\n" + audience + "    claims: {principal: email}\n"
	}

	for _, aud := range []string{"", "    audience: \"\"\n", "    audience: \"  \"\n"} {
		_, err := config.Parse([]byte(conf(aud)), nil)
		if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "needs audience") {
			t.Errorf("auth.jwt with %q: %v, want an error naming line 3 and saying audience is needed", aud, err)
		}
	}

	now := time.Now().Unix()
	token := func(aud string) string {
		return signJWT(key, "k1", map[string]any{"iss": "https://idp.example", "aud": aud, "email": "eve@example.com", "iat": now, "exp": now + 300})
	}
	call := `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`
	for _, tc := range []struct {
		audience string
		want     map[string]int // a token's aud -> the status of its call
	}{
		{"    audience: reach\n", map[string]int{"reach": 200, "another-app": 401}},
		{"    audience: \"*\"\n", map[string]int{"reach": 200, "another-app": 200}},
	} {
		cfg, err := config.Parse([]byte(conf(tc.audience)), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Data = t.TempDir()
		url := serveTest(t, newTestGateway(t, cfg)).URL
		for aud, want := range tc.want {
			if status, out := do(t, "POST", url+"/v1/calls", call, map[string]string{"Authorization": "Bearer " + token(aud)}); status != want {
				t.Errorf("configured %q, a token for %q: %d %v, want %d", strings.TrimSpace(tc.audience), aud, status, out, want)
			}
		}
	}
}
