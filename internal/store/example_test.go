package store_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

func ExampleNewIdempotency() {
	ctx := context.Background()
	st := store.NewMemory() // store.Open(ctx, ".reach", nil) keeps the records across restarts
	idem := store.NewIdempotency(st, nil)
	rt := reach.New(&reach.Options{Idempotency: idem})
	charges := 0
	rt.MustRegister(reach.Tool{Name: "charge", Access: reach.Write,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			charges++
			return json.RawMessage(`{"charged":12}`), nil
		}})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "req_1"})
	defer req.End()
	for range 2 { // the model repeats the same call
		res := rt.Call(rctx, &reach.Call{ID: "call_1", Tool: "charge", Arguments: json.RawMessage(`{}`)})
		fmt.Println(string(res.Data), res.Replayed)
	}
	fmt.Println("charged", charges, "time")
	// Output:
	// {"charged":12} false
	// {"charged":12} true
	// charged 1 time
}
