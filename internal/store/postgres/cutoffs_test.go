package postgres

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/store"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/storetest"
)

// The cut-off writes in the PostgreSQL store: two runtimes over one
// store, a runtime of the next life (storetest.CutOffs).
func TestCutOffs(t *testing.T) {
	storetest.CutOffs(t, openPostgres(t, pgtest.Database(t)))
}

// gets counts the reads of cut-off writes by key.
type gets struct {
	reach.CutOffStore
	n atomic.Int32
}

func (g *gets) GetCutOff(ctx context.Context, key string, now time.Time) (*reach.CutOffRecord, error) {
	g.n.Add(1)
	return g.CutOffStore.GetCutOff(ctx, key, now)
}

// A write without a key of its own, on instances that share the store's
// idempotency records and cut-off writes, is looked up by its key's claim:
// the claim's statement says whether a cut-off write of its owner, tool and
// arguments is unexpired, and only then is it read. A write cut off on A
// just before the retry reaches B is still caught on B, once.
func TestCutOffReadWithTheClaim(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	g := &gets{CutOffStore: s}
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	var hold atomic.Bool
	instance := func() *reach.Runtime {
		rt := reach.New(&reach.Options{Idempotency: store.NewIdempotency(s, nil), CutOffs: g, CutOffsShared: true})
		rt.MustRegister(reach.Tool{Name: "add_item", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				if hold.CompareAndSwap(true, false) {
					started <- struct{}{}
					<-ctx.Done() // the write took effect; its caller went away
					return nil, ctx.Err()
				}
				return json.RawMessage(`"added"`), nil
			}})
		return rt
	}
	begin := func(rt *reach.Runtime) context.Context {
		ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		return ctx
	}
	call := func(ctx context.Context, rt *reach.Runtime, id string) *reach.Result {
		return rt.Call(ctx, &reach.Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}
	a, b := instance(), instance()
	if r := call(begin(b), b, "w0"); r.Status != reach.StatusSuccess {
		t.Fatalf("a write on B: %s %+v; want it run", r.Status, r.Error)
	}
	if n := g.n.Load(); n != 0 {
		t.Fatalf("a write with no cut-off write read the store %d times; want none (its claim said there is none)", n)
	}
	ctx, leave := context.WithCancel(begin(a))
	hold.Store(true)
	done := make(chan *reach.Result)
	go func() { done <- call(ctx, a, "c1") }()
	<-started
	leave()
	<-done // A wrote the cut-off write; the retry comes right after, on B
	r := call(begin(b), b, "c1")
	if r.Status != reach.StatusError || r.Error == nil || r.Error.Code != "interrupted" || !strings.Contains(r.Error.Message, "call c1") {
		t.Fatalf("the retry on B: %s %+v; want interrupted, naming call c1", r.Status, r.Error)
	}
	if r := call(begin(b), b, "c2"); r.Status != reach.StatusSuccess {
		t.Fatalf("the write after the retry on B: %s %+v; want it run (told once)", r.Status, r.Error)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("add_item ran %d times, want 3 (the first write, the cut-off write, the write after the retry)", n)
	}
	if n := g.n.Load(); n != 1 {
		t.Fatalf("the cut-off writes were read %d times; want once (the retry, whose claim found one)", n)
	}
}

// BenchmarkCutOffMiss is what a write without a key of its own pays for
// the registry in the store: the read of a key with no cut-off write (one
// round trip).
func BenchmarkCutOffMiss(b *testing.B) {
	s := openPostgres(b, pgtest.Database(b))
	now := time.Now()
	for b.Loop() {
		if r, err := s.GetCutOff(b.Context(), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", now); err != nil || r != nil {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkCutOffKeylessWrite is a write without a key of its own through
// a runtime on the PostgreSQL store, one at a time: its key claimed and
// completed in the store, with no cut-off registry in the store (memory),
// and with the store's shared one, read while the key is claimed.
//
//	go test -run '^$' -bench CutOffKeylessWrite -count 5 ./internal/store/postgres/
func BenchmarkCutOffKeylessWrite(b *testing.B) {
	s := openPostgres(b, pgtest.Database(b))
	for _, shared := range []bool{false, true} {
		name := "memory"
		o := &reach.Options{Idempotency: store.NewIdempotency(s, nil)}
		if shared {
			name, o.CutOffs, o.CutOffsShared = "shared", s, true
		}
		b.Run(name, func(b *testing.B) {
			rt := reach.New(o)
			rt.MustRegister(reach.Tool{Name: "add_item", Access: reach.Write, Reentrancy: reach.Reentrant,
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return json.RawMessage(`"added"`), nil
				}})
			var ctx context.Context
			var req *reach.Request
			c0 := cputime.Self()
			i := 0
			for b.Loop() {
				if i%100 == 0 { // a request's budget is 200 calls
					if req != nil {
						req.End()
					}
					var err error
					if ctx, req, err = rt.Begin(b.Context(), &reach.RequestOptions{Principal: "alice"}); err != nil {
						b.Fatal(err)
					}
				}
				i++
				if r := rt.Call(ctx, &reach.Call{ID: "c" + strconv.Itoa(i), Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear ` + strconv.Itoa(i) + `"}`)}); r.Status != reach.StatusSuccess {
					b.Fatal(r.Error)
				}
			}
			b.ReportMetric(float64((cputime.Self()-c0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}
