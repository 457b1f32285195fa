package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// BenchmarkPutHandedTasks: what recording the string arguments of one
// tool call a model turn chose (1 or 16, the most recorded a call) asks of
// the store alone, one call at a time as a turn waits for it: one commit,
// the expired records and the principal's past its newest 1,000 swept in
// it. cpu-µs/op is this process's CPU, server-cpu-µs/op the throwaway
// cluster's (fsync off).
//
//	go test -run '^$' -bench PutHandedTasks -benchtime 2000x -count 5 ./internal/store/postgres/
func BenchmarkPutHandedTasks(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("strings=%d", n), func(b *testing.B) {
			s := openPostgres(b, pgtest.Database(b))
			ctx := context.Background()
			stack := []byte(`[{"id":"01a2500c145a5fe89a7ac5632c208e45","kind":"model","name":"scripted","depth":1}]`)
			ts := make([]*store.HandedTask, n)
			b.ReportAllocs()
			i := 0
			c0, s0 := cputime.Self(), serverCPU(b)
			for b.Loop() {
				i++
				now := time.Now()
				for j := range ts {
					ts[j] = &store.HandedTask{Digest: fmt.Sprintf("%064x", i*16+j), Principal: "alice", Request: fmt.Sprintf("req_%d", i),
						Frame: "01a2500c145a5fe89a7ac5632c208e45", Tool: "research", Stack: stack, Created: now, Expires: now.Add(2 * time.Minute)}
				}
				if err := s.PutHandedTasks(ctx, ts, 1000); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cputime.Self()-c0).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64((serverCPU(b)-s0).Microseconds())/float64(b.N), "server-cpu-µs/op")
		})
	}
}
