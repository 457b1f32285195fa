package durable

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// BenchmarkWriteCall measures one write call through the whole chain, in
// memory and with the durable path (a durable idempotency claim and
// "executing" checkpoint before the call runs, its end and result after)
// on SQLite with synchronous=NORMAL: one call at a time, and 64 at once
// (c=64), where cpu-µs/call is the CPU of the whole process per call and
// calls/commit the calls a commit of the store's writer carries.
// ",tool=300µs" gives each call a tool that takes 300 µs (a sleep, as an
// upstream's round trip is a wait), so that 64 calls reach the store
// spread over it, as served, rather than all at once; ",gap=2ms" has
// each client wait 2 ms between its calls, outside the call (as a served
// client's HTTP round trip and the gateway's work before the claim are):
// the store then sees calls arrive at a rate of their own, as served.
//
//	go test -run '^$' -bench WriteCall -benchtime 20000x ./internal/durable/
func BenchmarkWriteCall(b *testing.B) {
	for _, c := range []struct {
		name    string
		durable bool
		clients int
		tool    time.Duration
		gap     time.Duration
	}{
		{"memory", false, 1, 0, 0}, {"sqlite", true, 1, 0, 0}, {"sqlite/c=64", true, 64, 0, 0},
		{"sqlite/c=64,tool=300µs", true, 64, 300 * time.Microsecond, 0},
		{"sqlite/c=64,tool=300µs,gap=2ms", true, 64, 300 * time.Microsecond, 2 * time.Millisecond},
		{"sqlite/c=64,tool=300µs,gap=4ms", true, 64, 300 * time.Microsecond, 4 * time.Millisecond},
	} {
		write := func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if c.tool > 0 {
				time.Sleep(c.tool)
			}
			return json.RawMessage(`{"ok":true}`), nil
		}
		b.Run(c.name, func(b *testing.B) {
			var st *sqlite.Store
			o := &reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true}
			if c.durable {
				var err error
				st, err = sqlite.Open(context.Background(), b.TempDir(), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				cp := New(st, nil, nil)
				// As reach serve does: the claim carries the "executing" checkpoint.
				o.Checkpoints, o.DeadLetters = cp, cp
				o.Idempotency = store.NewIdempotency(st, &store.IdempotencyOptions{Checkpoint: cp.ExecutingFrame})
			}
			rt := reach.New(o)
			rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant, Func: write})
			ctx, req, _ := rt.Begin(context.Background(), nil)
			defer req.End()
			var i atomic.Int64
			b.ReportAllocs()
			c0 := cputime.Self()
			var commits0 int64
			if st != nil {
				commits0 = st.WriterStats().Batches
			}
			if c.clients == 1 {
				for b.Loop() {
					call(ctx, rt, i.Add(1))
				}
			} else {
				b.SetParallelism(c.clients / 2) // on 2 CPUs
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if c.gap > 0 {
							time.Sleep(c.gap)
						}
						res := call(ctx, rt, i.Add(1))
						if res.Status != reach.StatusSuccess {
							b.Errorf("call: %+v", res.Error)
						}
					}
				})
			}
			b.ReportMetric(float64((cputime.Self()-c0).Microseconds())/float64(b.N), "cpu-µs/call")
			if st != nil {
				b.ReportMetric(float64(b.N)/float64(max(st.WriterStats().Batches-commits0, 1)), "calls/commit")
			}
		})
	}
}

// call makes the benchmarks' n-th call of pay: each of its own arguments, as
// a client's writes are, so that none is taken for the same call still
// running (an identical keyless write in flight is refused).
func call(ctx context.Context, rt *reach.Runtime, n int64) *reach.Result {
	return rt.Call(ctx, &reach.Call{ID: strconv.FormatInt(n, 10), Tool: "pay", Arguments: json.RawMessage(`{"amount":` + strconv.FormatInt(n, 10) + `}`)})
}
