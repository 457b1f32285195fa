package httpapi

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/agentreach/reach/internal/ui"
)

// pageCounting is a store that counts the audit records its reads of a
// request's events return: the most one read returned, in all, and those
// of reads of a request's whole log.
type pageCounting struct {
	store.Store
	most, read, whole, reads atomic.Int64
}

func (c *pageCounting) RequestAuditBefore(ctx context.Context, request string, before int64, limit int) ([]*store.AuditRecord, error) {
	recs, err := c.Store.(store.RequestAuditPager).RequestAuditBefore(ctx, request, before, limit)
	c.read.Add(int64(len(recs)))
	c.reads.Add(1)
	for m := c.most.Load(); int64(len(recs)) > m && !c.most.CompareAndSwap(m, int64(len(recs))); m = c.most.Load() {
	}
	return recs, err
}

func (c *pageCounting) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	recs, err := c.Store.RequestAudit(ctx, request)
	c.whole.Add(int64(len(recs)))
	return recs, err
}

// TestAuditRequestPageReadsThePage: the page of one request's events
// (GET /v1/audit?request=ID) on each store is the page the request's whole
// log gave (a request of 4,000 events among 12,000, across SQLite's index
// passes and the records no pass covers yet; filtered by tool, principal
// and owner; limits 1 to 1,000), and no read of the store returns more
// than the page and one more (filtered, than a chunk of treeScanChunk
// after the first page): unfiltered, the page is all that is read, and
// the one event more that says there are older ones.
func TestAuditRequestPageReadsThePage(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return store.NewMemory() },
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			url, err := pgtest.Own(t).CreateDatabase(t.Context(), "page") // stopped when t ends: this binary has no pgtest.Main
			if err != nil {
				t.Fatal(err)
			}
			st, err := postgres.Open(t.Context(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := stores[name](t)
			const total = 12000
			var seq int64
			for seq < total {
				var recs []*store.AuditRecord
				for range 500 {
					seq++
					req, tool, who := "other", "search_kb", "alice"
					if seq%3 == 0 {
						req = "big"
					}
					if seq%7 == 0 {
						tool = "refund"
					}
					if seq%50 == 0 {
						tool = "rare"
					}
					if seq%5 == 0 {
						who = "bob"
					}
					recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: req, PrevHash: []byte{0}, Hash: []byte{0},
						Data: fmt.Appendf(nil, `{"kind":"tool","name":%q,"decision":"completed","request":%q,"principal":%q,"tenant":"acme"}`, tool, req, who)})
				}
				if err := st.AppendAudit(ctx, recs, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := st.(store.RequestAuditPager); !ok {
				t.Fatalf("%T reads no page of a request's events", st)
			}
			c := &pageCounting{Store: st}
			paged, whole := auditView{st: c}, auditView{st: oneByOne{st}}
			for _, q := range []ui.AuditQuery{
				{Request: "big"},
				{Request: "big", Tool: "refund"},
				{Request: "big", Tool: "rare"},
				{Request: "big", Principal: "bob"},
				{Request: "big", Owner: &ui.Actor{Principal: "bob", Tenant: "acme"}},
				{Request: "big", Owner: &ui.Actor{Principal: "bob", Tenant: "other"}},
				{Request: "none"},
			} {
				for _, limit := range []int{1, 7, 100, 1000} {
					c.most.Store(0)
					c.read.Store(0)
					got, err := paged.events(ctx, q, limit)
					if err != nil {
						t.Fatal(err)
					}
					want, err := whole.events(ctx, q, limit)
					if err != nil {
						t.Fatal(err)
					}
					seqs := func(evs []*audit.Event) []int64 {
						out := make([]int64, len(evs))
						for i, e := range evs {
							out[i] = e.Seq
						}
						return out
					}
					if !slices.Equal(seqs(got), seqs(want)) {
						t.Errorf("%+v limit %d: the page is %d events %v, the whole log's %d %v", q, limit, len(got), seqs(got), len(want), seqs(want))
					}
					most := limit + 1 // unfiltered, the page and the one more that says there are older events; filtered, reads on in chunks
					if q.Tool != "" || q.Principal != "" || q.Owner != nil {
						most = max(limit+1, treeScanChunk)
					}
					if c.most.Load() > int64(most) || c.whole.Load() != 0 {
						t.Errorf("%+v limit %d: a read returned %d records, the whole log's reads %d; want at most %d, none", q, limit, c.most.Load(), c.whole.Load(), most)
					}
					read := len(want) // and one more when the page is full: "big" has more events than any limit
					if len(want) == limit {
						read++
					}
					if q.Tool == "" && q.Principal == "" && q.Owner == nil && c.read.Load() != int64(read) {
						t.Errorf("%+v limit %d: %d records read for a page of %d; want %d", q, limit, c.read.Load(), len(want), read)
					}
				}
			}
		})
	}
}

