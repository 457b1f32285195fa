package link

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestReview6TraceOwnersApart: the calls of sessionless clients in one
// trace of another tracer share a request only when they are the same
// principal of the same tenant, however the two are spelled: tenant "a"
// with principal "b\x00c" and tenant "a\x00b" with principal "c" (a
// JWT's claims may hold any character) are two owners, and neither's call
// runs in the other's request.
func TestReview6TraceOwnersApart(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(t.Context(), rt, time.Minute, Budgets{})
	t.Cleanup(q.EndAll)
	tr := [16]byte{1, 2, 3}
	call := func(id *auth.Identity) string {
		ctx := auth.WithIdentity(context.Background(), id)
		_, r, done, err := q.CallContext(ctx, Target{Trace: 42, TraceID: tr}, q.NewClient())
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		return r.ID()
	}
	a1 := call(&auth.Identity{Principal: "b\x00c", Tenant: "a"})
	if again := call(&auth.Identity{Principal: "b\x00c", Tenant: "a"}); again != a1 {
		t.Fatalf("one owner's calls in one trace: requests %s and %s, want one", a1, again)
	}
	if b := call(&auth.Identity{Principal: "c", Tenant: "a\x00b"}); b == a1 {
		t.Errorf("tenant %q, principal %q runs in request %s of tenant %q, principal %q", "a\x00b", "c", a1, "a", "b\x00c")
	}
}
