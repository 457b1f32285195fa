package telemetry

import (
	"fmt"
	"testing"

	"github.com/agentreach/reach"
)

// TestStatsByTenant: each tenant's figures count the calls of its
// requests only, the total every tenant's; past maxTenants tenants, a new
// tenant's calls count in the total and its figures say they are not kept.
func TestStatsByTenant(t *testing.T) {
	s := NewStats(0)
	call := func(tenant string, st reach.State) {
		s.Record(t.Context(), &reach.Event{Kind: reach.ToolFrame, Frame: 1, Name: "book", Tenant: tenant, State: st})
	}
	call("acme", reach.Completed)
	for range 3 {
		call("globex", reach.Failed)
	}
	call("", reach.Completed)
	if all := s.Snapshot(); len(all) != 1 || all[0].Calls != 5 {
		t.Fatalf("total = %+v, want 5 calls of book", all)
	}
	acme, kept := s.TenantSnapshot("acme")
	if !kept || len(acme) != 1 || acme[0].Calls != 1 || acme[0].Failed != 0 {
		t.Errorf("acme's = %+v (kept %v), want its 1 completed call", acme, kept)
	}
	if none, kept := s.TenantSnapshot("initech"); !kept || len(none) != 0 {
		t.Errorf("a tenant with no call = %+v (kept %v), want none, kept", none, kept)
	}
	for i := range maxTenants {
		call(fmt.Sprint("t", i), reach.Completed)
	}
	if got, kept := s.TenantSnapshot(fmt.Sprint("t", maxTenants-1)); kept || len(got) != 0 {
		t.Errorf("the tenant past the bound = %+v (kept %v), want not kept", got, kept)
	}
	if got, kept := s.TenantSnapshot("globex"); !kept || got[0].Calls != 3 {
		t.Errorf("globex's = %+v (kept %v), want its 3 calls still", got, kept)
	}
	if all := s.Snapshot(); all[0].Calls != 5+maxTenants {
		t.Errorf("total = %d calls, want every tenant's %d", all[0].Calls, 5+maxTenants)
	}
}
