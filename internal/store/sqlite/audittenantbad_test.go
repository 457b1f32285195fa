package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestAuditTenantIndexToleratesMalformedEvents: a data folder whose audit
// log holds an event that is not JSON (a disk's or a hand's damage, which
// the views show as unreadable) still opens at schema 18, whose index
// reads each event's tenant, and a tenant's page is still read through
// it; such a row can still be written after. Before, building the index
// failed on the row ("malformed JSON"): the gateway did not start over a
// folder it had served the day before.
func TestAuditTenantIndexToleratesMalformedEvents(t *testing.T) {
	dir := t.TempDir()
	w := oldDatabase(t, dir, 17)
	now := time.Now().UnixNano()
	if _, err := w.Exec(`INSERT INTO audit (seq, time, request, event, prev_hash, hash) VALUES (1, ?, 'seed', '{not', x'00', x'00')`, now); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s := openSQLite(t, dir, nil)
	if v, err := s.SchemaVersion(t.Context()); err != nil || v < 18 {
		t.Fatalf("SchemaVersion = %d, %v; want 18 or later", v, err)
	}
	var recs []*store.AuditRecord
	for seq := int64(2); seq <= 7; seq++ {
		tenant := "globex"
		if seq%3 == 0 {
			tenant = "acme"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprint("r", seq), PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"tenant":%q,"principal":"alice","kind":"tool","name":"reserve"}`, tenant)})
	}
	if err := s.AppendAudit(t.Context(), recs, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := OpenFile(filepath.Join(dir, DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO audit (seq, time, request, event, prev_hash, hash) VALUES (8, ?, 'seed', '[broken', x'00', x'00')`, now); err != nil {
		t.Fatalf("a malformed event written after the migration: %v", err)
	}
	raw.Close()
	for _, m := range []store.AuditMatch{{Tenant: "acme"}, {Tenant: "acme", Principal: "alice"}, {Tenant: "acme", Name: "reserve"}} {
		got, err := s.MatchAudit(t.Context(), m, 0, 10)
		if err != nil || len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 6 {
			t.Errorf("%+v: %v, %v; want seqs 3 and 6", m, got, err)
		}
		q, args := dialect.MatchAuditQuery(m, 0, 2)
		if plan := queryPlan(t, s.r, "SELECT seq FROM audit "+q, args...); !strings.Contains(plan, "audit_tenant") {
			t.Errorf("%+v: the query plan is %q, want it to use audit_tenant", m, plan)
		}
	}
}
