package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// testStaleReadAcrossRuntimes: two runtimes (two instances) share the
// store's entity versions. A request on one reads a balance; a request on
// the other deducts from it; the first request's deduction, based on its
// stale read, is refused, and passes after a re-read. A write with a
// refresh re-reads instead, and says so.
func testStaleReadAcrossRuntimes(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		var mu sync.Mutex
		balance := 100
		var reads atomic.Int32
		tools := []reach.Tool{
			{Name: "get_balance", Reentrancy: reach.Reentrant, Reads: []string{"account:{account}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				reads.Add(1)
				mu.Lock()
				defer mu.Unlock()
				return json.Marshal(map[string]int{"balance": balance})
			}},
			{Name: "deduct", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"account:{account}"}, Func: func(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
				var a struct{ Amount int }
				json.Unmarshal(raw, &a)
				mu.Lock()
				defer mu.Unlock()
				balance -= a.Amount
				return json.Marshal(map[string]int{"balance": balance})
			}},
			{Name: "deduct_fresh", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"account:{account}"},
				Refresh: &reach.Followup{Tool: "get_balance", Args: `{"account": "{args.account}"}`},
				Func:    func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil }},
		}
		a, b := reach.New(&reach.Options{Entities: s}), reach.New(&reach.Options{Entities: s})
		a.MustRegister(tools...)
		b.MustRegister(tools...)
		begin := func(rt *reach.Runtime, id string) context.Context {
			ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(req.End)
			return ctx
		}
		call := func(rt *reach.Runtime, ctx context.Context, id, tool, args string) *reach.Result {
			return rt.Call(ctx, &reach.Call{ID: id, Tool: tool, Arguments: json.RawMessage(args)})
		}
		actx, bctx := begin(a, "ra"), begin(b, "rb")
		if res := call(a, actx, "a1", "get_balance", `{"account":"A-1"}`); string(res.Data) != `{"balance":100}` {
			t.Fatal(res.ModelText())
		}
		if res := call(b, bctx, "b1", "deduct", `{"account":"A-1","amount":50}`); res.IsError() {
			t.Fatal(res.ModelText())
		}
		res := call(a, actx, "a2", "deduct", `{"account":"A-1","amount":80}`)
		if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" || !strings.Contains(res.Error.Message, "Account A-1 changed since you read it (v0 -> v") {
			t.Fatalf("a deduction on a read the other instance made stale: %s %+v", res.Status, res.Error)
		}
		if balance != 50 {
			t.Fatalf("balance = %d: the stale write ran", balance)
		}
		// After a re-read it passes; the other instance's request, which
		// read nothing, writes blind; then this one's next write is stale.
		call(a, actx, "a3", "get_balance", `{"account":"A-1","again":1}`)
		if res := call(a, actx, "a4", "deduct", `{"account":"A-1","amount":30}`); res.IsError() {
			t.Fatalf("a write after a re-read: %s", res.ModelText())
		}
		if res := call(a, actx, "a5", "deduct", `{"account":"A-1","amount":1}`); res.IsError() {
			t.Fatalf("a second write on its own write: %s", res.ModelText())
		}
		if res := call(b, bctx, "b2", "deduct", `{"account":"A-1","amount":2}`); res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
			t.Fatalf("the other instance's write on its own old write: %s %+v", res.Status, res.Error)
		}
		// With a refresh: re-read, then written, with a note.
		before := reads.Load()
		if res := call(b, bctx, "b3", "deduct_fresh", `{"account":"A-1"}`); res.IsError() || reads.Load() != before+1 ||
			len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "read it again before writing") {
			t.Fatalf("a refreshed write: %s after %d reads, notes %v", res.ModelText(), reads.Load()-before, res.Notes)
		}
	})
}