// A filtered page of a long request reads on past the first page in
// chunks of treeScanChunk, as a tree's page does: a filter that keeps
// little of 4,000 events, with ?limit=1, makes a handful of reads, not one
// a record (4,000 queries before, for one row or none).
func TestAuditRequestPageFilteredReadsInChunks(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 4000; seq++ {
		tool := "search_kb"
		if seq == 10 {
			tool = "rare"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: "big", PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"kind":"tool","name":%q,"decision":"completed","request":"big","principal":"alice"}`, tool)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	c := &pageCounting{Store: st}
	for _, tool := range []string{"rare", "none"} {
		c.reads.Store(0)
		got, err := auditView{st: c}.events(ctx, ui.AuditQuery{Request: "big", Tool: tool}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"rare": 1, "none": 0}[tool]; len(got) != want || want == 1 && got[0].Seq != 10 {
			t.Fatalf("tool %s: %d events; want %d", tool, len(got), want)
		}
		if n := c.reads.Load(); n > 1+4000/treeScanChunk+1 {
			t.Errorf("tool %s, limit 1: %d reads of the store for 4,000 events; want the first page, then chunks of %d", tool, n, treeScanChunk)
		}
	}
}

// A filtered page of a long request reads at most maxTreeScan events (and
// the chunk that passes it), as a tree's page does, and ends short with
// the cursor of the page of older events: a filter that kept nothing read
// the whole request for one page (25,000 events here). Followed from
// cursor to cursor, the pages find the one event the filter keeps, and
// stop after the request's first event.
func TestAuditRequestPageFilteredIsBounded(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 25000; seq++ {
		tool := "search_kb"
		if seq == 10 {
			tool = "rare"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: "big", PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"kind":"tool","name":%q,"decision":"completed","request":"big","principal":"alice"}`, tool)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	c := &pageCounting{Store: st}
	for _, tool := range []string{"rare", "none"} {
		var found []int64
		pages := 0
		for before := int64(0); ; pages++ {
			if pages > 10 {
				t.Fatalf("tool %s: more than 10 pages for 25,000 events", tool)
			}
			c.read.Store(0)
			evs, stop, err := auditView{st: c}.page(ctx, ui.AuditQuery{Request: "big", Tool: tool, Before: before}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := c.read.Load(); n > maxTreeScan+treeScanChunk {
				t.Fatalf("tool %s, limit 1, page %d: read %d events; want at most %d", tool, pages, n, maxTreeScan+treeScanChunk)
			}
			for _, e := range evs {
				found = append(found, e.Seq)
			}
			if stop == 0 {
				break
			}
			if before != 0 && stop >= before || len(evs) != 0 {
				t.Fatalf("tool %s, page %d: cursor %d after %d, %d events; want a page ending short, older each time", tool, pages, stop, before, len(evs))
			}
			before = stop
		}
		if want := map[string]string{"rare": "[10]", "none": "[]"}[tool]; fmt.Sprint(found) != want || pages < 2 {
			t.Errorf("tool %s: found %v in %d pages; want %s past the first page", tool, found, pages+1, want)
		}
	}
}

// pagesCounting is a store that counts what its reads of requests' events
// return: the most one page read returned, the page reads, and the
// records of reads of a request's whole log.
type pagesCounting struct {
	store.Store
	most, reads, whole atomic.Int64
}

func (c *pagesCounting) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	recs, err := c.Store.(store.RequestsAuditor).RequestsAudit(ctx, requests, after, upTo, limit)
	c.reads.Add(1)
	for m := c.most.Load(); int64(len(recs)) > m && !c.most.CompareAndSwap(m, int64(len(recs))); m = c.most.Load() {
	}
	return recs, err
}

func (c *pagesCounting) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	recs, err := c.Store.RequestAudit(ctx, request)
	c.whole.Add(int64(len(recs)))
	return recs, err
}

// TestGoneByRetentionReadsPages: whether a request the store no longer
// keeps was removed by retention (GET /v1/requests/ID of one, the audit
// page's marks) is read from its events a page at a time, the first event
// and the last's time kept, and no further than a stop: it read the
// request's whole log (175 MB allocated for 100,000 events, for any
// principal's GET of the id).
func TestGoneByRetentionReadsPages(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, stopAt := range []int64{0, 5} {
		st := store.NewMemory()
		var recs []*store.AuditRecord
		for seq := int64(1); seq <= 2500; seq++ {
			kind := "tool"
			if seq == stopAt {
				kind = "stop"
			}
			recs = append(recs, &store.AuditRecord{Seq: seq, Time: at.Add(time.Duration(seq) * time.Second), Request: "gone", PrevHash: []byte{0}, Hash: []byte{0},
				Data: fmt.Appendf(nil, `{"kind":%q,"name":"search_kb","decision":"completed","principal":"alice"}`, kind)})
		}
		if err := st.AppendAudit(ctx, recs, nil); err != nil {
			t.Fatal(err)
		}
		c := &pagesCounting{Store: st}
		first, last, gone := goneByRetention(ctx, c, "gone")
		if c.whole.Load() != 0 || c.most.Load() > goneScanPage {
			t.Errorf("stop at %d: read %d records of the request's whole log, at most %d in a page; want pages of at most %d", stopAt, c.whole.Load(), c.most.Load(), goneScanPage)
		}
		switch stopAt {
		case 0:
			if !gone || first == nil || first.Seq != 1 || first.Principal != "alice" || !last.Equal(at.Add(2500*time.Second)) || c.reads.Load() != 3 {
				t.Errorf("no stop: gone %v, first %+v, last %v, %d reads; want gone, seq 1, the 2,500th event's time, 3 reads", gone, first, last, c.reads.Load())
			}
		default:
			if gone || c.reads.Load() != 1 {
				t.Errorf("a stop in the first page: gone %v after %d reads; want not gone after 1", gone, c.reads.Load())
			}
		}
	}
}
