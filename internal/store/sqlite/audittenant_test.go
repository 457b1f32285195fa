package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

var _ store.AuditTenantIndexer = (*Store)(nil)

// TestAuditTenantIndexed: a tenant's events are found by audit_tenant
// (migration 18), newest first, whatever came after them; a tenant with a
// principal too, through the same index. An event of no tenant has no
// entry. Before, the query read the log back from its cursor.
func TestAuditTenantIndexed(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 300; seq++ {
		tenant := `"tenant":"globex",`
		switch {
		case seq <= 3:
			tenant = `"tenant":"acme",`
		case seq%2 == 0:
			tenant = ""
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprint("r", seq), PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{%s"principal":"alice","kind":"tool","name":"reserve"}`, tenant)})
	}
	if err := s.AppendAudit(t.Context(), recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []store.AuditMatch{{Tenant: "acme"}, {Tenant: "acme", Principal: "alice"}} {
		q, args := dialect.MatchAuditQuery(m, 0, 2)
		if plan := queryPlan(t, s.r, "SELECT seq FROM audit "+q, args...); !strings.Contains(plan, "audit_tenant") {
			t.Errorf("%+v: the query plan is %q, want it to use audit_tenant", m, plan)
		}
	}
	got, err := s.MatchAudit(t.Context(), store.AuditMatch{Tenant: "acme"}, 0, 2)
	if err != nil || len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 {
		t.Fatalf("acme's newest 2 = %v, %v; want seqs 2 and 3", got, err)
	}
	var entries int
	if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM audit INDEXED BY audit_tenant WHERE (CASE WHEN json_valid(event) THEN event ->> 'tenant' END) IS NOT NULL`).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != 3+148 {
		t.Errorf("audit_tenant has %d entries, want 151: the events of a tenant only", entries)
	}
}

// TestAuditTenantIndexedTellsTheTruth: AuditTenantIndexed says whether
// audit_tenant was there when the store opened: true after the migrations,
// false for a database whose index was dropped by hand (a tenant's page
// is then read through a bounded range, not the whole log); the tenant's
// events are still found. Before, it answered true whatever the database
// held.
func TestAuditTenantIndexedTellsTheTruth(t *testing.T) {
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	if !s.AuditTenantIndexed() {
		t.Fatal("AuditTenantIndexed = false after the migrations, want true")
	}
	if err := s.AppendAudit(t.Context(), []*store.AuditRecord{{Seq: 1, Time: time.Now(), Request: "r1", PrevHash: []byte{0}, Hash: []byte{0},
		Data: []byte(`{"tenant":"acme","kind":"tool","name":"reserve"}`)}}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	raw, err := OpenFile(filepath.Join(dir, DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DROP INDEX audit_tenant`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s = openSQLite(t, dir, nil)
	if s.AuditTenantIndexed() {
		t.Error("AuditTenantIndexed = true for a database without audit_tenant, want false")
	}
	if got, err := s.MatchAudit(t.Context(), store.AuditMatch{Tenant: "acme"}, 0, 10); err != nil || len(got) != 1 {
		t.Errorf("acme's events without the index = %v, %v; want the one", got, err)
	}
}
