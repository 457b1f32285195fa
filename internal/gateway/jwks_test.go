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
		cfg, err := config.Parse([]byte("examples: true\nauth:\n  jwt:\n    jwks: "+filepath.Join(dir, jwks)+"\n    issuer: https://idp.example\n"), nil)
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
