package httpapi

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// matchCounting is a store that records the most records one MatchAudit
// could read: those with After < Seq < before (before 0: up to the head).
type matchCounting struct {
	store.Store
	span int64
}

func (c *matchCounting) MatchAudit(ctx context.Context, m store.AuditMatch, before int64, limit int) ([]*store.AuditRecord, error) {
	head, _, err := c.Store.AuditHead(ctx)
	if err != nil {
		return nil, err
	}
	last := head
	if before > 0 {
		last = min(last, before-1)
	}
	c.span = max(c.span, last-m.After)
	return c.Store.(store.AuditMatcher).MatchAudit(ctx, m, before, limit)
}

// A tenant operator's page with a filter that keeps one event, or none
// (?principal=nobody), reads at most maxTreeScan records of the log a
// page: a page that read them without filling ends short with its
// cursor, and the pages go back to the event, then to the log's first
// record. Before, the store read the whole log for one page (span 25,000)
// and the page had no cursor.
func TestAuditTenantPageFilteredIsBounded(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 25000; seq++ {
		principal := "alice"
		if seq == 10 {
			principal = "rare"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprintf("r%d", seq%7), PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"kind":"tool","name":"search_kb","decision":"completed","principal":%q,"tenant":"acme"}`, principal)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	c := &matchCounting{Store: st}
	for _, principal := range []string{"rare", "nobody"} {
		var found []int64
		pages := 0
		for before := int64(0); ; pages++ {
			if pages > 10 {
				t.Fatalf("principal %s: more than 10 pages for 25,000 events", principal)
			}
			c.span = 0
			evs, stop, err := auditView{st: c}.page(ctx, ui.AuditQuery{Tenant: "acme", Principal: principal, Before: before}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if c.span == 0 || c.span > maxTreeScan {
				t.Fatalf("principal %s, page %d: a read of %d records; want 1 to %d", principal, pages, c.span, maxTreeScan)
			}
			for _, e := range evs {
				found = append(found, e.Seq)
			}
			if stop == 0 {
				break
			}
			if before != 0 && stop >= before || len(evs) != 0 {
				t.Fatalf("principal %s, page %d: cursor %d after %d, %d events; want a page ending short, older each time", principal, pages, stop, before, len(evs))
			}
			before = stop
		}
		if want := map[string]string{"rare": "[10]", "nobody": "[]"}[principal]; fmt.Sprint(found) != want || pages < 2 {
			t.Errorf("principal %s: found %v in %d pages; want %s past the first page", principal, found, pages+1, want)
		}
	}
	// A full page of the tenant's newest events has the cursor of its
	// oldest, while older ones are left (before, it had none: the older
	// events could not be paged to); the page of the log's first has none.
	evs, stop, err := auditView{st: c}.page(ctx, ui.AuditQuery{Tenant: "acme"}, 3)
	if err != nil || len(evs) != 3 || evs[2].Seq != 25000 || stop != 24998 {
		t.Fatalf("the tenant's newest page: %d events, stop %d, %v; want 3 up to 25000, cursor 24998", len(evs), stop, err)
	}
	evs, stop, err = auditView{st: c}.page(ctx, ui.AuditQuery{Tenant: "acme", Before: 4}, 3)
	if err != nil || len(evs) != 3 || evs[0].Seq != 1 || stop != 0 {
		t.Fatalf("the tenant's first page: %d events, stop %d, %v; want 1 to 3, no cursor", len(evs), stop, err)
	}
}

// The log's pages without a request, a global operator's and one
// principal's (the view of one who is not an operator), page back with
// their cursors to the log's first event, each event once. Before, they
// were the newest page alone, with no cursor: the UI's audit page showed
// the newest 500 events and nothing older.
func TestAuditLogPagesBackToFirst(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 1200; seq++ {
		principal := "alice"
		if seq%3 == 0 {
			principal = "bob"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprintf("r%d", seq%7), PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"kind":"tool","name":"search_kb","decision":"completed","principal":%q}`, principal)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]ui.AuditQuery{"global": {}, "bob's own": {Principal: "bob", Owner: &ui.Actor{Principal: "bob"}}} {
		var seqs []int64
		pages := 0
		for before := int64(0); ; pages++ {
			if pages > 20 {
				t.Fatalf("%s: more than 20 pages", name)
			}
			q.Before = before
			evs, stop, err := auditView{st: st}.page(ctx, q, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				seqs = append(seqs, e.Seq)
			}
			if stop == 0 {
				break
			}
			if before != 0 && stop >= before {
				t.Fatalf("%s, page %d: cursor %d after %d", name, pages, stop, before)
			}
			before = stop
		}
		want := 1200
		if q.Owner != nil {
			want = 400
		}
		if len(seqs) != want || slices.Min(seqs) > 3 || len(slices.Compact(slices.Sorted(slices.Values(seqs)))) != want {
			t.Errorf("%s: %d events in %d pages, oldest %d; want each of the %d once, back to the first", name, len(seqs), pages+1, slices.Min(seqs), want)
		}
	}
}
