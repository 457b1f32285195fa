package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentreach/reach"
)

// newEvict returns a buffer larger than the machine's caches: reading it
// between two calls (evictCaches) leaves a call's code and data out of
// them, as a gateway's next call one at a time finds them after its client
// and upstream ran. Its pages are written once, so that each is a page of
// its own (a page never written is the one zero page, read from the
// caches).
func newEvict() []byte {
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

var evictSum byte

func evictCaches(evict []byte) {
	var s byte
	for i := 0; i < len(evict); i += 64 {
		s += evict[i]
	}
	evictSum += s
}

// BenchmarkCallCold is BenchmarkCall's tools=10/depth=1 with the caches
// emptied before each call (outside the timer): what the chain costs a
// call one at a time, where its cost is set by how much code and data it
// touches, not by what it runs warm. Against warm (the same calls back to
// back) and paused (the timer stopped and started between calls, nothing
// read):
//
//	go test -run '^$' -bench 'CallCold' -benchmem -count 5 .
//
// cold-noloops is cold with the loop guard off (Options.DisableLoopGuard):
// the guard's share of a call one at a time.
func BenchmarkCallCold(b *testing.B) {
	for _, mode := range []string{"warm", "paused", "cold", "cold-noloops"} {
		b.Run(mode, func(b *testing.B) {
			rt := benchRuntime(b, 10)
			if mode == "cold-noloops" {
				rt = reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true})
				ts := []reach.Tool{{Name: "get_order", Reentrancy: reach.Reentrant, Func: leaf, InputSchema: json.RawMessage(leafSchema)}}
				for i := range 9 {
					ts = append(ts, reach.Tool{Name: fmt.Sprintf("tool_%04d", i), Func: leaf, InputSchema: json.RawMessage(leafSchema)})
				}
				rt.MustRegister(ts...)
			}
			ctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{}})
			defer req.End()
			c := &reach.Call{ID: "c", Tool: "get_order", Arguments: leafArgs}
			var evict []byte
			if mode != "warm" && mode != "paused" {
				evict = newEvict()
			}
			for range 100 {
				rt.Call(ctx, c)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if mode != "warm" {
					b.StopTimer()
					if evict != nil {
						evictCaches(evict)
					}
					b.StartTimer()
				}
				if res := rt.Call(ctx, c); res.IsError() {
					b.Fatal(res.ModelText())
				}
			}
		})
	}
}
