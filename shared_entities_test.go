package reach_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// A write refused for one stale entity (another runtime wrote it) claims
// none of the others it writes for good: after a re-read of the stale one
// alone, the write passes, as on one runtime, rather than being refused
// for an entity that only its own refused claim moved on.
func TestSharedEntitiesRefusedWriteKeepsItsReads(t *testing.T) {
	es := store.NewMemory()
	rt := reach.New(&reach.Options{Entities: es})
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"item:{id}"}, Func: echo},
		reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"item:{a}", "item:{b}"}, Func: echo},
	)
	ctx, _ := begin(t, rt, nil)
	for _, id := range []string{"1", "2"} {
		if res := call(rt, ctx, "get", `{"id":"`+id+`"}`); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	// Another runtime writes item:2.
	if _, _, err := es.ClaimEntities(context.Background(), []reach.EntityClaim{{Name: "item:2"}}); err != nil {
		t.Fatal(err)
	}
	res := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "put", Arguments: json.RawMessage(`{"a":"1","b":"2"}`)})
	if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
		t.Fatalf("a write on a stale read: %s", res.ModelText())
	}
	call(rt, ctx, "get", `{"id":"2","again":true}`)
	if res := rt.Call(ctx, &reach.Call{ID: "w2", Tool: "put", Arguments: json.RawMessage(`{"a":"1","b":"2"}`)}); res.IsError() {
		t.Fatalf("the write after a re-read of what was stale: %s", res.ModelText())
	}
}

// A write refused after its claim, before it reached its tool (here by
// the rate limit, a later stage), did not change what it writes: when it
// is made again it runs, rather than being refused as a stale read of
// an entity nobody wrote.
func TestSharedEntitiesWriteRefusedAfterItsClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(&reach.Options{Entities: store.NewMemory(), RateLimit: &reach.RateLimit{PerPrincipal: 1, PerPrincipalBurst: 1}})
		rt.MustRegister(
			reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"item:{id}"}, Func: echo},
			reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"item:{id}"}, Func: echo},
		)
		ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: "alice", Budget: &reach.Budget{}})
		if res := call(rt, ctx, "get", `{"id":"1"}`); res.IsError() {
			t.Fatal(res.ModelText())
		}
		res := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "put", Arguments: json.RawMessage(`{"id":"1"}`)})
		if res.Status != reach.StatusRefused || res.Error.Type != reach.TypeRateLimit {
			t.Fatalf("the write past the rate limit: %s", res.ModelText())
		}
		time.Sleep(res.Error.RetryAfter)
		if res := rt.Call(ctx, &reach.Call{ID: "w2", Tool: "put", Arguments: json.RawMessage(`{"id":"1"}`)}); res.IsError() {
			t.Fatalf("the write again after retry_after: %s", res.ModelText())
		}
	})
}

// A write during which another runtime wrote one of its entities leaves
// its request's read of it stale: the request's next write of it is
// refused, as one based on a read another runtime's write made stale.
func TestSharedEntitiesWrittenWhileTheWriteRan(t *testing.T) {
	es := store.NewMemory()
	rt := reach.New(&reach.Options{Entities: es})
	var other atomic.Bool
	other.Store(true)
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"item:{id}"}, Func: echo},
		reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"item:{id}"},
			Func: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
				if other.Swap(false) { // another runtime writes item:1 meanwhile
					if _, _, err := es.ClaimEntities(ctx, []reach.EntityClaim{{Name: "item:1"}}); err != nil {
						return nil, err
					}
				}
				return raw, nil
			}},
	)
	ctx, _ := begin(t, rt, nil)
	if res := call(rt, ctx, "get", `{"id":"1"}`); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if res := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "put", Arguments: json.RawMessage(`{"id":"1"}`)}); res.IsError() {
		t.Fatalf("the first write: %s", res.ModelText())
	}
	res := rt.Call(ctx, &reach.Call{ID: "w2", Tool: "put", Arguments: json.RawMessage(`{"id":"1","again":true}`)})
	if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
		t.Fatalf("a write after another runtime wrote during the request's last one: %s, want stale_read", res.ModelText())
	}
}
