package httpapi

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// readCounting counts a store's reads of a request's events before a
// cursor.
type readCounting struct {
	store.Store
	reads atomic.Int64
}

func (c *readCounting) RequestAuditBefore(ctx context.Context, request string, before int64, limit int) ([]*store.AuditRecord, error) {
	c.reads.Add(1)
	return c.Store.(store.RequestAuditPager).RequestAuditBefore(ctx, request, before, limit)
}

// TestAuditRequestPageFilteredReadsInChunks: a request page whose filters
// keep few of the request's events (a tool it never called, limit=1) reads
// the log back a chunk at a time once its first read fell short, not an
// event at a time: before, GET /v1/audit?request=ID&tool=none&limit=1 on a
// request of 4,000 events made 4,001 reads of the store, one a viewer could
// ask for again and again.
func TestAuditRequestPageFilteredReadsInChunks(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	const total = 4000
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= total; seq++ {
		tool := "search_kb"
		if seq == 5 {
			tool = "refund"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: "big", PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"kind":"tool","name":%q,"decision":"completed","request":"big","principal":"alice","tenant":"acme"}`, tool)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []ui.AuditQuery{
		{Request: "big", Tool: "none"},
		{Request: "big", Tool: "refund"},
		{Request: "big", Owner: &ui.Actor{Principal: "bob", Tenant: "acme"}},
	} {
		c := &readCounting{Store: st}
		evs, err := auditView{st: c}.events(ctx, q, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if q.Tool == "refund" {
			want = 1
		}
		if len(evs) != want {
			t.Errorf("%+v: %d events, want %d", q, len(evs), want)
		}
		if most := int64(2 + total/treeScanChunk); c.reads.Load() > most {
			t.Errorf("%+v limit 1: %d reads of the store for a request of %d events, want at most %d (a chunk at a time)", q, c.reads.Load(), total, most)
		}
	}
}
