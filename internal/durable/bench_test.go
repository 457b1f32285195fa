package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// BenchmarkWriteCall measures one write call through the whole chain, in
// memory and with the durable path (checkpoints before and after, a durable
// idempotency record) on SQLite with synchronous=NORMAL.
func BenchmarkWriteCall(b *testing.B) {
	write := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}
	for _, durable := range []bool{false, true} {
		name := "memory"
		if durable {
			name = "sqlite"
		}
		b.Run(name, func(b *testing.B) {
			o := &reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true}
			if durable {
				st, err := store.Open(context.Background(), b.TempDir(), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				cp := New(st, nil, nil)
				o.Checkpoints, o.DeadLetters, o.Idempotency = cp, cp, store.NewIdempotency(st, nil)
			}
			rt := reach.New(o)
			rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant, Func: write})
			ctx, req, _ := rt.Begin(context.Background(), nil)
			defer req.End()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: "pay", Arguments: json.RawMessage(`{"amount":1}`)})
			}
		})
	}
}
