package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// A write whose caller went away while it ran (a dropped connection
// cancels the call; the tool had started and may have done its work) is
// sent again by a client that retries after a transport error: a new call
// id, no idempotency key, often a new request. Its first identical retry
// by the same principal is answered interrupted, naming the call that was
// cut off, and nothing runs; the call after it runs. Two identical writes
// that were both answered both run, and another principal's, or a call
// with a key of its own, is never taken for the retry.
func TestCutOffWriteRetried(t *testing.T) {
	rt := reach.New(nil)
	var runs atomic.Int32
	var hold atomic.Bool // the next call waits for its caller to go away
	started := make(chan struct{}, 1)
	rt.MustRegister(reach.Tool{Name: "add_item", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1) // the write takes effect at once; its answer is what is slow
			if hold.CompareAndSwap(true, false) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(`"added"`), nil
		}})
	reqs := map[string]context.Context{}
	do := func(principal, req, id, key, args string) *reach.Result {
		t.Helper()
		ctx := reqs[req]
		if ctx == nil {
			ctx, _ = begin(t, rt, &reach.RequestOptions{ID: req, Principal: principal})
			reqs[req] = ctx
		}
		return rt.Call(ctx, &reach.Call{ID: id, Tool: "add_item", IdempotencyKey: key, Arguments: json.RawMessage(args)})
	}
	ok := func(what string, res *reach.Result) {
		t.Helper()
		if res.Status != reach.StatusSuccess || res.Replayed {
			t.Fatalf("%s: %s (replayed %v) %+v; want it run", what, res.Status, res.Replayed, res.Error)
		}
	}
	runsAre := func(what string, want int32) {
		t.Helper()
		if n := runs.Load(); n != want {
			t.Fatalf("%s: add_item ran %d times, want %d", what, n, want)
		}
	}

	// Two identical writes, both answered: both run.
	ok("apples, first", do("alice", "r1", "c1", "", `{"item":"apple"}`))
	ok("apples, second", do("alice", "r1", "c2", "", `{"item":"apple"}`))
	runsAre("two answered writes", 2)

	// The caller goes away while the write runs.
	ctx, _ := begin(t, rt, &reach.RequestOptions{ID: "r2", Principal: "alice"})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan *reach.Result)
	hold.Store(true)
	go func() {
		done <- rt.Call(cctx, &reach.Call{ID: "c1", Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}()
	<-started
	cancel()
	if res := <-done; res.Status == reach.StatusSuccess {
		t.Fatalf("the cut-off write: %+v; want it cancelled", res)
	}
	runsAre("the cut-off write", 3)

	// Another principal's identical write, and one with a key of its own,
	// are not the retry.
	ok("bob's pear", do("bob", "r3", "c1", "", `{"item":"pear"}`))
	ok("a pear under a key", do("alice", "r3b", "c1", "k1", `{"item":"pear"}`))
	runsAre("bob's pear and the keyed one", 5)

	// The retry: a new request, a new call id, the arguments written
	// otherwise. It is told, and nothing runs.
	res := do("alice", "r4", "x9", "", `{ "item" : "pear" }`)
	if res.Status != reach.StatusError || res.Error == nil || res.Error.Code != "interrupted" || res.Error.Type != reach.TypeInterrupted ||
		!strings.Contains(res.Error.Message, "call c1 of request r2") || !strings.Contains(res.Error.Message, "may have taken effect") ||
		!strings.Contains(res.Error.Suggestion, "call it again") {
		t.Fatalf("the retry: %s %+v; want the error interrupted naming call c1 of request r2", res.Status, res.Error)
	}
	runsAre("the retry", 5)

	// Called again after it was told: it runs (the write is wanted twice).
	ok("called again", do("alice", "r4", "x10", "", `{"item":"pear"}`))
	runsAre("called again", 6)
}
