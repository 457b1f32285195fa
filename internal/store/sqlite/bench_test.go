package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/frames"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

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
			recs := make([]*store.AuditRecord, batch)
			h := []byte(strings.Repeat("h", 32))
			var cpu time.Duration
			for b.Loop() {
				for i := range recs {
					seq++
					recs[i] = &store.AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprintf("req_%016x", seq/8),
						Data: data, PrevHash: h, Hash: h}
				}
				c := cputime.Self()
				if err := s.AppendAudit(context.Background(), recs, nil); err != nil {
					b.Fatal(err)
				}
				cpu += cputime.Self() - c
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/record")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(seq), "cpu-ns/record")
		})
	}
}

// BenchmarkWriteCallStore measures what the durable path of one write call
// asks of the store alone, at 64 concurrent calls: a durable idempotency
// claim that carries the "executing" checkpoint (one write, waited for, as
// the call does before it runs), then the "ended" checkpoint and the
// recorded result, queued. cpu-µs/call is the CPU the whole process spent (writer,
// checkpointer and callers) per call.
//
//	go test -run '^$' -bench WriteCallStore -benchtime 20000x ./internal/store/sqlite/
//
// c=1 runs the calls one at a time: ns/op is then what a call waits for
// the store (its claim's commit) plus its queueing. The calls' requests,
// frames and keys follow each other in order; ",random" runs them with
// random ids, as the runtime drew them before (a request's and a frame's
// ids at random, and a key names its request), ",time" with the ids it
// makes now, in time order (package ids). c=8 and c=16 give the writer
// batches of about 8 and 16 calls: what it commits served under 64
// clients, whose calls reach the store spread over a tool's round trip
// (0.07-0.12 commits a call in the served benchmark), not all at once.
func BenchmarkWriteCallStore(b *testing.B) {
	b.Run("c=64", func(b *testing.B) { writeCalls(b, 32, orderedIDs()) }) // 64 goroutines on 2 CPUs
	b.Run("c=1", func(b *testing.B) { writeCalls(b, 0, orderedIDs()) })
	b.Run("c=8", func(b *testing.B) { writeCalls(b, 4, orderedIDs()) })
	b.Run("c=16", func(b *testing.B) { writeCalls(b, 8, orderedIDs()) })
	b.Run("c=64,random", func(b *testing.B) { writeCalls(b, 32, randomIDs) })
	b.Run("c=1,random", func(b *testing.B) { writeCalls(b, 0, randomIDs) })
	b.Run("c=64,time", func(b *testing.B) { writeCalls(b, 32, timeIDs) })
	b.Run("c=1,time", func(b *testing.B) { writeCalls(b, 0, timeIDs) })
	// As served: 64 clients' calls in 128 sessions, ids as the runtime makes them.
	b.Run("c=64,sessions", func(b *testing.B) { writeCalls(b, 32, servedIDs()) })
	b.Run("c=1,sessions", func(b *testing.B) { writeCalls(b, 0, servedIDs()) })
	// The batches served under 64 clients (8-14 calls a commit), in sessions.
	b.Run("c=8,sessions", func(b *testing.B) { writeCalls(b, 4, servedIDs()) })
	b.Run("c=16,sessions", func(b *testing.B) { writeCalls(b, 8, servedIDs()) })
}

// servedIDs returns the ids of calls in 128 sessions, as the runtime makes
// them (sessionIDs with package ids).
func servedIDs() callIDs {
	return sessionIDs(func() string { return ids.Text("req_") }, func() string { return frames.ID(ids.Frame()).String() })
}

// callIDs returns the ids of a write call: its request, its frame and the
// call's own id (which, with the request, makes its idempotency key).
type callIDs func() (req, frame, call string)

// orderedIDs returns request and frame ids that follow each other: eight
// calls a request.
func orderedIDs() callIDs {
	var seq atomic.Int64
	return func() (string, string, string) {
		n := seq.Add(1)
		frame := fmt.Sprintf("%016x", n)
		return fmt.Sprintf("req_%016x", n/8), frame, "c" + frame
	}
}

// randomIDs returns a request id and a frame id drawn at random, as the
// runtime drew them before their ids were in time order ("req_" and 16 hex
// digits; 64 bits).
func randomIDs() (string, string, string) {
	frame := fmt.Sprintf("%016x", rand.Uint64())
	return fmt.Sprintf("req_%016x", rand.Uint64()), frame, "c" + frame
}

