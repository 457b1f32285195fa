package httpapi

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
)

// An MCP client configured with the endpoint and a trailing slash
// (http://HOST/mcp/, the form of some servers' documentation; the MCP
// TypeScript SDK 1.17.5 and 1.0.4's SSE client send the path as written)
// is served as at /mcp (and /sse/ as /sse): before, its initialize got 404
// and its fallback to the HTTP+SSE transport 404 again. The MCP handler
// sees the path it knows; credentials are asked for as at /mcp; no other
// path is rewritten.
func TestMCPEndpointWithTrailingSlash(t *testing.T) {
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var saw []string
	mcpH := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		saw = append(saw, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.WriteHeader(http.StatusAccepted)
	})
	for _, authn := range []*auth.Authenticator{nil, auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz", "/livez", "/readyz"}})} {
		opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: mcpH,
			Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20, Authn: authn}
		a := newAPI(opts)
		for _, c := range []struct {
			method, target string
			key            bool
			code           int
			saw            string
		}{
			{"POST", "/mcp/", true, http.StatusAccepted, "POST /mcp?"},
			{"GET", "/sse/", true, http.StatusAccepted, "GET /sse?"},
			{"POST", "/sse/?sessionid=abc", true, http.StatusAccepted, "POST /sse?sessionid=abc"},
			{"POST", "/mcp/x", true, http.StatusNotFound, ""},
			{"POST", "/mcp//", true, 0, ""},
			{"POST", "/mcp/", false, http.StatusUnauthorized, ""},
		} {
			if authn == nil && !c.key {
				continue
			}
			saw = nil
			r := httptest.NewRequest(c.method, "http://127.0.0.1:7400"+c.target, nil)
			r.RemoteAddr = "127.0.0.1:50000"
			if authn != nil && c.key {
				r.Header.Set("Authorization", "Bearer "+secret)
			}
			w := httptest.NewRecorder()
			a.handler.ServeHTTP(w, r)
			if c.code != 0 && w.Code != c.code {
				t.Errorf("auth %v: %s %s: %d %s, want %d", authn != nil, c.method, c.target, w.Code, w.Body, c.code)
			}
			if got := ""; len(saw) > 0 {
				got = saw[0]
				if got != c.saw {
					t.Errorf("auth %v: %s %s reached the MCP handler as %q, want %q", authn != nil, c.method, c.target, got, c.saw)
				}
			} else if c.saw != "" {
				t.Errorf("auth %v: %s %s never reached the MCP handler (%d %s)", authn != nil, c.method, c.target, w.Code, w.Body)
			}
		}
	}
}
