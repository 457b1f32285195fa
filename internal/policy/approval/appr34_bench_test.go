package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// BenchmarkAskAndDeny: a call asked for approval and denied, over a
// SQLite store, with an audit callback: the store writes of an
// approval's life (each action's, and its audited mark's).
func BenchmarkAskAndDeny(b *testing.B) { askAndDeny(b, &Options{}) }

// BenchmarkAskAndDenyShared: BenchmarkAskAndDeny on a store instances
// share (Shared, Instance): each action's mark also claimed before its
// audit event (claimed).
func BenchmarkAskAndDenyShared(b *testing.B) { askAndDeny(b, &Options{Shared: true, Instance: "a"}) }

func askAndDeny(b *testing.B, o *Options) {
	st := openStore(b, b.TempDir())
	var runs atomic.Int32
	o.Audit, o.MaxPending = func(context.Context, Event) {}, 1<<20
	l := newLife(b, st, &runs, o)
	b.ResetTimer()
	for i := range b.N {
		ctx, req, err := l.rt.Begin(context.Background(), &reach.RequestOptions{ID: fmt.Sprint("rb", i), Principal: "alice", Budget: &reach.Budget{Turns: 100}})
		if err != nil {
			b.Fatal(err)
		}
		res := l.rt.Call(ctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(fmt.Sprintf(`{"order":%d}`, i))})
		id := WaitsFor(res.Error)
		if id == "" {
			b.Fatalf("not pending: %s", res.ModelText())
		}
		if _, err := l.q.Deny(id, Actor{Principal: "alice"}, "no"); err != nil {
			b.Fatal(err)
		}
		req.End()
	}
}
