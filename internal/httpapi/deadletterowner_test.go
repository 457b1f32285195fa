package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
)

// TestDeadLetterOwnerOrItsRequest: a tenant's operator lists a dead letter
// of its tenant by the owner it keeps, whoever holds its request's id now;
// one that keeps none (stored before dead letters kept their owner) by the
// request of its id if that began before it, and not if that began after
// it (a later request that took the id), which leaves it a global
// operator's.
func TestDeadLetterOwnerOrItsRequest(t *testing.T) {
	ctx := t.Context()
	at := time.Now().Add(-time.Hour)
	for _, c := range []struct {
		name           string
		owner          string // the tenant the dead letter keeps ("": none)
		requestTenant  string
		requestStarted time.Duration // after the dead letter
		acme, globex   bool          // whether each tenant's operator lists it
	}{
		{"kept owner, its request taken by another tenant", "globex", "acme", time.Minute, false, true},
		{"kept owner, its request its own", "globex", "globex", -time.Minute, false, true},
		{"no owner, its request began before it", "", "acme", -time.Minute, true, false},
		{"no owner, a request of its id began after it", "", "acme", time.Minute, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := reach.NewMemoryDeadLetters()
			d := &reach.DeadLetter{Request: "trip", Tool: "release", Args: json.RawMessage(`{}`), Key: "undo:trip/a", At: at, Tenant: c.owner}
			if c.owner != "" {
				d.Principal = "alice"
			}
			if err := q.Add(ctx, d); err != nil {
				t.Fatal(err)
			}
			st := store.NewMemory()
			if err := st.PutRequest(ctx, &store.Request{ID: "trip", Principal: "bob", Tenant: c.requestTenant, State: "running",
				Started: at.Add(c.requestStarted)}); err != nil {
				t.Fatal(err)
			}
			red, err := redact.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			a := &API{rt: reach.New(&reach.Options{DeadLetters: q}), store: st, authn: &auth.Authenticator{}, redactor: red}
			for _, who := range []struct {
				tenant string
				want   bool
			}{{"acme", c.acme}, {"globex", c.globex}, {"", true}} {
				r := httptest.NewRequest("GET", "/v1/deadletters?state=all", nil)
				r = r.WithContext(auth.WithIdentity(r.Context(), &auth.Identity{Principal: "ops", Tenant: who.tenant, Roles: []string{"operator"}}))
				w := httptest.NewRecorder()
				a.listDeadLetters(w, r)
				var out struct {
					DeadLetters []deadLetterJSON `json:"deadletters"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &out); w.Code != 200 || err != nil {
					t.Fatalf("the list of the operator of tenant %q = %d %s", who.tenant, w.Code, w.Body)
				}
				if got := len(out.DeadLetters) == 1; got != who.want {
					t.Errorf("the operator of tenant %q lists %s, want it listed: %v", who.tenant, fmt.Sprint(out.DeadLetters), who.want)
				}
			}
		})
	}
}
