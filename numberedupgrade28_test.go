package reach_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/ids"
)

// TestNumberedCallKeysInARollingUpgrade pins what a rolling upgrade does
// to a write whose call id the gateway numbered (docs/INSTANCES.md): this
// version keys it "tool:CALL/ROOT", a version before it "tool:ROOT/CALL"
// (it knows no numbered form: what it derives is the record a caller's
// own key "ROOT/CALL" has, which this test sends for it). On one store the
// two are two records: the same call handled by an instance of each runs
// twice, whichever ran first; on instances of this version alone it runs
// once, the retry answered from its record. A call id of the decimal count
// an older instance numbers is keyed "ROOT/CALL" by both.
func TestNumberedCallKeysInARollingUpgrade(t *testing.T) {
	store := reach.NewMemoryIdempotency(time.Hour) // the store both instances share
	var runs atomic.Int32
	instance := func() *reach.Runtime {
		rt := reach.New(&reach.Options{Idempotency: store, DisableLoopGuard: true})
		rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				return json.RawMessage(`"paid"`), nil
			}})
		return rt
	}
	newer, older := instance(), instance()
	prefix := ids.CallPrefix("mcp_")
	call := func(rt *reach.Runtime, req, id, key string) *reach.Result {
		t.Helper()
		ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: req, Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		defer r.End()
		res := rt.Call(ctx, &reach.Call{ID: id, Tool: "pay", IdempotencyKey: key, Arguments: json.RawMessage(`{"order":"` + req + `"}`)})
		if res.Status != reach.StatusSuccess {
			t.Fatalf("%s %s: %s %+v", req, id, res.Status, res.Error)
		}
		return res
	}
	for _, c := range []struct {
		name        string
		req         string
		id          string
		first, then func(req, id string) *reach.Result
		runs        int32
	}{
		{"this version, then this version", "r1", string(ids.AppendCall(nil, prefix, 1)),
			func(req, id string) *reach.Result { return call(newer, req, id, "") },
			func(req, id string) *reach.Result { return call(newer, req, id, "") }, 1},
		{"this version, then an older one", "r2", string(ids.AppendCall(nil, prefix, 2)),
			func(req, id string) *reach.Result { return call(newer, req, id, "") },
			func(req, id string) *reach.Result { return call(older, req, id, req+"/"+id) }, 2},
		{"an older version, then this one", "r3", string(ids.AppendCall(nil, prefix, 3)),
			func(req, id string) *reach.Result { return call(older, req, id, req+"/"+id) },
			func(req, id string) *reach.Result { return call(newer, req, id, "") }, 2},
		{"an older version's own numbering, then this one", "r4", "mcp_1f2e3d4c_42",
			func(req, id string) *reach.Result { return call(older, req, id, req+"/"+id) },
			func(req, id string) *reach.Result { return call(newer, req, id, "") }, 1},
	} {
		runs.Store(0)
		c.first(c.req, c.id)
		again := c.then(c.req, c.id)
		if n := runs.Load(); n != c.runs || again.Replayed != (c.runs == 1) {
			t.Errorf("%s: the write ran %d times (the second answer replayed %v), want %d", c.name, n, again.Replayed, c.runs)
		}
	}
}
