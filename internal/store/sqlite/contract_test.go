package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/storetest"
)

func openSQLite(t *testing.T, dir string, o *Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The SQLite store keeps the contract of every store.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openSQLite(t, t.TempDir(), nil) })
}

// The audit index catches up in runs of indexEvery records, and
// RequestAudit finds the records not indexed yet (storetest checks what it
// finds).
func TestSQLiteIndexesAuditInRuns(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	const n = 2*indexEvery + 1000
	var batch []*store.AuditRecord
	for seq := int64(1); seq <= n; seq++ {
		batch = append(batch, auditRecord(seq, fmt.Sprintf("r%d", seq%7)))
		if len(batch) == 300 || seq == n {
			if err := s.AppendAudit(ctx, batch, nil); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	if v := s.indexed.Load(); v < 2*indexEvery || v >= n {
		t.Errorf("indexed up to %d, want between %d and %d", v, 2*indexEvery, n)
	}
	recs, err := s.RequestAudit(ctx, "r3")
	if err != nil || len(recs) != (n+4)/7 {
		t.Errorf("RequestAudit(r3) = %d records, %v; want %d", len(recs), err, (n+4)/7)
	}
}

var t0 = time.Unix(1_700_000_000, 123456789)

func auditRecord(seq int64, request string) *store.AuditRecord {
	return &store.AuditRecord{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Request: request,
		Data:     fmt.Appendf(nil, `{"kind":"tool","name":"search","n":%d}`, seq),
		PrevHash: bytes.Repeat([]byte{byte(seq - 1)}, 32), Hash: bytes.Repeat([]byte{byte(seq)}, 32)}
}
