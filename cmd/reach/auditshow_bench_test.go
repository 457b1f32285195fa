package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestAuditShowBenchData writes, into the data folder
// REACH_AUDIT_SHOW_DATA names (skipped without it), the log that
// docs/BENCHMARKS.md's "reach audit show of a request of 100,000 events"
// measures reach audit show on: 105,000 events, 100,000 of request big
// and every 21st of request other.
func TestAuditShowBenchData(t *testing.T) {
	dir := os.Getenv("REACH_AUDIT_SHOW_DATA")
	if dir == "" {
		t.Skip("REACH_AUDIT_SHOW_DATA names no data folder to write")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	var seq int64
	for range 210 {
		var recs []*store.AuditRecord
		for range 500 {
			seq++
			req := "big"
			if seq%21 == 0 {
				req = "other"
			}
			recs = append(recs, &store.AuditRecord{Seq: seq, Time: at.Add(time.Duration(seq) * time.Millisecond), Request: req, PrevHash: []byte{0}, Hash: []byte{0},
				Data: fmt.Appendf(nil, `{"frame":"%016x","parent":"000000000000000a","kind":"tool","name":"search_kb","decision":"completed","args":{"query":"refund policy %d"},"result":"{\"hits\":%d}","latency":%d,"principal":"alice"}`, seq, seq, seq%7, seq*1000)})
		}
		if err := st.AppendAudit(ctx, recs, nil); err != nil {
			t.Fatal(err)
		}
	}
	if recs, err := st.RequestAudit(ctx, "big"); err != nil || len(recs) != 100000 {
		t.Fatalf("request big has %d events, %v; want 100,000", len(recs), err)
	}
}
