package durable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// framesCounting is a store that counts what its reads of requests' events
// return: the most one page read returned, and the records of reads of a
// request's whole log.
type framesCounting struct {
	*sqlite.Store
	most, whole int
}

func (c *framesCounting) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	recs, err := c.Store.RequestsAudit(ctx, requests, after, upTo, limit)
	c.most = max(c.most, len(recs))
	return recs, err
}

func (c *framesCounting) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	recs, err := c.Store.RequestAudit(ctx, request)
	c.whole += len(recs)
	return recs, err
}

// TestHistoryFramesReadsPages: a past request's frames (its graph, after
// a restart) are read from its audit events a page at a time, all of them
// and in order: it read the request's whole log, and held every event with
// the frames (153-179 MB of heap for 100,000).
func TestHistoryFramesReadsPages(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 2500; seq++ {
		req := "big"
		if seq%5 == 0 {
			req = "other"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: at.Add(time.Duration(seq) * time.Second), Request: req, PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"frame":"%016x","kind":"tool","name":"search_kb","decision":"completed"}`, seq)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	c := &framesCounting{Store: st}
	frames := NewHistory(c, nil).Frames("big")
	if c.whole != 0 || c.most > framePage {
		t.Errorf("read %d records of the request's whole log, at most %d in a page; want pages of at most %d", c.whole, c.most, framePage)
	}
	if len(frames) != 2000 {
		t.Fatalf("%d frames, want 2,000", len(frames))
	}
	for i := 1; i < len(frames); i++ {
		if frames[i].ID <= frames[i-1].ID || frames[i].ID%5 == 0 {
			t.Fatalf("frame %d is %v after %v: want the request's, in order", i, frames[i].ID, frames[i-1].ID)
		}
	}
}
