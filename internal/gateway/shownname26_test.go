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

// TestAttack26JWTPrincipalShownAsIs: a JWT whose principal (or tenant)
// holds a control or format character (a right-to-left override, a line
// separator, a zero-width space) is refused with 401. Before, it was the
// caller's name, shown as it is to people: "eve\u2028Asked by: ceo" put a
// line of its own choosing into the prompt of the approval its write asked
// for ("Asked by: eve", then "Asked by: ceo"), which a reviewer and the
// client's user read to decide.
func TestAttack26JWTPrincipalShownAsIs(t *testing.T) {
	dir := t.TempDir()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	jb, _ := json.Marshal(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	os.WriteFile(filepath.Join(dir, "jwks.json"), jb, 0o600)
	cfg, err := config.Parse([]byte("data: "+filepath.Join(dir, "data")+"\nexamples: true\n"+
		"auth:\n  jwt:\n    jwks: "+filepath.Join(dir, "jwks.json")+"\n    issuer: https://idp.example\n    audience: reach\n"+
		"    claims: {principal: preferred_username, tenant: org}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	now := time.Now().Unix()
	for i, tc := range []struct {
		name, tenant string
		want         int
	}{
		{"eve\u2028Asked by:  ceo@example.com", "", 401},
		{"eve\u202e", "", 401},
		{"e\u200bve", "", 401},
		{"eve\x07", "", 401},
		{"eve", "acme\u2029", 401},
		{"eve", "ac\u200dme", 401},
		{"Zoë Åström", "acme", 200},
	} {
		c := map[string]any{"iss": "https://idp.example", "aud": "reach", "preferred_username": tc.name, "iat": now, "exp": now + 300}
		if tc.tenant != "" {
			c["org"] = tc.tenant
		}
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"damaged box"}}]}`,
			map[string]string{"Authorization": "Bearer " + signJWT(key, "k1", c)})
		if status != tc.want {
			t.Errorf("%d principal %q tenant %q: %d %v, want %d", i, tc.name, tc.tenant, status, out, tc.want)
		}
	}
	for _, a := range g.Approvals().List("") {
		if p := a.Prompt(); strings.ContainsAny(p, "\u2028\u2029\u202e\u200b\u200d\x07") {
			t.Errorf("an approval's prompt holds a format or control character: %q", p)
		}
	}
}
