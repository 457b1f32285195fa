package reach_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentreach/reach"
)

// TestTurnWritesOfOneEntityTakeTurns (R4): the calls one model turn asked
// for (a framework's parallel tool calls, each a call of its own) are a
// batch: while one writes order 7, the turn's other write of order 7
// waits, and its write of order 8 runs. A write of order 7 in another turn
// of the request, and one beneath the running write, share the lock as
// before.
func TestTurnWritesOfOneEntityTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		var mu sync.Mutex
		var ran []string
		hold := make(chan struct{})
		var nested func(ctx context.Context) *reach.Result
		rt.MustRegister(reach.Tool{Name: "note", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{order}"},
			Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Order, Text string }
				json.Unmarshal(a, &in)
				mu.Lock()
				ran = append(ran, in.Order+in.Text)
				mu.Unlock()
				if in.Text == "a" {
					if r := nested(ctx); r.IsError() {
						return nil, r.Err()
					}
					<-hold // in flight until the test lets it go
				}
				return a, nil
			}})
		nested = func(ctx context.Context) *reach.Result { // beneath the running write: shares its lock
			return rt.Call(ctx, &reach.Call{ID: "beneath", Tool: "note", Arguments: json.RawMessage(`{"order":"7","text":"n"}`)})
		}
		ctx, _ := begin(t, rt, nil)
		tctx, turn, err := rt.BeginModel(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		call := func(ctx context.Context, id, args string) chan *reach.Result {
			out := make(chan *reach.Result, 1)
			go func() { out <- rt.Call(ctx, &reach.Call{ID: id, Tool: "note", Arguments: json.RawMessage(args)}) }()
			return out
		}
		a := call(tctx, "a", `{"order":"7","text":"a"}`)
		synctest.Wait()
		b := call(tctx, "b", `{"order":"7","text":"b"}`)
		c := call(tctx, "c", `{"order":"8","text":"c"}`)
		synctest.Wait()
		mu.Lock()
		got := append([]string(nil), ran...)
		mu.Unlock()
		if len(got) != 3 || got[0] != "7a" || got[1] != "7n" || got[2] != "8c" {
			t.Fatalf("while 7a ran, the upstream ran %v; want 7a, the write beneath it, 8c: not the turn's other write of order 7", got)
		}
		turn.EndModel(reach.TokenUsage{})
		// A later turn's write of order 7 shares the lock, as before.
		t2ctx, turn2, err := rt.BeginModel(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		if r := <-call(t2ctx, "d", `{"order":"7","text":"d"}`); r.IsError() {
			t.Fatalf("a later turn's write: %s", r.ModelText())
		}
		turn2.EndModel(reach.TokenUsage{})
		close(hold)
		for _, ch := range []chan *reach.Result{a, b, c} {
			if r := <-ch; r.IsError() {
				t.Errorf("%s: %s", r.CallID, r.ModelText())
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if ran[len(ran)-1] != "7b" {
			t.Errorf("the upstream ran %v; want the turn's second write of order 7 last, once 7a ended", ran)
		}
	})
}
