package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// BenchmarkWriteCall measures one write call through the whole chain, in
// memory and with the durable path (a durable idempotency claim and
// "executing" checkpoint before the call runs, its end and result after)
// on SQLite with synchronous=NORMAL: one call at a time, and 64 at once
// (c=64), where cpu-µs/call is the CPU of the whole process per call.
//
//	go test -run '^$' -bench WriteCall -benchtime 20000x ./internal/durable/
func BenchmarkWriteCall(b *testing.B) {
	write := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}
	for _, c := range []struct {
		name    string
		durable bool
		clients int
	}{{"memory", false, 1}, {"sqlite", true, 1}, {"sqlite/c=64", true, 64}} {
		b.Run(c.name, func(b *testing.B) {
			o := &reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true}
			if c.durable {
				st, err := sqlite.Open(context.Background(), b.TempDir(), nil)
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
			if c.clients == 1 {
				for b.Loop() {
					rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i.Add(1)), Tool: "pay", Arguments: json.RawMessage(`{"amount":1}`)})
				}
			} else {
				b.SetParallelism(c.clients / 2) // on 2 CPUs
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i.Add(1)), Tool: "pay", Arguments: json.RawMessage(`{"amount":1}`)})
						if res.Status != reach.StatusSuccess {
							b.Errorf("call: %+v", res.Error)
						}
					}
				})
			}
			b.ReportMetric(float64((cputime.Self()-c0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}
