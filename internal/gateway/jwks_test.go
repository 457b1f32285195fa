package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestBadJWKSFailsAtStart: a JWKS file that is missing or not a key set
// fails building the gateway (and so serve and validate), naming the line
// of auth.jwt, instead of a gateway that starts and then refuses every
// token with 401.
func TestBadJWKSFailsAtStart(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "garbage.json"), []byte("<html>not a key set</html>"), 0o600)
	for _, jwks := range []string{"missing.json", "garbage.json"} {
		cfg, err := config.Parse([]byte("examples: true\nauth:\n  jwt:\n    jwks: "+filepath.Join(dir, jwks)+"\n    issuer: https://idp.example\n    audience: reach\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Data = t.TempDir()
		for _, opts := range []*Options{nil, {Offline: true, Ephemeral: true}} {
			g, err := New(t.Context(), cfg, opts)
			if err == nil {
				g.Close()
				t.Errorf("jwks %s (options %+v): the gateway was built, want an error", jwks, opts)
				continue
			}
			if !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "JWKS") {
				t.Errorf("jwks %s: %v, want an error naming line 3 and the JWKS", jwks, err)
			}
		}
	}
}

// TestAttack26PlainHTTPJWKSRefused: a key set at a plain http URL off
// loopback fails building the gateway (and so serve and validate), naming
// the line and saying to use https: whoever is on the way to that host
// could hand the gateway keys and sign tokens for any principal. Before,
// it was taken (offline, not even read).
func TestAttack26PlainHTTPJWKSRefused(t *testing.T) {
	cfg, err := config.Parse([]byte("examples: true\nauth:\n  jwt:\n    jwks: http://idp.example/jwks.json\n    issuer: https://idp.example\n    audience: reach\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	g, err := New(t.Context(), cfg, &Options{Offline: true, Ephemeral: true})
	if err == nil {
		g.Close()
		t.Fatal("the gateway was built with a plain http key set off loopback, want an error")
	}
	if !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "https://") {
		t.Errorf("%v, want an error naming line 3 and saying to use https://", err)
	}
}
