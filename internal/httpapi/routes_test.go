package httpapi

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
)

type noTools struct{}

func (noTools) Visible(*auth.Identity) []reach.Tool { return nil }

// Every route of the table but the probes and the UI (which signs
// browsers in itself) answers 401 to a request without credentials; the
// operators' routes answer 403 to an authenticated principal who is not an
// operator. The table is read, so a route added without its guard fails.
func TestRoutesNeedCredentialsAndOperators(t *testing.T) {
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(),
		Authn: auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz", "/livez", "/readyz"}})}
	a := newAPI(opts)
	operators := map[string]bool{"GET /metrics": true, "GET /v1/deadletters": true, "POST /v1/deadletters/{id}/retry": true,
		"POST /v1/deadletters/{id}/dismiss": true, "GET /v1/stats": true}
	for _, rt := range a.routes(opts) {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok {
			method, path = http.MethodGet, rt.pattern
		}
		path = strings.NewReplacer("{id}", "x", "{$}", "").Replace(path)
		if strings.HasSuffix(path, "/") && path != "/" {
			path += "x"
		}
		switch path {
		case "/healthz", "/livez", "/readyz", "/", "/ui", "/ui/x":
			continue
		}
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, httptest.NewRequest(method, "http://reach.test"+path, nil))
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without credentials: %d, want 401", method, path, w.Code)
		}
		if !operators[rt.pattern] {
			continue
		}
		r := httptest.NewRequest(method, "http://reach.test"+path, nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		w = httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s %s by a principal who is not an operator: %d, want 403", method, path, w.Code)
		}
	}
}
