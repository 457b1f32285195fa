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
// a path in them); a caller with a valid key gets both. The upstream's
// error was shown to anyone while the breakers' were hidden from all.
func TestHealthzDetailsNeedCredentials(t *testing.T) {
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(auth.KeySpec{Principal: "alice"})
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
		name     string
		authn    *auth.Authenticator
		key      string
		detailed bool
	}{
		{"auth on, no key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), "", false},
		{"auth on, wrong key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), "rk_wrong", false},
		{"auth on, valid key", auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz"}}), secret, true},
		{"auth off", nil, "", true},
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
		if shown := strings.Contains(body, "UPSTREAMDETAIL") && strings.Contains(body, "BREAKERDETAIL"); shown != c.detailed {
			t.Errorf("%s: errors shown %v, want %v: %s", c.name, shown, c.detailed, body)
		}
		if !c.detailed && (strings.Contains(body, "UPSTREAMDETAIL") || strings.Contains(body, "BREAKERDETAIL")) {
			t.Errorf("%s: an error shown without credentials: %s", c.name, body)
		}
	}
}
