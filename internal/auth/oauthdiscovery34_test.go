package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestOAuthDiscoveryAnswersNoOAuth: an MCP client without credentials gets
// 401 and looks for OAuth (RFC 9728, RFC 8414, OpenID discovery, then the
// legacy /register). Reach takes API keys and offers no OAuth: those paths
// answer 404, without credentials, with reach's own words on what to send,
// which is what the client then shows its user ("Dynamic Client
// Registration rejected (HTTP 404): ..." rather than an OAuth login).
func TestOAuthDiscoveryAnswersNoOAuth(t *testing.T) {
	keys, _ := OpenKeys(filepath.Join(t.TempDir(), KeysFile))
	reached := ""
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = r.URL.Path })
	h := New(&Options{Keys: keys}).Middleware(next)
	for _, c := range []struct{ method, path string }{
		{"GET", "/.well-known/oauth-protected-resource"},
		{"GET", "/.well-known/oauth-protected-resource/mcp"},
		{"GET", "/.well-known/oauth-authorization-server"},
		{"GET", "/.well-known/oauth-authorization-server/mcp"},
		{"GET", "/.well-known/openid-configuration"},
		{"GET", "/mcp/.well-known/openid-configuration"},
		{"POST", "/register"},
	} {
		reached = ""
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader("{}")))
		// The metadata in reach's error envelope; the registration in
		// OAuth's (RFC 7591), the one its clients read.
		var code, msg string
		if c.method == "POST" {
			var body struct {
				Error            string
				ErrorDescription string `json:"error_description"`
			}
			json.Unmarshal(rec.Body.Bytes(), &body)
			code, msg = body.Error, body.ErrorDescription
		} else {
			var body struct{ Error map[string]string }
			json.Unmarshal(rec.Body.Bytes(), &body)
			code, msg = body.Error["code"], body.Error["message"]
		}
		if rec.Code != http.StatusNotFound || code != "no_oauth" ||
			!strings.HasPrefix(msg, "This gateway offers no OAuth login. Send an API key (Authorization: Bearer rk_") {
			t.Errorf("%s %s = %d %s, want 404 no_oauth saying to send an API key", c.method, c.path, rec.Code, rec.Body)
		}
		if reached != "" {
			t.Errorf("%s %s reached the handler behind the authentication", c.method, c.path)
		}
	}
	// Other paths still need credentials: /mcp answers 401 with the challenge.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", strings.NewReader("{}")))
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" || reached != "" {
		t.Errorf("POST /mcp without a key = %d (challenge %q, reached %q), want 401 with a challenge", rec.Code, rec.Header().Get("WWW-Authenticate"), reached)
	}
	// GET /register is no OAuth endpoint a client calls: it needs credentials like any path.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/register", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /register without a key = %d, want 401", rec.Code)
	}
}
