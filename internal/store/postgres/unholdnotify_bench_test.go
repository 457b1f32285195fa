package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// BenchmarkUnholdNotify is what a model turn's hold and its let-go cost
// on the shared ledger, with the let-go's notification to every instance
// (reach_unhold: pg_notify 'unhold:<request>' once per request held on,
// here two) and without it (the same DELETE alone), side by side in one
// run: this process's CPU a turn (its two stores, one of them listening
// as an instance does, its listener reading the notifications) and the
// cluster's. Whether a turn waits is not asked: none does here, the
// notifications are the let-go's whole cost beyond the DELETE.
//
//	go test -run '^$' -bench UnholdNotify -benchtime 3000x ./internal/store/postgres/
func BenchmarkUnholdNotify(b *testing.B) {
	url := pgtest.Database(b)
	a, other := openPostgres(b, url), openPostgres(b, url)
	ctx := context.Background()
	var signals atomic.Int64
	if err := other.Watch(func(s Signal) {
		if s.Kind == "unhold" {
			signals.Add(1)
		}
	}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `CREATE FUNCTION reach_unhold_quiet(p_turn TEXT) RETURNS VOID LANGUAGE sql AS $$
	DELETE FROM holds WHERE turn = p_turn $$`); err != nil {
		b.Fatal(err)
	}
	if _, _, err := a.Beat(ctx, "A/1", "A", time.Now()); err != nil {
		b.Fatal(err)
	}
	ids := []string{"sub", "root"}
	caps := []store.Spend{{}, {Tokens: 1 << 40}}
	for _, fn := range []string{"reach_unhold", "reach_unhold_quiet"} {
		b.Run(fn, func(b *testing.B) {
			n := 0
			s0 := signals.Load()
			c0, srv0 := cputime.Self(), serverCPU(b)
			for b.Loop() {
				n++
				turn := fmt.Sprintf("%s-%d", fn, n)
				h, err := a.HoldTurn(ctx, turn, "A/1", time.Minute, ids, store.Spend{Tokens: 100}, store.Spend{Tokens: 100}, store.Spend{}, caps)
				if err != nil || !h.OK {
					b.Fatal(h, err)
				}
				if _, err := a.pool.Exec(ctx, `SELECT `+fn+`($1)`, turn); err != nil {
					b.Fatal(err)
				}
			}
			cpu, srv := cputime.Self()-c0, serverCPU(b)-srv0
			b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/turn")
			b.ReportMetric(float64(srv.Microseconds())/float64(n), "server-cpu-µs/turn")
			if fn == "reach_unhold" {
				// Every notification reaches the listener (two a turn).
				for signals.Load()-s0 < int64(2*n) {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
}
