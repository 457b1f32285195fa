package postgres

import (
	"context"
	"encoding/json"
	"strconv"
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
