package reach_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/idempotency"
)

// TestToolKeyScopedToOwner: a caller's idempotency key is scoped to its
// principal and tenant in reach's record, but the key the tool was given
// (reach.IdempotencyKey, passed on to an upstream as reach/idempotency_key)
// was "tool:key" for everyone: a tool (or the system it writes to) that
// honours keys answered bob's call with alice's result, and never ran his.
// Two owners' calls with one key now give the tool two keys; one owner's
// retry gives it the same one.
func TestToolKeyScopedToOwner(t *testing.T) {
	rt := reach.New(nil)
	var mu sync.Mutex
	var keys []string
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			k, _ := reach.IdempotencyKey(ctx)
			mu.Lock()
			keys = append(keys, k)
			mu.Unlock()
			return args, nil
		}})
	call := func(principal, tenant, id string) {
		ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: principal, Tenant: tenant})
		res := rt.Call(ctx, &reach.Call{ID: id, Tool: "pay", IdempotencyKey: "order-1", Arguments: json.RawMessage(`{"amount":10}`)})
		if res.Status != reach.StatusSuccess {
			t.Fatalf("%s: %s %v", principal, res.Status, res.Error)
		}
	}
	call("alice", "", "c1")
	call("bob", "", "c1")
	call("alice", "t2", "c1")
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 {
		t.Fatalf("the tool ran %d times, want 3 (one for each owner)", len(keys))
	}
	if keys[0] == keys[1] || keys[0] == keys[2] || keys[1] == keys[2] {
		t.Errorf("the tool was given keys %q: two owners' calls share one, so a tool that honours keys answers one with the other's result", keys)
	}
	for _, k := range keys {
		if k == "" {
			t.Errorf("the tool was given no key: %q", keys)
		}
	}
}

// TestDerivedToolKeyScopedToOwner: a write given no key runs under one
// derived from its request and call id ("tool:ROOT/CALL"). When a client
// named the request id, another principal may name it too once the first
// request is forgotten (its calls' records are scoped to their owner, so
// reach runs the second call): the tool was given the same key for both,
// and a tool that honours keys answered bob's call with alice's result.
// The key of a named request's call is now its owner's own.
func TestDerivedToolKeyScopedToOwner(t *testing.T) {
	rt := reach.New(nil)
	var mu sync.Mutex
	var keys []string
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			k, _ := reach.IdempotencyKey(ctx)
			mu.Lock()
			keys = append(keys, k)
			mu.Unlock()
			return args, nil
		}})
	call := func(principal, tenant string) {
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r-shared", Principal: principal, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		defer req.End()
		res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"amount":10}`)})
		if res.Status != reach.StatusSuccess {
			t.Fatalf("%s: %s %v", principal, res.Status, res.Error)
		}
	}
	call("alice", "")
	call("bob", "")
	call("alice", "t2")
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 {
		t.Fatalf("the tool ran %d times, want 3 (one for each owner)", len(keys))
	}
	if keys[0] == keys[1] || keys[0] == keys[2] || keys[1] == keys[2] {
		t.Errorf("the tool was given keys %q: two owners' calls under one named request and call id share one", keys)
	}
	for i, w := range [][2]string{{"alice", ""}, {"bob", ""}, {"alice", "t2"}} {
		if want := idempotency.ToolKey(w[0], w[1], "pay", "r-shared/c1"); keys[i] != want {
			t.Errorf("%s of %q was given %q, want %q (its own, as for a key it named)", w[0], w[1], keys[i], want)
		}
	}
	// A request id made for the request gets its owner's key too, the same
	// key as if the id had been named: a request restored after a crash
	// comes back with its id set, as a named one, and a call in it that
	// runs again must give its tool the key the first run gave.
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	mu.Unlock()
	res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"amount":10}`)})
	mu.Lock()
	if want := idempotency.ToolKey("alice", "", "pay", req.ID()+"/c1"); res.Status != reach.StatusSuccess || keys[len(keys)-1] != want {
		t.Errorf("a call of a request whose id reach made was given %q (%s), want %q (its owner's, as for a named id)", keys[len(keys)-1], res.Status, want)
	}
}
