package reach_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
)

// BenchmarkSharedEntityWrite is a write to an entity its request read,
// checkpointed, on entity versions shared through a store (in memory
// here, to measure the runtime's own cost): the claim before the tool
// runs and the claim after it, which the checkpoint stage makes before
// the write's end is recorded.
func BenchmarkSharedEntityWrite(b *testing.B) {
	mem := store.NewMemory()
	rt := reach.New(&reach.Options{Entities: mem, Checkpoints: durable.New(mem, nil, nil)})
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"item:{id}"}, Func: echo},
		reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"item:{id}"}, Func: echo},
	)
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{ToolCalls: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	defer req.End()
	if res := rt.Call(ctx, &reach.Call{ID: "r", Tool: "get", Arguments: json.RawMessage(`{"id":"1"}`)}); res.IsError() {
		b.Fatal(res.ModelText())
	}
	i := 0
	for b.Loop() {
		i++
		if res := rt.Call(ctx, &reach.Call{ID: "w" + strconv.Itoa(i), Tool: "put", Arguments: json.RawMessage(`{"id":"1","text":"version ` + strconv.Itoa(i) + `"}`)}); res.IsError() {
			b.Fatal(res.ModelText())
		}
	}
}
