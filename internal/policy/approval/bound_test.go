package approval

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestPendingBoundedPerPrincipal: one principal filed any number of
// approvals (2,000 of 50 KB in 53 s against reach serve), each kept and
// listed to every reviewer of the tenant until it expired. Past
// MaxPending waiting, its next call that needs one is refused
// too_many_approvals and files none; the same call again still finds its
// approval; another principal files as before; a decision makes room.
func TestPendingBoundedPerPrincipal(t *testing.T) {
	f := newFixture(t, &Options{MaxPending: 3})
	bobCtx := f.begin(t, "bob", "")
	refund := func(n int) string { return fmt.Sprintf(`{"order_id":"A%d","amount":1}`, n) }
	for n := range 3 {
		if res := f.call(bobCtx, "refund", refund(n)); res.Status != reach.StatusPending {
			t.Fatalf("bob's refund %d: %s %+v", n, res.Status, res.Error)
		}
	}
	res := f.call(bobCtx, "refund", refund(3))
	if res.Status == reach.StatusPending || res.Status == reach.StatusSuccess || res.Error == nil || res.Error.Code != "too_many_approvals" ||
		!strings.Contains(res.Error.Message, "3 approvals waiting") || !strings.Contains(res.Error.Suggestion, "Nothing ran") {
		t.Fatalf("bob's fourth refund with 3 waiting: %s %+v, want refused too_many_approvals", res.Status, res.Error)
	}
	if n := len(f.q.List(Pending)); n != 3 || f.runs.Load() != 0 {
		t.Errorf("%d approvals pending and %d runs after the refusal, want 3 and none", n, f.runs.Load())
	}
	if res := f.call(bobCtx, "refund", refund(0)); res.Status != reach.StatusPending {
		t.Errorf("bob's first refund again: %s %+v, want its approval, pending", res.Status, res.Error)
	}
	if res := f.call(f.begin(t, "alice", ""), "refund", refund(9)); res.Status != reach.StatusPending {
		t.Errorf("alice's refund beside bob's 3: %s %+v, want pending", res.Status, res.Error)
	}
	var first Approval
	for _, a := range f.q.List(Pending) {
		if a.Principal == "bob" {
			first = a
		}
	}
	if _, err := f.q.Deny(first.ID, bob, "no"); err != nil {
		t.Fatal(err)
	}
	if res := f.call(bobCtx, "refund", refund(3)); res.Status != reach.StatusPending {
		t.Errorf("bob's fourth refund once one was denied: %s %+v, want pending", res.Status, res.Error)
	}
}

// TestPendingBoundedPerTenant: the bound is a principal's in its tenant.
// bob of tenant acme with MaxPending waiting does not refuse bob of tenant
// globex, another principal of the same name.
func TestPendingBoundedPerTenant(t *testing.T) {
	f := newFixture(t, &Options{MaxPending: 2})
	begin := func(id, tenant string) context.Context {
		ctx, req, err := f.rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Principal: "bob", Tenant: tenant, Scene: "support",
			Budget: &reach.Budget{Turns: 100}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		return ctx
	}
	acme, globex := begin("req_bob_acme", "acme"), begin("req_bob_globex", "globex")
	for n := range 2 {
		if res := f.call(acme, "refund", fmt.Sprintf(`{"order_id":"A%d","amount":1}`, n)); res.Status != reach.StatusPending {
			t.Fatalf("acme bob's refund %d: %s %+v", n, res.Status, res.Error)
		}
	}
	if res := f.call(acme, "refund", `{"order_id":"A2","amount":1}`); res.Error == nil || res.Error.Code != "too_many_approvals" {
		t.Fatalf("acme bob's third refund with 2 waiting: %s %+v, want refused too_many_approvals", res.Status, res.Error)
	}
	if res := f.call(globex, "refund", `{"order_id":"G0","amount":1}`); res.Status != reach.StatusPending {
		t.Errorf("globex bob's refund beside acme bob's 2 waiting: %s %+v, want pending (another tenant's principal)", res.Status, res.Error)
	}
}
