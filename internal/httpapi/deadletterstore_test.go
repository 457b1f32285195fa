package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
)

// requestsDown is a store whose requests cannot be read (it does not
// answer), though its dead letters can.
type requestsDown struct{ *store.Memory }

func (requestsDown) GetRequest(context.Context, string) (*store.Request, error) {
	return nil, errors.New("the store did not answer")
}

// TestDeadLetterTenantUnreadable: a retry of a dead letter whose request's
// tenant cannot be read (the store did not answer) is not run: it runs in
// that tenant, and in no tenant it would be out of the tenant's audit view
// and policies. The operator is answered that the store failed, and the
// dead letter stays open, not tried. Before, a global operator's retry ran
// in no tenant, and a tenant's operator was answered that there was no
// such dead letter.
func TestDeadLetterTenantUnreadable(t *testing.T) {
	ctx := context.Background()
	q := reach.NewMemoryDeadLetters()
	d := &reach.DeadLetter{Request: "globex-trip", Tool: "release", Args: json.RawMessage(`{}`), Key: "undo:globex-trip/a"}
	if err := q.Add(ctx, d); err != nil {
		t.Fatal(err)
	}
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &API{rt: reach.New(&reach.Options{DeadLetters: q}), store: requestsDown{store.NewMemory()}, authn: &auth.Authenticator{}, redactor: red}
	for _, who := range []*auth.Identity{
		{Principal: "root", Roles: []string{"operator"}},
		{Principal: "ops", Tenant: "globex", Roles: []string{"operator"}},
	} {
		r := httptest.NewRequest("POST", "/v1/deadletters/"+d.ID+"/retry", nil)
		r = r.WithContext(auth.WithIdentity(r.Context(), who))
		r.SetPathValue("id", d.ID)
		w := httptest.NewRecorder()
		a.retryDeadLetter(w, r)
		if w.Code != 500 {
			t.Errorf("%s's retry while the dead letter's request cannot be read = %d %s, want 500 (the store)", who.Principal, w.Code, w.Body)
		}
		ds, err := q.List(ctx, reach.DeadLetterOpen)
		if err != nil || len(ds) != 1 || ds[0].Attempts != d.Attempts || ds[0].State != reach.DeadLetterOpen {
			t.Fatalf("after %s's retry the dead letters are %+v, %v; want it open and not tried", who.Principal, ds, err)
		}
	}
}
