package durable

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// blockExecuting is a Checkpointer whose "executing" record never comes:
// the process is stopped between the idempotency claim and that record.
type blockExecuting struct {
	*Checkpoints
	never <-chan struct{}
}

func (b blockExecuting) Executing(ctx context.Context, cp *reach.Checkpoint) error {
	<-b.never
	return errors.New("stopped")
}

// TestRecoverReleasesUnstartedClaim: a write whose process stopped after
// its idempotency claim but before its "executing" checkpoint never ran;
// recovery releases its key, and the retry with the same key runs it, once,
// at once.
func TestRecoverReleasesUnstartedClaim(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	never := make(chan struct{})
	defer close(never)
	runs := 0
	pay := reach.Tool{Name: "pay", Access: reach.Write, Idempotent: true,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`{"paid":42}`), nil
		}}
	claimed := make(chan struct{})
	cp := New(st, nil, nil)
	old := reach.New(&reach.Options{Checkpoints: blockExecuting{cp, never}, Idempotency: store.NewIdempotency(st, nil),
		DefaultBudget: &reach.Budget{}})
	old.MustRegister(pay)
	go func() {
		rctx, _, err := old.Begin(ctx, &reach.RequestOptions{Principal: "alice"})
		if err != nil {
			return
		}
		close(claimed) // the claim follows at once; Executing never returns
		old.Call(rctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"order":"42"}`), IdempotencyKey: "order-42"})
	}()
	<-claimed
	for {
		if cs, _ := st.ClaimedKeys(ctx); len(cs) == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	rt := durableRuntime(st, pay)
	rep, err := Recover(ctx, st, rt, nil)
	if err != nil || len(rep.Claims) != 1 || rep.Claims[0].Outcome != store.SettledReleased {
		t.Fatalf("recover: %+v, %v; want the claim released", rep, err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute) // not a speed bound: a retry that waits for the dead claim never ends
	defer cancel()
	rctx, req, err := rt.Begin(cctx, &reach.RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	res := rt.Call(rctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"order":"42"}`), IdempotencyKey: "order-42"})
	if res.Status != reach.StatusSuccess || res.Replayed || runs != 1 {
		t.Errorf("the retry: %s (replayed %v) %v, runs %d; want it to run once", res.Status, res.Replayed, res.Error, runs)
	}
}
