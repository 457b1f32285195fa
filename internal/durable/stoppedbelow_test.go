package durable

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// orphans is a Shared whose only dead work is the requests ids, claimed
// in that order (a shared store claims roots first).
type orphans struct{ ids []string }

func (o *orphans) Dead(context.Context) ([]string, error)                         { return nil, nil }
func (o *orphans) OpenFramesOf(context.Context, []string) ([]*store.Frame, error) { return nil, nil }
func (o *orphans) ClaimOrphans(context.Context, int) ([]string, error) {
	ids := o.ids
	o.ids = nil
	return ids, nil
}
func (o *orphans) Release(context.Context, string) error { return nil }
func (o *orphans) Forget(context.Context, string) error  { return nil }

// TestStoppedParentsSubRequestsStayStopped: a live stop stores the parent
// stopped, then stops its sub-requests; a crash in between leaves one
// running (its stop not stored yet) and one that the stop's cancellation
// ended first stored ended. After the restart both come back stopped, with
// the parent's cause, their bookings undone once, and their ids refused;
// so does a sub-request that ended before the stop (a live stop undoes it
// too: the chain below a stopped request is undone whole).
// Whatever order the recovery finds them in: a single store lists the
// running requests first, a shared one claims roots first (and stores the
// parent ended before it reaches its sub-requests).
func TestStoppedParentsSubRequestsStayStopped(t *testing.T) {
	for _, order := range []string{"single", "roots first"} {
		t.Run(order, func(t *testing.T) {
			ctx := context.Background()
			st := tempStore(t)
			undone := map[string]int{}
			newRuntime := func() *reach.Runtime { return durableRuntime(st, bookTools(func(ref string) { undone[ref]++ })...) }
			old := newRuntime()
			pctx, _, err := old.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			book := func(ctx context.Context, ref string) {
				t.Helper()
				if res := old.Call(ctx, &reach.Call{ID: ref, Tool: "book", IdempotencyKey: ref, Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
					t.Fatal(res.ModelText())
				}
			}
			sub := func(ref string) *reach.Request {
				t.Helper()
				sctx, s, err := old.Delegate(pctx, &reach.Delegation{Agent: "helper", Task: ref})
				if err != nil {
					t.Fatal(err)
				}
				book(sctx, ref)
				return s
			}
			book(pctx, "p1")
			before := sub("before") // ends before the stop: the stop undoes it too
			before.End()
			running, ended := sub("running"), sub("ended")
			ended.End()
			// The stop as a crash leaves it: p's stop durable, then the kill;
			// "ended" was ended by the stop's cancellation, after it.
			at := time.Now()
			cause := reach.Cause{Mode: reach.Cancel, By: "api", Reason: "enough", At: at, Request: "p"}
			p, err := st.GetRequest(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			p.State, p.Cause = "stopped", EncodeCause(cause)
			mustPut(t, st, p)
			setEnded(t, st, before.ID(), at.Add(-time.Hour))
			setEnded(t, st, ended.ID(), at.Add(time.Millisecond))

			rt := newRuntime()
			opts := &RecoverOptions{}
			if order == "roots first" {
				opts.Shared = &orphans{ids: []string{"p", running.ID()}}
			}
			rep, err := Recover(ctx, st, rt, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"p", running.ID(), ended.ID(), before.ID()} {
				r, err := st.GetRequest(ctx, id)
				if err != nil || r.State != "stopped" || r.Ended.IsZero() || DecodeCause(r.Cause).Reason != "enough" || DecodeCause(r.Cause).Request != "p" {
					t.Errorf("request %s after the restart: %+v (%v); want stopped, ended, with p's cause", id, r, err)
				}
				if !slices.Contains(rep.Stopped, id) {
					t.Errorf("the report's stopped requests %v miss %s", rep.Stopped, id)
				}
				_, _, err = rt.Begin(ctx, &reach.RequestOptions{ID: id, Principal: "alice"})
				if e, ok := errors.AsType[*reach.Error](err); !ok || e.Code != "stopped_cancel" {
					t.Errorf("Begin(%s) after the restart = %v; want it refused as stopped", id, err)
				}
			}
			want := map[string]int{"p1": 1, "running": 1, "ended": 1, "before": 1}
			if !maps.Equal(undone, want) {
				t.Errorf("undone %v; want %v (each booking of the chain once)", undone, want)
			}
			// A later restart changes nothing and undoes nothing again.
			if _, err := Recover(ctx, st, newRuntime(), &RecoverOptions{}); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(undone, want) {
				t.Errorf("after a second restart undone %v; want each once", undone)
			}
		})
	}
}

func mustPut(t *testing.T, st *sqlite.Store, r *store.Request) {
	t.Helper()
	if err := st.PutRequest(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// setEnded stores request id ended at at.
func setEnded(t *testing.T, st *sqlite.Store, id string, at time.Time) {
	t.Helper()
	r, err := st.GetRequest(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	r.State, r.Ended = "ended", at
	mustPut(t, st, r)
}
