package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/upstream"
)

type someUpstreams []upstream.Status

func (s someUpstreams) Upstreams() []upstream.Status { return append([]upstream.Status(nil), s...) }

// With authentication on, /healthz answers anyone, and to a caller without
// valid credentials it says only each upstream's state and the breakers'
// states: neither an upstream's error nor a breaker's last error (a host,
// a path in them); a caller with a valid key gets the upstream's, and a
// breaker's failure of no request (here a model endpoint's) only a global
// operator gets, as without authentication. The upstream's error was shown
// to anyone while the breakers' were hidden from all; the breaker's of no
// request was shown to any valid key.
func TestHealthzDetailsNeedCredentials(t *testing.T) {
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	rootKey, _, err := keys.Create(auth.KeySpec{Principal: "root", Roles: []string{"operator"}})
	if err != nil {
		t.Fatal(err)
	}
	rt := reach.New(nil)
	b := rt.Breaker("model", "gpt-x", &reach.BreakerPolicy{Failures: 1, OpenFor: time.Hour})
	p, e := b.Admit(t.Context())
	if e != nil {
		t.Fatal(e)
	}
	p.Failed(errors.New("dial tcp internal-db.corp:5432: BREAKERDETAIL"))
	ups := someUpstreams{{Name: "up", Transport: "http", Connected: false, Error: "connecting: internal-host.corp UPSTREAMDETAIL"}}
	for _, c := range []struct {
		name             string
		authn            *auth.Authenticator
		key              string
		detailed, global bool
	}{
		{"auth on, no key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), "", false, false},
		{"auth on, wrong key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), "rk_wrong", false, false},
		{"auth on, valid key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), secret, true, false},
		{"auth on, a global operator's key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), rootKey, true, true},
		{"auth off", nil, "", true, true},
	} {
		a := newAPI(&Options{Runtime: rt, Tools: noTools{}, Upstreams: ups, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
			Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), Authn: c.authn})
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/healthz", nil)
		if c.key != "" {
			r.Header.Set("Authorization", "Bearer "+c.key)
		}
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		var got struct {
			Status    string
			Upstreams []upstream.Status
			Breakers  []reach.BreakerStatus
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.name, w.Code, w.Body)
		}
		if got.Status != "degraded" || len(got.Upstreams) != 1 || got.Upstreams[0].Connected || len(got.Breakers) != 1 || got.Breakers[0].State != reach.BreakerOpen {
			t.Errorf("%s: %s; want degraded, up down, the breaker open", c.name, w.Body)
		}
		body := w.Body.String()
		if shown := strings.Contains(body, "UPSTREAMDETAIL"); shown != c.detailed {
			t.Errorf("%s: the upstream's error shown %v, want %v: %s", c.name, shown, c.detailed, body)
		}
		if shown := strings.Contains(body, "BREAKERDETAIL"); shown != c.global {
			t.Errorf("%s: the breaker's failure of no request shown %v, want %v: %s", c.name, shown, c.global, body)
		}
		if !c.detailed && (strings.Contains(body, "UPSTREAMDETAIL") || strings.Contains(body, "BREAKERDETAIL")) {
			t.Errorf("%s: an error shown without credentials: %s", c.name, body)
		}
	}
}

// /healthz tells a tool's breaker's error (what a call of the tool said,
// of any tenant) and the audit log's figures (every tenant's events) to a
// global operator only: a principal of a tenant, its operator too, gets
// the breaker's state and the upstreams' errors. Before, any valid key got
// both.
func TestHealthzTenantSeesNoOtherTenantsFigures(t *testing.T) {
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme": {Principal: "alice", Tenant: "acme"},
		"ops@acme":   {Principal: "ops", Tenant: "acme", Roles: []string{"operator"}},
		"root":       {Principal: "root", Roles: []string{"operator"}},
	} {
		if secrets[name], _, err = keys.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	rt := reach.New(nil)
	b := rt.Breaker(reach.BreakerTool, "crm_lookup", &reach.BreakerPolicy{Failures: 1, OpenFor: time.Hour})
	p, e := b.Admit(t.Context())
	if e != nil {
		t.Fatal(e)
	}
	p.Failed(errors.New("no account GLOBEXCUSTOMER"))
	ups := someUpstreams{{Name: "up", Transport: "http", Connected: false, Error: "connecting: UPSTREAMDETAIL"}}
	authn := auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}})
	a := newAPI(&Options{Runtime: rt, Tools: noTools{}, Upstreams: ups, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), Authn: authn})
	for who, global := range map[string]bool{"alice@acme": false, "ops@acme": false, "root": true} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/healthz", nil)
		r.Header.Set("Authorization", "Bearer "+secrets[who])
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		body := w.Body.String()
		if w.Code != 200 || !strings.Contains(body, `"state":"open"`) || !strings.Contains(body, "UPSTREAMDETAIL") {
			t.Errorf("%s: %d %s; want the open breaker and the upstream's error", who, w.Code, body)
		}
		if shown := strings.Contains(body, "GLOBEXCUSTOMER"); shown != global {
			t.Errorf("%s: the tool breaker's error shown %v, want %v: %s", who, shown, global, body)
		}
	}
}
