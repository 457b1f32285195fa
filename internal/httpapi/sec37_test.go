package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
)

// TestSec37ModelAPIHintNotStored: the answer to a model client's call the
// proxy does not serve names the base URL to use, built from the request's
// Host; a 404 without Cache-Control may be stored by a shared cache
// (heuristically), and a Host of one client's choosing (a loopback name at
// another port passes the loopback check) then told the next client's
// user to send its model calls there. The answer now says no-store.
func TestSec37ModelAPIHintNotStored(t *testing.T) {
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20}
	a := newAPI(opts)
	for _, c := range []struct{ method, path string }{{"GET", "/openai/v1/models"}, {"POST", "/chat/completions"}, {"POST", "/v1/messages"}} {
		method, path := c.method, c.path
		r := httptest.NewRequest(method, "http://localhost:1"+path, strings.NewReader("{}"))
		r.RemoteAddr = "127.0.0.1:50000"
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		if !strings.Contains(w.Body.String(), "localhost:1") {
			t.Fatalf("%s %s: %d %s; want the hint naming the Host", method, path, w.Code, w.Body)
		}
		if cc := w.Header().Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Errorf("%s %s at Host localhost:1: Cache-Control %q; want no-store", method, path, cc)
		}
	}
}
