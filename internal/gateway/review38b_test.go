package gateway

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestReview38bBasicUserWithoutPasswordIsNoSecretUnlessKeyLike: a Basic
// credential with an empty password was taken for a key given as the user
// (Stripe's "sk_live_...:"), and its user name masked alone everywhere:
// "admin:" or "guest:" hid every "admin" and "guest" of every tool result,
// log line and audit entry, for a credential that holds no secret. A user
// that looks like a key is still masked.
func TestReview38bBasicUserWithoutPasswordIsNoSecretUnlessKeyLike(t *testing.T) {
	const userKey = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfg, err := config.Parse([]byte(`upstreams:
  - name: admin
    url: http://127.0.0.1:9/admin
    headers: {Authorization: "Basic `+b64("admin:")+`"}
  - name: guest
    url: http://127.0.0.1:9/guest
    headers: {Authorization: "Basic `+b64("guest:")+`"}
  - name: keyed
    url: http://127.0.0.1:9/keyed
    headers: {Authorization: "Basic `+b64(userKey+":")+`"}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRedactor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"the admin role: granted", "guest: read only", "users: admin, guest"} {
		if got := r.RedactString(s); got != s {
			t.Errorf("%q -> %q, want it as it is: a user name with no password is no secret", s, got)
		}
	}
	if got := r.RedactString("unknown account " + userKey); strings.Contains(got, "WDarj") {
		t.Errorf("a key given as the user was not masked: %q", got)
	}
}
