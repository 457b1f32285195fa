package telemetry

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestStatsByTenant: each tenant's figures count the calls of its
// requests only, the total every tenant's, and they say since when they
// count: the start, while no tenant's figures were dropped.
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
	acme, since := s.TenantSnapshot("acme")
	if len(acme) != 1 || acme[0].Calls != 1 || acme[0].Failed != 0 || !since.Equal(s.Since()) {
		t.Errorf("acme's = %+v since %v, want its 1 completed call since the start %v", acme, since, s.Since())
	}
	if none, since := s.TenantSnapshot("initech"); len(none) != 0 || !since.Equal(s.Since()) {
		t.Errorf("a tenant with no call = %+v since %v, want none since the start", none, since)
	}
}

// TestStatsTenantsLeastRecentGoes: past maxTenants tenants, a new
// tenant's first call takes the place of the figures of the tenant that
// called least recently, not of one that still calls: a party that calls
// as many tenants does not lock the later ones' operators out of their
// figures, and the tenants kept stay at maxTenants. A tenant's figures say
// since when they count: those begun again, and those of a tenant without
// any, since the last drop; the total counts every call. Before, the
// first 1,024 tenants kept theirs until a restart and every later one was
// answered "not counted" (409).
func TestStatsTenantsLeastRecentGoes(t *testing.T) {
	clock := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	s := newStats(0, func() time.Time { clock = clock.Add(time.Second); return clock })
	start := s.Since()
	call := func(tenant string) {
		s.Record(t.Context(), &reach.Event{Kind: reach.ToolFrame, Frame: 1, Name: "book", Tenant: tenant, State: reach.Completed})
	}
	call("acme")
	call("globex")
	call("acme") // acme called last: globex is the least recent
	for i := range maxTenants - 1 {
		call(fmt.Sprint("t", i)) // the last of these drops globex's figures
	}
	if n := len(s.tenants); n != maxTenants {
		t.Fatalf("%d tenants' figures kept, want %d", n, maxTenants)
	}
	if got, since := s.TenantSnapshot("acme"); len(got) != 1 || got[0].Calls != 2 || !since.Equal(start) {
		t.Errorf("acme's, which called recently = %+v since %v; want its 2 calls since the start %v", got, since, start)
	}
	dropped, since := s.TenantSnapshot("globex")
	if len(dropped) != 0 || !since.After(start) {
		t.Errorf("globex's, dropped = %+v since %v; want none, since after the start %v", dropped, since, start)
	}
	last, lastSince := s.TenantSnapshot(fmt.Sprint("t", maxTenants-2))
	if len(last) != 1 || last[0].Calls != 1 || !lastSince.Equal(start) {
		t.Errorf("the tenant that came last = %+v since %v; want its call counted, since the start", last, lastSince)
	}
	call("globex") // back: its figures begin again, and acme's, now the least recent, go
	if got, again := s.TenantSnapshot("globex"); len(got) != 1 || got[0].Calls != 1 || !again.Equal(since) {
		t.Errorf("globex's again = %+v since %v; want its new call, since it was dropped (%v)", got, again, since)
	}
	if got, acmeSince := s.TenantSnapshot("acme"); len(got) != 0 || !acmeSince.After(since) {
		t.Errorf("acme's = %+v since %v; want none, dropped after globex (%v)", got, acmeSince, since)
	}
	if got, _ := s.TenantSnapshot("t0"); len(got) != 1 {
		t.Errorf("t0's = %+v, want its call: it called after acme", got)
	}
	for i := range 3 * maxTenants {
		call(fmt.Sprint("u", i))
	}
	if n, l := len(s.tenants), s.byUse.Len(); n != maxTenants || l != maxTenants {
		t.Errorf("after %d more tenants: %d tenants' figures kept (%d in the order of use), want %d", 3*maxTenants, n, l, maxTenants)
	}
	if all := s.Snapshot(); all[0].Calls != int64(3+maxTenants-1+1+3*maxTenants) {
		t.Errorf("total = %d calls, want every tenant's %d", all[0].Calls, 3+maxTenants-1+1+3*maxTenants)
	}
}
