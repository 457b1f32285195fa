package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// putApprovals stores n approvals, one in every marked of them (the
// first) marked unaudited, eight writers at once.
func putApprovals(tb testing.TB, st store.Approvals, n, every int) {
	tb.Helper()
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				data := `{"id":"` + fmt.Sprint("apr_", i) + `","status":"used"}`
				if i%every == 0 {
					data = `{"id":"` + fmt.Sprint("apr_", i) + `","status":"used","unaudited":true,"instance":"a"}`
				}
				if err := st.PutApproval(context.Background(), &store.ApprovalRecord{ID: fmt.Sprint("apr_", i), Key: fmt.Sprint("k", i),
					Status: "used", Created: now.Add(time.Duration(i) * time.Millisecond), Expires: now.Add(time.Hour), Data: []byte(data)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// TestSQLiteUnauditedApprovalsUseTheirIndex: the marked approvals (an
// action stored, its audit event not yet: a restart reads them however
// old) are read through approvals_unaudited, which holds them only, out
// of 5,000 approvals; and every marked one, and only those, comes back.
// Before (schema 23), the plan walked every approval in time order and
// read each one's data.
func TestSQLiteUnauditedApprovalsUseTheirIndex(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	putApprovals(t, s, 5000, 500)
	f := store.ApprovalFilter{Unaudited: true, Limit: 1 << 30}
	q, args := s.D.ApprovalsQuery(f)
	plan := queryPlan(t, s.r, q, args...)
	t.Logf("plan: %s", plan)
	if !strings.Contains(plan, "approvals_unaudited") {
		t.Errorf("the plan of the marked approvals is %q; want it through approvals_unaudited", plan)
	}
	s = withoutUnauditedIndex(t, s)
	t.Cleanup(func() { s.Close() })
	before := queryPlan(t, s.r, q, args...)
	t.Logf("plan without the index (schema 23): %s", before)
	if strings.Contains(before, "approvals_unaudited") {
		t.Errorf("the plan without the index is %q", before)
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
}

// BenchmarkSQLiteUnauditedApprovals: the marked approvals listed out of
// 5,000 (10 marked), through their index and, for comparison, with it
// dropped (schema 23's plan).
func BenchmarkSQLiteUnauditedApprovals(b *testing.B) {
	for _, drop := range []bool{false, true} {
		b.Run(map[bool]string{false: "indexed", true: "unindexed"}[drop], func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(context.Background(), dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			putApprovals(b, s, 5000, 500)
			if drop {
				s = withoutUnauditedIndex(b, s)
			}
			defer s.Close()
			b.ResetTimer()
			for range b.N {
				if got, err := s.ListApprovals(context.Background(), store.ApprovalFilter{Unaudited: true, Limit: 1 << 30}); err != nil || len(got) != 10 {
					b.Fatalf("%d listed: %v", len(got), err)
				}
			}
		})
	}
}

// withoutUnauditedIndex closes s, drops approvals_unaudited from its
// database (as schema 23 had it, the schema's number left at 24), and
// opens it again.
func withoutUnauditedIndex(tb testing.TB, s *Store) *Store {
	tb.Helper()
	path := s.Path()
	s.Close()
	db, err := OpenFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), `DROP INDEX approvals_unaudited`); err != nil {
		tb.Fatal(err)
	}
	db.Close()
	s, err = Open(context.Background(), filepath.Dir(path), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
