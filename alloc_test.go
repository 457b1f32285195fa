package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
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

// countingRecorder counts the events it is handed.
type countingRecorder struct{ events atomic.Int64 }

func (c *countingRecorder) Record(context.Context, *reach.Event) { c.events.Add(1) }

// tellingKeeper is a Keeper that tells each receipt at once: kept, or not
// when lose is set.
type tellingKeeper struct {
	lose bool
	told atomic.Int64
}

func (k *tellingKeeper) Record(context.Context, *reach.Event) {}

func (k *tellingKeeper) Keep(_ context.Context, _ *reach.Event, r reach.Receipt) {
	k.told.Add(1)
	r.Kept(!k.lose)
}

// TestKeptCallAllocations: a call whose events go to a Keeper (the audit
// log, as served, beside the metrics that are not) allocates no more than
// with Recorders that keep nothing: the frame itself is told whether its
// event was kept, and the one Keeper of the fan tells it, with no closure
// and no count made for each event (4 allocations an event before). Every
// event is told, and a frame is let go only if its events were kept: with
// two Keepers, one of which loses them, every event counts lost.
func TestKeptCallAllocations(t *testing.T) {
	run := func(recs ...reach.Recorder) (allocs float64, calls int, req *reach.Request) {
		rec := recs[0] // one alone: no Keeper
		if len(recs) > 1 {
			rec = reach.Recorders(recs...)
		}
		rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, Recorder: rec})
		rt.MustRegister(reach.Tool{Name: "get", Access: reach.Read, Reentrancy: reach.Reentrant,
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		args := make([]json.RawMessage, 300)
		ids := make([]string, len(args))
		for n := range args {
			args[n] = json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`)
			ids[n] = "c" + strconv.Itoa(n)
		}
		call := func() {
			if res := rt.Call(ctx, &reach.Call{ID: ids[calls], Tool: "get", Arguments: args[calls]}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			calls++
		}
		for range 20 {
			call()
		}
		return testing.AllocsPerRun(200, call), calls, req
	}
	plain := &countingRecorder{}
	none, _, _ := run(plain)
	counted, keeper := &countingRecorder{}, &tellingKeeper{}
	one, _, req := run(counted, keeper)
	if keeper.told.Load() != counted.events.Load() || counted.events.Load() == 0 {
		t.Errorf("the Keeper was handed %d events and told %d receipts, want every one", counted.events.Load(), keeper.told.Load())
	}
	if n := req.AuditLost(); n != 0 {
		t.Errorf("%d events counted lost, all of them kept", n)
	}
	t.Logf("allocations a call: %v with a Keeper, %v without; %d events a call", one, none, plain.events.Load()/220)
	if !raceEnabled && one > none {
		t.Errorf("a call with a Keeper allocates %v times, %v with Recorders that keep nothing: want no more", one, none)
	}

	// Two Keepers, one losing every event: each is lost.
	counted = &countingRecorder{}
	_, calls, req := run(counted, &tellingKeeper{}, &tellingKeeper{lose: true})
	if n := req.AuditLost(); n != counted.events.Load() || n < int64(calls) {
		t.Errorf("%d events counted lost of %d handed over (%d calls), want every one", n, counted.events.Load(), calls)
	}
	lost := 0
	for _, f := range req.Frames() {
		if f.AuditLost() {
			lost++
		}
	}
	if lost != calls {
		t.Errorf("%d frames marked lost of %d calls, want every one", lost, calls)
	}
}
