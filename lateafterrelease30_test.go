package reach_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// TestLateCallsAfterTreeLetGo: two calls of a request, admitted by the
// loop guard, are in flight when the request ends, which lets its tree's
// loop detector go; their tool ignores its context and answers after. Each
// reports its outcome to no detector. Before, each reported to a new one
// made for it, with the step of the one let go, and the two reports wrote
// that one's state (the agent's ring) under two locks: run with -race.
// A model turn open at the end ends after it, as the calls.
func TestLateCallsAfterTreeLetGo(t *testing.T) {
	const n = 2
	entered, release := make(chan struct{}, n), make(chan struct{})
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "save", Access: reach.Write, Reentrancy: reach.Reentrant, Retry: &reach.RetryPolicy{Attempts: 1},
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			entered <- struct{}{}
			<-release // ignores its context: answers after the end
			return json.RawMessage(`"saved"`), nil
		}})
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	mctx, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]*reach.Result, n)
	for i := range n {
		wg.Go(func() {
			results[i] = rt.Call(mctx, &reach.Call{Tool: "save", Arguments: json.RawMessage(`{"k":1}`)})
		})
	}
	for range n {
		<-entered
	}
	r.End()
	turn.EndModel(reach.TokenUsage{})
	close(release)
	wg.Wait()
	for i, res := range results {
		if res == nil {
			t.Fatalf("call %d returned no result", i)
		}
	}
	// The tree ended: a new request is judged by a detector of its own.
	ctx2, r2, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.End()
	if res := rt.Call(ctx2, &reach.Call{Tool: "save", Arguments: json.RawMessage(`{"k":2}`)}); res.Error != nil && res.Error.Guard == "loops" {
		t.Errorf("a new request's first call refused by the loop guard: %+v", res.Error)
	}
}
