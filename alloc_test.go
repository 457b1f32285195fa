package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/idempotency"
)

// nopCheckpoints takes every checkpoint and keeps none: the runtime's own
// allocations for a write, without a store's.
type nopCheckpoints struct{ ended int }

func (*nopCheckpoints) Executing(context.Context, *reach.Checkpoint) error { return nil }
func (n *nopCheckpoints) Ended(_ context.Context, c *reach.Checkpoint) {
	if c.State == reach.Completed && len(c.ResultDigest) == 64 {
		n.ended++
	}
}

// TestWriteCallAllocations: a write (an unannotated tool) with its
// checkpoints and its idempotency claim allocates no more than when
// measured: its idempotency keys (the record's, scoped to the principal;
// the call's; the key) are one string (and the key its tool is given, its
// owner's own since the request's id was named, another), the digests of its arguments and of
// its result one allocation each, and the key its tool is given
// (IdempotencyKey) a pointer to the call's. The tool sees that key.
func TestWriteCallAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	const req0 = "alloc-1"
	i := 0
	args := make([]json.RawMessage, 1000)
	ids := make([]string, 1000)
	keys := make([]string, 1000) // the keys the tool is given: its owner's own, the request id being named
	cp := &nopCheckpoints{}
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, Checkpoints: cp})
	rt.MustRegister(reach.Tool{Name: "put", Access: reach.Write,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			if k, ok := reach.IdempotencyKey(ctx); !ok || k != keys[i] {
				return nil, fmt.Errorf("the tool was given the key %q (%v)", k, ok)
			}
			return args, nil
		}})
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: req0, Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	for n := range args {
		args[n] = json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`)
		ids[n] = "c" + strconv.Itoa(n)
		keys[n] = idempotency.ToolKey("alice", "", "put", req0+"/"+ids[n])
	}
	call := func() {
		res := rt.Call(ctx, &reach.Call{ID: ids[i], Tool: "put", Arguments: args[i]})
		if res.IsError() {
			t.Fatal(res.ModelText())
		}
		i++
	}
	for range 20 {
		call()
	}
	// 15 when measured, the key its tool is given one (the request id
	// was named, so the key derived from it is made its owner's own: 14
	// for a request whose id was made for it) (17 with its idempotency claim, its "executing"
	// checkpoint and its end's each an allocation of its own; 23 with the
	// frame and the key each a context.WithValue, the attempt's timeout a
	// context.WithTimeoutCause with its timer, and the ended checkpoint's
	// context a context.WithoutCancel; 29 with a string for each key, digests made by
	// hex.EncodeToString, a copy of the result for the loop guard, its step
	// apart from the call and the tool's key made an interface value); with
	// the loop guard's and the memory idempotency store's own.
	if n := testing.AllocsPerRun(200, call); n > 15 {
		t.Errorf("a write call allocates %v times, want at most 15", n)
	}
	if cp.ended < 200 {
		t.Errorf("%d completed checkpoints with their result's digest, want every call's", cp.ended)
	}
}
