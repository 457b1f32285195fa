package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// BenchmarkKeylessClaim is the claim of a write without a key of its own
// (CutOff set: its claim looks up cut_offs, and marks its claim in flight
// and reads the other claims of its cut-off key), taken and completed, at
// 64 concurrent calls; cpu-µs/call as in BenchmarkWriteCallStore.
//
//	go test -run '^$' -bench KeylessClaim -benchtime 5000x ./internal/store/postgres/
func BenchmarkKeylessClaim(b *testing.B) {
	s := openPostgres(b, pgtest.Database(b))
	result := []byte(`{"status":"success","data":{"ok":true,"ref":"R-1"},"call_id":"c1"}`)
	var seq atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	c0 := serverCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			n := seq.Add(1)
			req := fmt.Sprintf("req_%016x", n/8)
			key := fmt.Sprintf("alice\x00\x00pay:%s/c%016x", req, n)
			now := time.Now()
			r := &store.IdemRecord{Key: key, Owner: "reach/0", Args: "d1", Claimed: now, Expires: now.Add(time.Hour),
				CutOff: fmt.Sprintf("0123456789abcdef.%064x", n), CutRoot: req}
			if _, ok, err := s.ClaimKey(ctx, r); err != nil || !ok {
				b.Fatal(ok, err)
			}
			s.QueueCompleteKey(key, "reach/0", result, now.Add(24*time.Hour))
		}
	})
	b.ReportMetric(float64((serverCPU(b)-c0).Microseconds())/float64(b.N), "server-cpu-µs/call")
}
