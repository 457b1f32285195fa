package store

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendAudit measures the SQLite audit insert alone: one
// transaction per batch of ~450-byte records (a ~300-byte event as JSON).
// cpu-ns/record is the CPU the whole process spent, checkpointer included.
func BenchmarkAppendAudit(b *testing.B) {
	data := []byte(`{"frame":"00000000000000ff","parent":"00000000000000fe","agent":"main","principal":"alice@example.com",` +
		`"kind":"tool","name":"search_kb","call_id":"call_42","decision":"completed",` +
		`"args":{"query":"quarterly revenue by region","limit":10,"filters":{"year":2025}},` +
		`"result":"{\"hits\":[{\"id\":\"doc-17\",\"title\":\"Q3 revenue by region\",\"score\":0.92}],\"total\":1}",` +
		`"latency":1200000,"budget":{"turns":28,"depth":8,"tool_calls":190,"wall":590000000000}}`)
	for _, batch := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, err := Open(context.Background(), b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			seq := int64(0)
			recs := make([]*AuditRecord, batch)
			h := []byte(strings.Repeat("h", 32))
			var cpu time.Duration
			for b.Loop() {
				for i := range recs {
					seq++
					recs[i] = &AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprintf("req_%016x", seq/8),
						Data: data, PrevHash: h, Hash: h}
				}
				c := cpuTime()
				if err := s.AppendAudit(context.Background(), recs, nil); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/record")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(seq), "cpu-ns/record")
		})
	}
}