// timeIDs returns a request id and a frame id as the runtime makes them
// (package ids: in time order).
func timeIDs() (string, string, string) {
	frame := frames.ID(ids.Frame()).String()
	return ids.Text("req_"), frame, "c" + frame
}

// sessionIDs returns the ids of calls made in 128 sessions, each a request
// (made by req) that all its calls share, as served: the calls go round
// the sessions, each numbered as the gateway numbers a call whose client
// named none (ids.AppendCall: "mcp_", a random prefix, a count in 16 hex
// digits), and its frame from frame.
func sessionIDs(req func() string, frame func() string) callIDs {
	var reqs [128]string
	for i := range reqs {
		reqs[i] = req()
	}
	var seq atomic.Uint64
	return func() (string, string, string) {
		n := seq.Add(1)
		return reqs[n%uint64(len(reqs))], frame(), string(ids.AppendCall(nil, "mcp_1f2e3d4c_", n))
	}
}

// writeCall returns one write call of the benchmarks, with ids from next.
func writeCall(b *testing.B, s *Store, next callIDs) func(ctx context.Context) {
	args := []byte(`{"amount":1,"currency":"EUR","to":"acct-42"}`)
	result := []byte(`{"status":"success","data":{"ok":true,"ref":"R-1"},"call_id":"c1"}`)
	return func(ctx context.Context) {
		req, frame, callID := next()
		key := derivedKey(req, callID)
		now := time.Now()
		f := &store.Frame{Request: req, Frame: frame, Kind: "tool", Name: "pay", CallID: callID, IdemKey: key,
			State: "executing", Args: args, Started: now}
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "reach/0", Args: "d1", Request: req, Frame: frame,
			Claimed: now, Expires: now.Add(time.Hour), Executing: f}); err != nil || !ok {
			b.Fatal(ok, err)
		}
		end := *f
		end.State = "completed"
		end.EndOnly = true // as the runtime's checkpoints end (durable.Checkpoints.Ended)
		s.QueueFrame(&end)
		s.QueueCompleteKey(key, "reach/0", result, now.Add(24*time.Hour))
	}
}

// derivedKey returns the record key the runtime derives for a call of
// alice's tool pay (reach's idemKeys): "ROOT/CALL", or "CALL/ROOT" when
// the gateway numbered the call's id.
func derivedKey(req, callID string) string {
	if ids.Numbered(callID) {
		return "alice\x00\x00pay:" + callID + "/" + req
	}
	return "alice\x00\x00pay:" + req + "/" + callID
}

// runCalls runs call b.N times, on 2*parallelism goroutines, or one at a
// time (0).
func runCalls(b *testing.B, parallelism int, call func(ctx context.Context)) {
	ctx := context.Background()
	if parallelism == 0 {
		for b.Loop() {
			call(ctx)
		}
		return
	}
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			call(ctx)
		}
	})
}

