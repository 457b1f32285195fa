package sqlite

import (
	"fmt"
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
