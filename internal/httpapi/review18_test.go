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
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
)

// A request removed by retention is answered 410 only to the principal
// (and tenant) its audit events name, and to an operator: another
// principal, or the same principal of another tenant, gets the 404 of an
// id never used, from the API and the UI, and so cannot learn that the id
// existed.
func TestRemovedByRetentionOnlyToItsPrincipal(t *testing.T) {
	ctx := t.Context()
	st, log := storeWithLog(t)
	old := time.Now().Add(-48 * time.Hour)
	if _, err := log.Append(ctx, &audit.Event{Time: old, Request: "gone", Principal: "alice", Tenant: "acme", Kind: "tool",
		Name: "search_kb", Decision: "completed"}); err != nil {
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
	a := newAPI(&Options{Runtime: reach.New(&reach.Options{}), Store: st, Audit: log, Retention: 24 * time.Hour, Tools: noTools{},
		Approvals: approval.New(nil), Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler(),
		Authn: auth.New(&auth.Options{Keys: keys})})
	get := func(key, path string) (int, string) {
		t.Helper()
		r := httptest.NewRequest("GET", "http://127.0.0.1:7400"+path, nil)
		r.Header.Set("X-Reach-Key", key)
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	for _, c := range []struct {
		who, key string
		want     int
	}{{"alice", alice, http.StatusGone}, {"an operator", op, http.StatusGone},
		{"bob", bob, http.StatusNotFound}, {"alice of another tenant", otherAlice, http.StatusNotFound}} {
		for _, path := range []string{"/v1/requests/gone", "/ui/requests/gone"} {
			code, body := get(c.key, path)
			if code != c.want {
				t.Errorf("%s: GET %s = %d %s; want %d", c.who, path, code, body, c.want)
			}
			if c.want == http.StatusGone && (!strings.Contains(body, "kept for 1 day.") || !strings.Contains(body, "more than 1 day ago")) {
				t.Errorf("%s: GET %s does not say a retention of 24h as 1 day: %s", c.who, path, body)
			}
			if c.want == http.StatusNotFound && strings.Contains(body, "retention") {
				t.Errorf("%s: GET %s tells the request was removed: %s", c.who, path, body)
			}
		}
	}
}
