package reach_test

import (
	"context"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// BenchmarkCallRefusalCounter is BenchmarkCall's tools=10/depth=1 call, let
// through, with the refusals in a row counted on a store (the gateway's,
// Options.RefusalCounter) and without: a call let through asks the store
// nothing, so the two are the same but for an atomic load.
func BenchmarkCallRefusalCounter(b *testing.B) {
	for _, tc := range []struct {
		name string
		ctr  reach.RefusalCounter
	}{{"counter=none", nil}, {"counter=store", store.NewMemory()}} {
		b.Run(tc.name, func(b *testing.B) {
			rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, RefusalCounter: tc.ctr})
			rt.MustRegister(reach.Tool{Name: "get_order", Reentrancy: reach.Reentrant, Func: leaf, InputSchema: []byte(leafSchema)})
			ctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{}})
			defer req.End()
			c := &reach.Call{ID: "c", Tool: "get_order", Arguments: leafArgs}
			b.ReportAllocs()
			for b.Loop() {
				if res := rt.Call(ctx, c); res.IsError() {
					b.Fatal(res.ModelText())
				}
			}
		})
	}
}
