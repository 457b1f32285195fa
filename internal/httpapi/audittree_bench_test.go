package httpapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/agentreach/reach/internal/ui"
)

// oneByOne hides a store's store.RequestsAuditor: a tree's page is read
// request by request, every event of each, as before RequestsAudit.
type oneByOne struct{ store.Store }

// BenchmarkAuditTreePage: a page of 100 events from the middle of a tree of
// 1,000 requests of 20 events each (20,000 events, interleaved), on each
// store, read as a page of the set (RequestsAudit) and request by request.
func BenchmarkAuditTreePage(b *testing.B) {
	const requests, each, limit = 1000, 20, 100
	stores := map[string]func(b *testing.B) store.Store{
		"sqlite": func(b *testing.B) store.Store {
			st, err := sqlite.Open(b.Context(), b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		"postgres": func(b *testing.B) store.Store {
			c := pgtest.Own(b)
			url, err := c.CreateDatabase(b.Context(), "tree")
			if err != nil {
				b.Fatal(err)
			}
			st, err := postgres.Open(b.Context(), url, nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st := stores[name](b)
			b.Cleanup(func() { st.Close() })
			ids := []string{"root"}
			if err := st.PutRequest(ctx, &store.Request{ID: "root", State: "running", Started: time.Now()}); err != nil {
				b.Fatal(err)
			}
			for i := 1; i < requests; i++ {
				id := fmt.Sprintf("sub-%d", i)
				if err := st.PutRequest(ctx, &store.Request{ID: id, Parent: "root", State: "running", Started: time.Now()}); err != nil {
					b.Fatal(err)
				}
				ids = append(ids, id)
			}
			var seq int64
			for range each {
				var recs []*store.AuditRecord
				for _, id := range ids {
					seq++
					recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: id, PrevHash: []byte{0}, Hash: []byte{0},
						Data: []byte(`{"kind":"tool","name":"search_kb","decision":"completed","request":"` + id + `","principal":"alice"}`)})
				}
				if err := st.AppendAudit(ctx, recs, nil); err != nil {
					b.Fatal(err)
				}
			}
			for _, read := range []string{"page", "one-by-one"} {
				b.Run(read, func(b *testing.B) {
					v := auditView{st: st}
					if read == "one-by-one" {
						v.st = oneByOne{st}
					}
					for b.Loop() {
						evs, err := v.events(ctx, ui.AuditQuery{Request: "root", Tree: true, After: seq / 2}, limit)
						if err != nil || len(evs) != limit {
							b.Fatalf("%d events, %v", len(evs), err)
						}
					}
				})
			}
		})
	}
}