// writeCalls runs BenchmarkWriteCallStore with 2*parallelism goroutines,
// or one at a time (0): then ns/op is what a call waits for the store.
func writeCalls(b *testing.B, parallelism int, next callIDs) {
	s, err := Open(context.Background(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	call := writeCall(b, s, next)
	b.ReportAllocs()
	c0 := cputime.Self()
	runCalls(b, parallelism, call)
	cpu := cputime.Self() - c0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
	b.ReportMetric(float64(b.N)/float64(max(s.WriterStats().Batches, 1)), "calls/commit")
}

// BenchmarkCommitFloor measures the least a durable write can cost on this
// engine: one small row inserted and committed, one transaction at a time,
// on a connection set up as the writer's (WAL, synchronous NORMAL), with
// the statements prepared. A write call's claim waits for at least this
// before its tool runs.
//
//	go test -run '^$' -bench CommitFloor -benchtime 20000x ./internal/store/sqlite/
func BenchmarkCommitFloor(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.wc.ExecContext(ctx, `CREATE TABLE floor (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		b.Fatal(err)
	}
	var ins rawStmt
	if err := s.wc.Raw(func(dc any) error {
		st, err := dc.(driver.Conn).Prepare(`INSERT INTO floor (v) VALUES (?)`)
		ins, _ = st.(rawStmt)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	s.W.Stop() // the benchmark has the connection to itself
	c0 := cputime.Self()
	for b.Loop() {
		if _, err := s.exec(s.txBegin, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := s.exec(ins, []any{"alice/pay/c1"}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.exec(s.txCommit, nil); err != nil {
			b.Fatal(err)
		}
	}
	s.wc.Raw(func(any) error { return ins.Close() })
	b.ReportMetric(float64((cputime.Self()-c0).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/commit")
}

// BenchmarkWriteCallPages counts what a write call writes to the WAL: the
// pages each commit dirties (each a WAL frame of page_size+24 bytes, two
// pwrites), per call and per commit, one call at a time and 64 at once.
// The checkpointer is kept from running, so that the WAL's frame count (the
// wal-index's mxFrame) only grows. The ids are those the runtime drew
// before (ids=random: random request and frame ids) and makes now
// (ids=time: in time order, package ids); each call runs in a request of
// its own (requests=call: a sessionless client's) or in one of 128 that
// the calls go round (requests=session: served sessions), its key naming
// its request under one principal and tool.
//
//	CGO_ENABLED=0 go test -run '^$' -bench WriteCallPages -benchtime 4000x ./internal/store/sqlite/
//
// settle-pages/call are the pages the next move of the marks (settleMarks)
// writes, shared by the b.N calls: -benchtime 1000x moves them as often as
// the checkpointer does.
//
// benchstat -col /ids sets the two kinds of ids side by side.
func BenchmarkWriteCallPages(b *testing.B) {
	kinds := []struct {
		name string
		ids  func() callIDs
	}{
		{"ids=random/requests=call", func() callIDs { return randomIDs }},
		{"ids=time/requests=call", func() callIDs { return timeIDs }},
		{"ids=random/requests=session", func() callIDs {
			return sessionIDs(func() string { r, _, _ := randomIDs(); return r }, func() string { _, f, _ := randomIDs(); return f })
		}},
		{"ids=time/requests=session", servedIDs},
	}
	for _, c := range []struct {
		name        string
		parallelism int
	}{{"c=1", 0}, {"c=8", 4}, {"c=64", 32}} {
		for _, k := range kinds {
			b.Run(c.name+"/"+k.name, func(b *testing.B) { writeCallPages(b, c.parallelism, k.ids()) })
		}
	}
}

func writeCallPages(b *testing.B, parallelism int, next callIDs) {
	s, err := Open(context.Background(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.unsynced.Store(math.MinInt64 / 2) // no checkpoint: the WAL only grows
	call := writeCall(b, s, next)
	ctx := context.Background()
	// A table that is not empty: 2,000 calls before, and the marks moved
	// after them as the checkpointer moves them (kept from running here),
	// which sizes the room a claim keeps for its result (migration 17).
	for range 2000 {
		call(ctx)
	}
	if err := flush(ctx, s); err != nil {
		b.Fatal(err)
	}
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		b.Fatal(err)
	}
	var size int64
	if err := s.r.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	frames0, commits0 := walFrames(b, s), s.WriterStats().Batches
	c0 := cputime.Self()
	runCalls(b, parallelism, call)
	if err := flush(ctx, s); err != nil {
		b.Fatal(err)
	}
	cpu := cputime.Self() - c0
	frames, commits := walFrames(b, s)-frames0, s.WriterStats().Batches-commits0
	b.ReportMetric(float64(frames)/float64(b.N), "pages/call")
	b.ReportMetric(float64(frames*(size+24))/float64(b.N), "wal-B/call")
	b.ReportMetric(float64(frames)/float64(max(commits, 1)), "pages/commit")
	b.ReportMetric(float64(b.N)/float64(max(commits, 1)), "calls/commit")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/call")
	for tree, n := range walTrees(b, s, frames0) {
		b.ReportMetric(float64(n)/float64(b.N), tree+"-pages/call")
	}
	// The mark of the settled frames and claims moved past the calls, as
	// the checkpointer moves it every checkpointEvery rows (some 1,000
	// calls): the pages that costs, shared by the calls it passes.
	b.StopTimer()
	frames1 := walFrames(b, s)
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(walFrames(b, s)-frames1)/float64(b.N), "settle-pages/call")
}

// flush returns once every write queued before it is committed.
func flush(ctx context.Context, s *Store) error {
	return s.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}})
}

// walTrees counts the WAL's frames after the first from by the b-tree
// (table or index) their page belongs to now (SQLite's dbstat), "other"
// for a page of none (the freelist). Each frame's header starts with its
// page number, big-endian; the WAL's header is 32 bytes.
func walTrees(b *testing.B, s *Store, from int64) map[string]int {
	var size int64
	if err := s.r.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	tree := map[uint32]string{}
	rows, err := s.r.Query(`SELECT name, pageno FROM dbstat`)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		// The C SQLite the cgo build links is compiled without dbstat:
		// the counts by tree come from the pure-Go build (CGO_ENABLED=0).
		b.Log("no dbstat in this build's SQLite: pages by tree not counted (CGO_ENABLED=0 counts them)")
		return nil
	}
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			b.Fatal(err)
		}
		tree[page] = name
	}
	rows.Close()
	wal, err := os.ReadFile(s.path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for off := 32 + from*(size+24); off+24+size <= int64(len(wal)); off += size + 24 {
		name := tree[binary.BigEndian.Uint32(wal[off:])]
		if name == "" {
			name = "other"
		}
		out[name]++
	}
	return out
}

// walFrames returns the number of frames in the store's WAL: mxFrame of
// the wal-index header, at the start of the -shm file, in the machine's
// byte order.
func walFrames(b *testing.B, s *Store) int64 {
	h := make([]byte, 48)
	f, err := os.Open(s.path + "-shm")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, h); err != nil {
		b.Fatal(err)
	}
	return int64(binary.NativeEndian.Uint32(h[16:20]))
}

// BenchmarkWriteCallSteps takes apart the transaction that a write call
// waits for one call at a time, as the writer runs it (the statements on
// the driver's own, see exec): BEGIN IMMEDIATE, the call before's end
// queued for it (its "ended" checkpoint and its key's result), the claim
// and its "executing" checkpoint, COMMIT. Each step's mean is reported in
// µs (<step>-µs); ns/op is the whole transaction, without the writer's Go
// around it (BenchmarkWriteCallStore/c=1 has it).
//
//	go test -run '^$' -bench WriteCallSteps -benchtime 10000x ./internal/store/sqlite/
func BenchmarkWriteCallSteps(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.W.Stop() // the benchmark has the connection to itself
	args := `{"amount":1,"currency":"EUR","to":"acct-42"}`
	result := []byte(`{"status":"success","data":{"ok":true,"ref":"R-1"},"call_id":"c1"}`)
	steps := []string{"begin", "end-frame", "end-key", "claim", "checkpoint", "commit"}
	var sum [6]time.Duration
	next := orderedIDs()
	var prev struct {
		key, req, frame string
		started         int64
	}
	must := func(_ int64, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		req, frame, callID := next()
		key := derivedKey(req, callID)
		now := time.Now().UnixNano()
		var t [7]time.Time
		t[0] = time.Now()
		must(s.exec(s.txBegin, nil))
		t[1] = time.Now()
		rows := 2
		if prev.key != "" {
			must(s.exec(s.raw[sqlcore.StUpdateFrame], s.bound(sqlcore.StUpdateFrame, []any{"", "tool", "pay", "c" + prev.frame, prev.key,
				"completed", args, nil, nil, prev.started, now, prev.req, prev.frame})))
		}
		t[2] = time.Now()
		if prev.key != "" {
			must(s.exec(s.raw[sqlcore.StIdemComplete], s.bound(sqlcore.StIdemComplete, []any{result, now + 24*3600e9, prev.key, "reach/0"})))
			rows += 2
		}
		t[3] = time.Now()
		must(s.exec(s.raw[sqlcore.StIdemClaim], s.bound(sqlcore.StIdemClaim, []any{key, "reach/0", "d1", req, frame, now, now + 3600e9})))
		t[4] = time.Now()
		must(s.exec(s.raw[sqlcore.StPutFrame], s.bound(sqlcore.StPutFrame, []any{"", "tool", "pay", callID, key, "executing", args,
			nil, nil, now, now, req, frame})))
		t[5] = time.Now()
		must(s.exec(s.txCommit, nil))
		t[6] = time.Now()
		s.wrote(rows) // the checkpointer runs as under the writer
		for i := range sum {
			sum[i] += t[i+1].Sub(t[i])
		}
		prev.key, prev.req, prev.frame, prev.started = key, req, frame, now
	}
	for i, name := range steps {
		b.ReportMetric(float64(sum[i].Nanoseconds())/1e3/float64(b.N), name+"-µs")
	}
}
