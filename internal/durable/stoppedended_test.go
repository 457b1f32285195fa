package durable

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// TestStoppedEndedSubRequestUndoneOnSQLite: as
// TestStoppedEndedSubRequestUndoneAfterAKill (internal/cluster) on a
// single SQLite store. A stop of p reaches its sub-request c and the kill
// comes before c's undos ran, c stored stopped:
//
//   - "ended, then stopped": c ended first (the stop's cancellation), then
//     its stop was stored, which on SQLite stores it not ended: the
//     recovery lists it, as any stopped request still settling its undos;
//   - "stopped, then ended": c's end was stored (stopped, ended) while its
//     stop's undos ran: no recovery listed it, and p's undid only the
//     sub-requests stored ended: c's booking stayed done;
//   - "its own stop, ended while its undos ran": c's own stop stored, its
//     compensation's request begun, c's end stored, the undo not run; p
//     runs on (interrupted by the restart). Nothing found c either.
//
// After the restart every booking is undone once, and c is reported
// stopped.
func TestStoppedEndedSubRequestUndoneOnSQLite(t *testing.T) {
	for _, order := range []string{"ended, then stopped", "stopped, then ended", "its own stop, ended while its undos ran"} {
		t.Run(order, func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			undone := map[string]int{}
			newRuntime := func() (*reach.Runtime, *Checkpoints) {
				cp := New(st, nil, nil)
				rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil),
					DefaultBudget: &reach.Budget{}})
				rt.MustRegister(bookTools(func(ref string) { undone[ref]++ })...)
				return rt, cp
			}
			old, cp := newRuntime()
			book := func(ctx context.Context, ref string) {
				t.Helper()
				if res := old.Call(ctx, &reach.Call{ID: ref, Tool: "book", IdempotencyKey: ref, Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
					t.Fatal(res.ModelText())
				}
			}
			pctx, p, err := old.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			book(pctx, "p1")
			cctx, c, err := old.Delegate(pctx, &reach.Delegation{Agent: "booker", Task: "book", ID: "c"})
			if err != nil {
				t.Fatal(err)
			}
			book(cctx, "c1")
			cause := reach.Cause{Mode: reach.Cancel, By: "api", Reason: "enough", At: time.Now(), Request: "p"}
			if order == "ended, then stopped" {
				c.End()
			}
			stopped := []string{"p", "c"}
			if order == "its own stop, ended while its undos ran" {
				stopped = stopped[1:]
				cause.Request, cause.By = "c", "reach"
				cp.RequestStopped(ctx, c, cause)
				if _, _, err := old.Begin(ctx, &reach.RequestOptions{ID: "c/compensate/0a1b2c3d", Principal: "alice", Agent: "reach", Budget: &reach.Budget{}}); err != nil {
					t.Fatal(err)
				}
			} else {
				// The live stop's records, p's then c's; no undo ran.
				cp.RequestStopped(ctx, p, cause)
				cp.RequestStopped(ctx, c, cause)
			}
			if order != "ended, then stopped" {
				// c's end as RequestEnded stores a stopped request's.
				r, err := st.GetRequest(ctx, "c")
				if err != nil {
					t.Fatal(err)
				}
				r.Ended = time.Now()
				mustPut(t, st, r)
			}
			rt, _ := newRuntime()
			rep, err := Recover(ctx, st, rt, &RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"p1": 1, "c1": 1}
			if !maps.Equal(undone, want) {
				t.Errorf("undone %v; want %v (each booking of p and of its sub-request once)", undone, want)
			}
			if len(stopped) == 1 {
				if r, err := st.GetRequest(ctx, "p"); err != nil || r.State != "interrupted" || !slices.Contains(rep.Interrupted, "p") {
					t.Errorf("p after the restart: %+v (%v), reported interrupted %v; want it interrupted", r, err, rep.Interrupted)
				}
			}
			for _, id := range stopped {
				r, err := st.GetRequest(ctx, id)
				if err != nil || r.State != "stopped" || r.Ended.IsZero() || DecodeCause(r.Cause).Request != cause.Request {
					t.Errorf("request %s after the restart: %+v (%v); want stopped, ended, with %s's cause", id, r, err, cause.Request)
				}
				if !slices.Contains(rep.Stopped, id) {
					t.Errorf("the report's stopped requests %v miss %s", rep.Stopped, id)
				}
			}
			rt, _ = newRuntime()
			if rep, err := Recover(ctx, st, rt, &RecoverOptions{}); err != nil || len(rep.Stopped)+len(rep.Interrupted) != 0 {
				t.Errorf("a second restart found %v stopped, %v interrupted (%v); want nothing", rep.Stopped, rep.Interrupted, err)
			}
			if !maps.Equal(undone, want) {
				t.Errorf("after a second restart undone %v; want each once", undone)
			}
		})
	}
}
