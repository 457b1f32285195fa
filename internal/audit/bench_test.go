package audit_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// benchRequests is how many requests run at once in the benchmarks: their
// events interleave in the log, as on a busy gateway.
var benchRequests = 1000

// requestID spreads events over benchRequests random-looking request ids.
func requestID(i int) string {
	h := fnv.New64a()
	fmt.Fprint(h, i%benchRequests)
	return fmt.Sprintf("req_%016x", h.Sum64())
}

// benchEvent is a typical tool-call event: about 300 bytes of content.
func benchEvent(i int) *audit.Event {
	return &audit.Event{
		Time:      time.Now(),
		Request:   requestID(i),
		Frame:     fmt.Sprintf("%016x", i),
		Parent:    fmt.Sprintf("%016x", i-1),
		Agent:     "main",
		Principal: "alice@example.com",
		Kind:      "tool",
		Name:      "search_kb",
		CallID:    fmt.Sprintf("call_%d", i),
		Decision:  "completed",
		Args:      []byte(`{"query":"quarterly revenue by region","limit":10,"filters":{"year":2025}}`),
		Result:    `{"hits":[{"id":"doc-17","title":"Q3 revenue by region","score":0.92}],"total":1}`,
		Latency:   1200 * time.Microsecond,
		Budget:    []byte(`{"turns":28,"depth":8,"tool_calls":190,"wall":590000000000}`),
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// BenchmarkAppend measures durable appends through group commit: each
// iteration is perIter events appended by `writers` goroutines, each Append
// returning only after its batch committed.
func BenchmarkAppend(b *testing.B) {
	const perIter = 4096
	for _, bc := range []struct {
		sync    string
		writers int
	}{{"NORMAL", 16}, {"NORMAL", 64}, {"NORMAL", 256}, {"NORMAL", 1024}, {"FULL", 256}, {"FULL", 1024}} {
		b.Run(fmt.Sprintf("sync=%s/writers=%d", bc.sync, bc.writers), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			st, err := sqlite.Open(ctx, dir, &sqlite.Options{Synchronous: bc.sync})
			if err != nil {
				b.Fatal(err)
			}
			log, err := audit.New(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			evs := make([]*audit.Event, perIter)
			for i := range evs {
				evs[i] = benchEvent(i)
			}
			n := 0
			cpu0 := cputime.Self()
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range bc.writers {
					wg.Go(func() {
						for i := w; i < perIter; i += bc.writers {
							if _, err := log.Append(ctx, evs[i]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				n += perIter
			}
			cpu := cputime.Self() - cpu0
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/event")
			s := log.Stats()
			b.ReportMetric(float64(s.Appended)/float64(s.Batches), "events/batch")
			if err := log.Close(); err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil { // checkpoints the WAL into the file
				b.Fatal(err)
			}
			b.ReportMetric(float64(dirSize(b, dir))/float64(s.Appended), "disk-B/event")
		})
	}
}

// BenchmarkRecord measures what the call path pays to record an event:
// Record enqueues and returns; the writer converts and commits.
// The loop records far faster than any disk keeps up, so most events are
// dropped (and counted); stored-events/s is what the writer kept up with.
func BenchmarkRecord(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := &reach.Event{Time: time.Now(), Request: "req_1", Principal: "alice", Frame: 42, Parent: 41,
		Kind: reach.ToolFrame, Name: "search_kb", Agent: "main", State: reach.Completed,
		Args: []byte(`{"query":"quarterly revenue by region","limit":10}`), Summary: "1 hit: Q3 revenue by region",
		Latency: time.Millisecond, Remaining: reach.Budget{Turns: 28, ToolCalls: 190}}
	for b.Loop() {
		log.Record(ctx, e)
	}
	elapsed := b.Elapsed()
	log.Close()
	s := log.Stats()
	b.ReportMetric(float64(s.Dropped)/float64(s.Dropped+s.Appended), "dropped-fraction")
	b.ReportMetric(float64(s.Appended)/elapsed.Seconds(), "stored-events/s")
}

// BenchmarkVerify measures walking the chain.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
	for i := range n {
		log.Record(ctx, &reach.Event{Time: time.Now(), Request: "r", Frame: reach.FrameID(i + 1), Name: "t",
			Args: []byte(`{"query":"quarterly revenue by region"}`), Summary: "ok"})
		if i%1000 == 0 {
			log.Flush(ctx)
		}
	}
	log.Close()
	for b.Loop() {
		rep, err := audit.Verify(ctx, st)
		if err != nil || rep.Events != n {
			b.Fatalf("Verify = %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
