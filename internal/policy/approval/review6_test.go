package approval

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
)

// TestReview6ApprovalOwnersApart: an approval is keyed within its root
// request's principal and tenant however they are spelled: principal
// "a\x00b" of no tenant and principal "a" of tenant "b\x00" (a JWT's
// claims may hold any character), reusing one request id and one key,
// are two owners, and the second's call does not run under the first's
// approval.
func TestReview6ApprovalOwnersApart(t *testing.T) {
	f := newFixture(t, nil)
	begin := func(principal, tenant, id string) (context.Context, *reach.Request) {
		ctx, req, err := f.rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Principal: principal, Tenant: tenant, Budget: &reach.Budget{Turns: 100}})
		if err != nil {
			t.Fatal(err)
		}
		return ctx, req
	}
	call := func(ctx context.Context, key string) *reach.Result {
		return f.rt.Call(ctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(`{"order_id":"A7","amount":5}`), IdempotencyKey: key})
	}
	for _, key := range []string{"", "k1"} {
		ctx, req := begin("a\x00b", "", "shared-"+key)
		call(ctx, key)
		p := f.q.List(Pending)
		if len(p) != 1 {
			t.Fatalf("%d pending approvals, want 1", len(p))
		}
		if _, err := f.q.Approve(p[0].ID, Actor{Principal: "a\x00b"}, ""); err != nil {
			t.Fatal(err)
		}
		runs := f.runs.Load()
		if res := call(ctx, key); res.Status != reach.StatusSuccess || f.runs.Load() != runs+1 {
			t.Fatalf("the approved call: %s, runs %d", res.Status, f.runs.Load())
		}
		req.End()
		ctx, req = begin("a", "b\x00", "shared-"+key)
		if res := call(ctx, key); res.Status != reach.StatusPending || res.Replayed || f.runs.Load() != runs+1 {
			t.Errorf("key %q: principal %q of tenant %q, under the other's request id: %s replayed=%v, runs %d; want it pending its own approval",
				key, "a", "b\x00", res.Status, res.Replayed, f.runs.Load())
		}
		req.End()
		for _, a := range f.q.List(Pending) {
			f.q.Deny(a.ID, Actor{Principal: "a", Tenant: "b\x00"}, "")
		}
	}
}
