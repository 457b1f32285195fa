package httpapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/agentreach/reach/internal/ui"
)

// BenchmarkAuditRequestPage: the newest 100 events of a request of 20,000
// on SQLite, read a page at a time (RequestAuditBefore) and as the whole
// request's log (before): B/op is what one page holds.
func BenchmarkAuditRequestPage(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	var seq int64
	for range 40 {
		var recs []*store.AuditRecord
		for range 500 {
			seq++
			recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: "big", PrevHash: []byte{0}, Hash: []byte{0},
				Data: fmt.Appendf(nil, `{"kind":"tool","name":"search_kb","decision":"completed","request":"big","principal":"alice","n":%d}`, seq)})
		}
		if err := st.AppendAudit(ctx, recs, nil); err != nil {
			b.Fatal(err)
		}
	}
	for _, read := range []string{"page", "whole"} {
		b.Run(read, func(b *testing.B) {
			v := auditView{st: st}
			if read == "whole" {
				v.st = oneByOne{st}
			}
			b.ReportAllocs()
			for b.Loop() {
				if evs, err := v.events(ctx, ui.AuditQuery{Request: "big"}, 100); err != nil || len(evs) != 100 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
		})
	}
}
