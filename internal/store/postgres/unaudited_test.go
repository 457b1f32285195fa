package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// fillApprovals stores n approvals, one in every marked of them
// (i%every == 0) marked unaudited, in one statement, and analyzes the
// table (as autovacuum does for a table of that size).
func fillApprovals(tb testing.TB, s *Store, n, every int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `INSERT INTO approvals (id, key, alt, status, version, created, expires, updated, data)
	SELECT 'apr_' || i, 'k' || i, '', 'used', 1, 1000000 + i, 9000000000000000000, 1,
		CASE WHEN i % $2 = 0 THEN '{"id":"apr_' || i || '","unaudited":true,"instance":"a"}' ELSE '{"id":"apr_' || i || '"}' END
	FROM generate_series(0, $1 - 1) AS i`, n, every); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE approvals`); err != nil {
		tb.Fatal(err)
	}
}

// explain is PostgreSQL's plan of q, its lines joined by "; ".
func explain(tb testing.TB, s *Store, q string, args ...any) string {
	tb.Helper()
	rows, err := s.pool.Query(context.Background(), `EXPLAIN `+q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			tb.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	return strings.Join(lines, "; ")
}

// TestUnauditedApprovalsUseTheirIndexOnPostgres: the marked approvals
// (an action stored, its audit event not yet: a restart, and every
// adoption of a dead instance's actions, reads them however old) are read
// through approvals_unaudited, which holds them only, out of 5,000
// approvals; every marked one, and only those, comes back. Before (schema
// 33), the plan read the whole table and each row's data.
func TestUnauditedApprovalsUseTheirIndexOnPostgres(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	fillApprovals(t, s, 5000, 500)
	f := store.ApprovalFilter{Unaudited: true, Limit: 1 << 30}
	q, args := s.D.ApprovalsQuery(f)
	plan := explain(t, s, q, args...)
	t.Logf("plan: %s", plan)
	if !strings.Contains(plan, "approvals_unaudited") {
		t.Errorf("the plan of the marked approvals is %q; want it through approvals_unaudited", plan)
	}
	got, err := s.ListApprovals(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("%d marked approvals listed; want 10", len(got))
	}
	for i, a := range got {
		if want := fmt.Sprint("apr_", 4500-500*i); a.ID != want {
			t.Errorf("marked approval %d is %s; want %s (newest first)", i, a.ID, want)
		}
	}
	if _, err := s.pool.Exec(t.Context(), `DROP INDEX approvals_unaudited`); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan without the index (schema 33): %s", explain(t, s, q, args...))
}

// BenchmarkUnauditedApprovalsOnPostgres: the marked approvals listed out
// of 5,000 (10 marked), through their index and, for comparison, with it
// dropped (schema 33's plan).
func BenchmarkUnauditedApprovalsOnPostgres(b *testing.B) {
	url := pgtest.Database(b)
	for _, drop := range []bool{false, true} {
		b.Run(map[bool]string{false: "indexed", true: "unindexed"}[drop], func(b *testing.B) {
			s := openPostgres(b, url)
			if _, err := s.pool.Exec(context.Background(), `DELETE FROM approvals`); err != nil {
				b.Fatal(err)
			}
			fillApprovals(b, s, 5000, 500)
			if drop {
				if _, err := s.pool.Exec(context.Background(), `DROP INDEX IF EXISTS approvals_unaudited`); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if got, err := s.ListApprovals(context.Background(), store.ApprovalFilter{Unaudited: true, Limit: 1 << 30}); err != nil || len(got) != 10 {
					b.Fatalf("%d listed: %v", len(got), err)
				}
			}
		})
	}
}
