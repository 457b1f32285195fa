package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

var _ store.AuditTenantIndexer = (*Store)(nil)

// TestPostgresAuditTenantIndexed: under 20,000 events of another tenant, a
// tenant's newest events are found by audit_tenant (migration 27), its
// principal's too; an event of no tenant has no entry. Before, the query
// read the log back from its cursor through the other tenant's events.
func TestPostgresAuditTenantIndexed(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `INSERT INTO audit (seq, time, request, event, prev_hash, hash)
		SELECT g, 0, 'r' || g, CASE WHEN g <= 3 THEN '{"tenant":"acme","principal":"alice"}' WHEN g % 2 = 0 THEN '{"principal":"bob"}'
			ELSE '{"tenant":"globex","principal":"alice"}' END::json, '\x00', '\x00' FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE audit`); err != nil {
		t.Fatal(err)
	}
	for _, m := range []store.AuditMatch{{Tenant: "acme"}, {Tenant: "acme", Principal: "alice"}} {
		q, args := dialect.MatchAuditQuery(m, 0, 2)
		rows, err := s.pool.Query(ctx, "EXPLAIN SELECT seq FROM audit "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "audit_tenant") {
			t.Errorf("%+v: the plan does not use audit_tenant:\n%s", m, p)
		}
	}
	got, err := s.MatchAudit(ctx, store.AuditMatch{Tenant: "acme"}, 0, 2)
	if err != nil || len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 {
		t.Fatalf("acme's newest 2 = %v, %v; want seqs 2 and 3", got, err)
	}
}

// TestPostgresAuditTenantIndexedTellsTheTruth: AuditTenantIndexed says
// whether audit_tenant was there and valid when the store opened: true
// after the migrations, false for a database whose index was dropped by
// hand. Before, it answered true whatever the database held.
func TestPostgresAuditTenantIndexedTellsTheTruth(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	if !s.AuditTenantIndexed() {
		t.Fatal("AuditTenantIndexed = false after the migrations, want true")
	}
	if _, err := s.pool.Exec(context.Background(), `DROP INDEX audit_tenant`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s = openPostgres(t, url); s.AuditTenantIndexed() {
		t.Error("AuditTenantIndexed = true for a database without audit_tenant, want false")
	}
}
