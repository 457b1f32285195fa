package approval

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// listingStore is a store that finds pending approvals by a text of their
// data as postgres.Store does (strpos on the data, oldest first, limit).
type listingStore struct{ *sqlite.Store }

func (s listingStore) PendingApprovals(ctx context.Context, text string, now time.Time, limit int) ([]*store.ApprovalRecord, error) {
	all, err := s.ListApprovals(ctx, store.ApprovalFilter{Live: true, Limit: 100_000})
	if err != nil {
		return nil, err
	}
	var out []*store.ApprovalRecord
	for _, a := range all {
		if a.Status == store.ApprovalPending && a.Expires.After(now) && bytes.Contains(a.Data, []byte(text)) {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b *store.ApprovalRecord) int { return a.Created.Compare(b.Created) })
	return out[:min(len(out), limit)], nil
}

// TestSharedBoundAmongSameNamedPrincipals: instances share a store, and
// principals of the same name wait in many tenants (admin in each). The
// bound of acme's alice counts hers asked on the other instance, however
// many of the other tenants' alices were asked before: the store's
// lookup names her tenant, not her name alone, which found only the
// oldest of all the alices' and missed hers.
func TestSharedBoundAmongSameNamedPrincipals(t *testing.T) {
	st := listingStore{openStore(t, t.TempDir())}
	var runs atomic.Int32
	const max = 2
	a := newLife(t, st, &runs, &Options{Shared: true, MaxPending: max})
	b := newLife(t, st, &runs, &Options{Shared: true, MaxPending: max})
	refund := func(l *life, tenant string, n int) *reach.Result {
		t.Helper()
		ctx, req, err := l.rt.Begin(t.Context(), &reach.RequestOptions{ID: fmt.Sprintf("r_%s_%d", tenant, n), Principal: "alice", Tenant: tenant,
			Budget: &reach.Budget{Turns: 100}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		return l.rt.Call(ctx, &reach.Call{ID: "c", Tool: "refund", Arguments: fmt.Appendf(nil, `{"order":"%s-%d"}`, tenant, n)})
	}
	for i := range 9 { // more than the lookup's limit (8 x max) of other tenants' alices, asked first
		for n := range max {
			if res := refund(a, fmt.Sprintf("t%d", i), n); res.Status != reach.StatusPending {
				t.Fatalf("t%d alice's refund %d: %s %+v", i, n, res.Status, res.Error)
			}
		}
	}
	for n := range max {
		if res := refund(a, "acme", n); res.Status != reach.StatusPending {
			t.Fatalf("acme alice's refund %d on A: %s %+v", n, res.Status, res.Error)
		}
	}
	if res := refund(b, "acme", max); res.Error == nil || res.Error.Code != "too_many_approvals" {
		t.Errorf("acme alice's refund on B with %d of hers waiting (asked on A): %s %+v, want refused too_many_approvals", max, res.Status, res.Error)
	}
}
