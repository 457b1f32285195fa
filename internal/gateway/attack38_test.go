package gateway

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestAttack38BasicCredentialDecodedIsMasked: an upstream's header that
// carries a Basic credential holds the user's password base64-encoded. The
// header's value and the encoded token were secrets, but not what they
// encode: an upstream that answers "invalid credentials svc:PASSWORD", or
// quotes the password alone (as an error quotes a URL's userinfo, whose
// password is a secret), passed it to the model, the logs and the audit.
func TestAttack38BasicCredentialDecodedIsMasked(t *testing.T) {
	const user, pass = "svc-reports", "Pa55:w0rd-Basic!"
	// An API that takes its key as the user, the password empty.
	const userKey = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	tok := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	env := map[string]string{"BASIC": tok}
	cfg, err := config.Parse([]byte(`upstreams:
  - name: plain
    url: http://127.0.0.1:9/mcp
    headers: {Authorization: "Basic `+tok+`"}
  - name: proxied
    url: http://127.0.0.1:9/other
    headers: {Proxy-Authorization: "basic ${BASIC}"}
  - name: keyed
    url: http://127.0.0.1:9/keyed
    headers: {Authorization: "Basic `+base64.StdEncoding.EncodeToString([]byte(userKey+":"))+`"}
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRedactor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"401: invalid credentials " + user + ":" + pass,
		"login failed: wrong password " + pass,
		`{"error":"bad password","password_tried":"` + pass + `"}`,
		"unknown account " + userKey + " (check the dashboard)",
	} {
		if got := r.RedactString(s); strings.Contains(got, "w0rd-Basic") || strings.Contains(got, "WDarj") {
			t.Errorf("%q -> %q, want the credential masked", s, got)
		}
	}
	// The user name alone is no secret: it names who, and is shown.
	if got := r.RedactString("user " + user + " signed in"); !strings.Contains(got, user) {
		t.Errorf("the user name was masked: %q", got)
	}
}
