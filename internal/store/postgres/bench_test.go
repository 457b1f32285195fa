package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// serverCPU returns the throwaway cluster's CPU time so far.
func serverCPU(b *testing.B) time.Duration {
	d, err := pgtest.Shared(b).CPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkWriteCallStore is SQLite's benchmark of the same name on
// PostgreSQL: what the durable path of one write call asks of the store
// alone, at 64 concurrent calls (a claim and an "executing" checkpoint,
// each waited for; the "ended" checkpoint and the result, queued).
// cpu-µs/call is this process's CPU per call (writer and callers), and
// server-cpu-µs/call the PostgreSQL cluster's (its backends, WAL writer
// and checkpointer); the throwaway cluster runs with fsync off.
//
//	go test -run '^$' -bench WriteCallStore -benchtime 20000x ./internal/store/postgres/
func BenchmarkWriteCallStore(b *testing.B) {
	s := openPostgres(b, pgtest.Database(b))
	args := []byte(`{"amount":1,"currency":"EUR","to":"acct-42"}`)
	result := []byte(`{"status":"success","data":{"ok":true,"ref":"R-1"},"call_id":"c1"}`)
	var seq atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 CPUs
	b.ReportAllocs()
	c0, s0, batches0 := cputime.Self(), serverCPU(b), s.WriterStats().Batches
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			n := seq.Add(1)
			req, frame := fmt.Sprintf("req_%016x", n/8), fmt.Sprintf("%016x", n)
			key := "alice\x00\x00pay:" + req + "/c" + frame
			now := time.Now()
			if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "reach/0", Args: "d1", Request: req, Frame: frame,
				Claimed: now, Expires: now.Add(time.Hour)}); err != nil || !ok {
				b.Fatal(ok, err)
			}
			f := &store.Frame{Request: req, Frame: frame, Kind: "tool", Name: "pay", CallID: "c" + frame, IdemKey: key,
				State: "executing", Args: args, Started: now}
			if err := s.PutFrame(ctx, f); err != nil {
				b.Fatal(err)
			}
			end := *f
			end.State = "completed"
			s.QueueFrame(&end)
			s.QueueCompleteKey(key, "reach/0", result, now.Add(24*time.Hour))
		}
	})
	cpu, server := cputime.Self()-c0, serverCPU(b)-s0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
	b.ReportMetric(float64(server.Microseconds())/float64(b.N), "server-cpu-µs/call")
	b.ReportMetric(float64(b.N)/float64(max(s.WriterStats().Batches-batches0, 1)), "calls/commit")
}

// BenchmarkAuditAppend is internal/audit's BenchmarkAppend on PostgreSQL:
// each iteration appends 4,096 events of ~300 bytes through an audit.Log
// on the store, from `writers` goroutines, each Append returning once its
// batch committed (chained by the store after the head it locks).
//
//	go test -run '^$' -bench AuditAppend -benchtime 3s ./internal/store/postgres/
func BenchmarkAuditAppend(b *testing.B) {
	const perIter = 4096
	for _, writers := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			ctx := context.Background()
			st := openPostgres(b, pgtest.Database(b))
			log, err := audit.New(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			evs := make([]*audit.Event, perIter)
			for i := range evs {
				evs[i] = &audit.Event{Time: time.Now(), Request: fmt.Sprintf("req_%d", i/16), Frame: fmt.Sprintf("%016x", i),
					Parent: fmt.Sprintf("%016x", i-1), Agent: "main", Principal: "alice@example.com", Kind: "tool", Name: "search_kb",
					CallID: fmt.Sprintf("call_%d", i), Decision: "completed",
					Args:    []byte(`{"query":"quarterly revenue by region","limit":10,"filters":{"year":2025}}`),
					Result:  `{"hits":[{"id":"doc-17","title":"Q3 revenue by region","score":0.92}],"total":1}`,
					Latency: 1200 * time.Microsecond, Budget: []byte(`{"turns":28,"depth":8,"tool_calls":190,"wall":590000000000}`)}
			}
			n := 0
			c0, s0 := cputime.Self(), serverCPU(b)
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						for i := w; i < perIter; i += writers {
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
			cpu, server := cputime.Self()-c0, serverCPU(b)-s0
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/event")
			b.ReportMetric(float64(server.Nanoseconds())/float64(n), "server-cpu-ns/event")
			s := log.Stats()
			b.ReportMetric(float64(s.Appended)/float64(max(s.Batches, 1)), "events/batch")
			if err := log.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRunningOn is what a view of an instance's requests (GET
// /v1/requests, the UI's list) asks of the store: of 10,000 requests it
// shows completed, which run on another instance (100 of them here, with
// 1,000 more running there that it never had). ns/op is one view's query.
//
//	go test -run '^$' -bench RunningOn -benchtime 200x ./internal/store/postgres/
func BenchmarkRunningOn(b *testing.B) {
	s := openPostgres(b, pgtest.Database(b))
	ctx := context.Background()
	// b's parts ended (no replica of b's); 100 run on a, the others ended;
	// 1,000 more run on a that b never had.
	if _, err := s.pool.Exec(ctx, `INSERT INTO requests (id, state, started, updated)
		SELECT 'r' || g, CASE WHEN g < 100 OR g >= 10000 THEN 'running' ELSE 'ended' END, 1, 1 FROM generate_series(0, 10999) g;
		INSERT INTO replicas (request, owner) SELECT 'r' || g, 'A/1' FROM generate_series(0, 99) g;
		INSERT INTO replicas (request, owner) SELECT 'r' || g, 'A/1' FROM generate_series(10000, 10999) g`); err != nil {
		b.Fatal(err)
	}
	if err := s.Heartbeat(ctx, "A/1", "A", time.Now()); err != nil { // a's life runs: RunningOn names live lives' parts
		b.Fatal(err)
	}
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	b.ResetTimer()
	for b.Loop() {
		on, err := s.RunningOn(ctx, ids, "B/1")
		if err != nil || len(on) != 100 {
			b.Fatalf("RunningOn = %d requests, %v; want 100", len(on), err)
		}
	}
}
