package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store"
)

// TestNotHereRunningElsewhere: a request this instance holds no part of,
// which the shared store holds running on another instance, is answered
// 404 request_elsewhere naming that instance, to its principal and to an
// operator; anyone else gets the answer of an unknown request, with
// nothing of where it runs. Without a shared store, or for a request the
// store holds running nowhere else, the plain 404 stays.
func TestNotHereRunningElsewhere(t *testing.T) {
	st, log := storeWithLog(t)
	if err := st.PutRequest(t.Context(), &store.Request{ID: "r-far", Principal: "alice", Tenant: "acme", State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRequest(t.Context(), &store.Request{ID: "r-near", Principal: "alice", Tenant: "acme", State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	key := func(s auth.KeySpec) string {
		k, _, err := keys.Create(s)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	alice := key(auth.KeySpec{Principal: "alice", Tenant: "acme"})
	bob := key(auth.KeySpec{Principal: "bob", Tenant: "acme"})
	otherAlice := key(auth.KeySpec{Principal: "alice", Tenant: "globex"})
	op := key(auth.KeySpec{Principal: "ops", Roles: []string{operatorRole}})
	api := func(remote RemoteRequests) *API {
		return newAPI(&Options{Runtime: reach.New(&reach.Options{}), Store: st, Audit: log, Tools: noTools{}, Remote: remote,
			Approvals: approval.New(nil), Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler(),
			A2A: http.NotFoundHandler(), Authn: auth.New(&auth.Options{Keys: keys})})
	}
	shared := api(&elsewhereRemote{on: map[string][]string{"r-far": {"gw-1", "gw-2"}}})
	get := func(a *API, key, path string) (int, string) {
		t.Helper()
		r := httptest.NewRequest("GET", "http://127.0.0.1:7400"+path, nil)
		r.Header.Set("X-Reach-Key", key)
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	for _, c := range []struct {
		who, key  string
		elsewhere bool
	}{{"alice", alice, true}, {"an operator", op, true}, {"bob", bob, false}, {"alice of another tenant", otherAlice, false}} {
		for _, path := range []string{"/v1/requests/r-far", "/v1/requests/r-far/graph", "/ui/requests/r-far"} {
			code, body := get(shared, c.key, path)
			if code != http.StatusNotFound {
				t.Errorf("%s: GET %s = %d %s; want 404", c.who, path, code, body)
			}
			ui := strings.HasPrefix(path, "/ui/")
			switch {
			case c.elsewhere && (!ui && !strings.Contains(body, `"code":"request_elsewhere"`) || !strings.Contains(body, "runs on instances gw-1 and gw-2, not on this instance") ||
				!strings.Contains(body, "reach requests cancel r-far")):
				t.Errorf("%s: GET %s = %s; want request_elsewhere naming gw-1 and gw-2 and the stop", c.who, path, body)
			case !c.elsewhere && (!ui && !strings.Contains(body, `"code":"unknown_request"`) || strings.Contains(body, "gw-")):
				t.Errorf("%s: GET %s = %s; want unknown_request, nothing of where it runs", c.who, path, body)
			}
		}
	}
	if code, body := get(shared, alice, "/v1/requests/r-near"); code != http.StatusNotFound || !strings.Contains(body, `"code":"unknown_request"`) {
		t.Errorf("a request running nowhere else: %d %s; want unknown_request", code, body)
	}
	if code, body := get(api(nil), alice, "/v1/requests/r-far"); code != http.StatusNotFound || !strings.Contains(body, `"code":"unknown_request"`) {
		t.Errorf("without a shared store: %d %s; want unknown_request", code, body)
	}
}
