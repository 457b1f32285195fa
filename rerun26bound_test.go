package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestRerun26NamedAgainOnSQLite: a request id named again 20 times in one
// runtime over SQLite (its audit log, its checkpoints and request records,
// History and StoredFrames as the gateway wires them), each run making a
// call and handing a sub-task over: the last run shows every call once and
// in order, and every run's sub-request, though it holds no more than the
// run before it (the runs before that are read back from the store).
func TestRerun26NamedAgainOnSQLite(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	hist := durable.NewHistory(st, slog.New(slog.DiscardHandler))
	cp := durable.New(st, nil, nil)
	rt := reach.New(&reach.Options{Recorder: reach.Recorders(log), Checkpoints: cp, Requests: cp, History: hist.Past,
		DisableLoopGuard: true, DefaultBudget: &reach.Budget{},
		StoredFrames: func(id string) []reach.PastFrame {
			if err := log.Flush(ctx); err != nil {
				t.Errorf("Flush: %v", err)
			}
			return hist.Frames(id)
		}})
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	const runs = 20
	var want, subs []string
	var r *reach.Request
	for i := range runs {
		rctx, q, err := rt.Begin(ctx, &reach.RequestOptions{ID: "conversation", Principal: "alice"})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		r = q
		id := fmt.Sprintf("c%d", i)
		if res := rt.Call(rctx, &reach.Call{ID: id, Tool: "lookup", Arguments: json.RawMessage(`{"q":"` + id + `"}`)}); res.Status != reach.StatusSuccess {
			t.Fatalf("%s: %+v", id, res)
		}
		want = append(want, id)
		_, sub, err := rt.Delegate(rctx, &reach.Delegation{Agent: "helper", Task: "look " + id})
		if err != nil {
			t.Fatalf("run %d: delegate: %v", i, err)
		}
		subs = append(subs, sub.ID())
		sub.End()
		if i < runs-1 {
			r.End()
		}
	}
	defer r.End()
	if got := rerun26Calls(r); !slices.Equal(got, want) {
		t.Errorf("the request named again %d times shows the calls %v, want %v", runs, got, want)
	}
	var kids []string
	for _, c := range r.Children() {
		kids = append(kids, c.ID())
	}
	if !slices.Equal(kids, subs) {
		t.Errorf("it shows the sub-requests %v, want %v", kids, subs)
	}
}

// A completed request's id named again by another principal, or by the
// same principal of another tenant, begins a request of its own: its
// views show none of the first owner's calls. Before, it went on under
// the id with the other owner's calls shown in its views.
func TestRerun26NamedAgainByAnotherOwner(t *testing.T) {
	rt := reach.New(&reach.Options{})
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	for _, other := range []reach.RequestOptions{{ID: "shared", Principal: "bob"}, {ID: "shared", Principal: "alice", Tenant: "acme"}} {
		ctx, first, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "shared", Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if res := rt.Call(ctx, &reach.Call{ID: "secret", Tool: "lookup", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusSuccess {
			t.Fatalf("%+v", res)
		}
		first.End()
		_, again, err := rt.Begin(t.Context(), &other)
		if err != nil {
			t.Fatalf("%s/%s: %v", other.Tenant, other.Principal, err)
		}
		if got := rerun26Calls(again); len(got) != 0 {
			t.Errorf("the id named again by %q of tenant %q shows the first owner's calls %v", other.Principal, other.Tenant, got)
		}
		if kept, _ := again.KeptFrames(); len(kept) != 0 {
			t.Errorf("its KeptFrames has %d frames of the first owner", len(kept))
		}
		again.End()
	}
}

// A request named again after a restart (its earlier run restored from
// the store) shows a call of its own once, though the store stamped it
// with a start before the request's (another clock: an instance behind
// this one). Before, the earlier run's frames read back from the store
// were told from the request's own by their start alone: the call showed
// twice, once as an earlier one.
func TestRerun26OwnFrameNotByClock(t *testing.T) {
	rt := reach.New(&reach.Options{})
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	began := time.Now().Add(-time.Hour)
	stored := []reach.PastFrame{{ID: 1, Kind: reach.ToolFrame, Name: "lookup", CallID: "before", State: reach.Completed, Started: began, Ended: began}}
	rt.RestorePast(&reach.PastRequest{ID: "restarted", Principal: "alice", State: reach.RequestCompleted, Started: began, Ended: began,
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) { return stored, nil }})
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "restarted", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	res := rt.Call(ctx, &reach.Call{ID: "mine", Tool: "lookup", Arguments: json.RawMessage(`{}`)})
	if res.Status != reach.StatusSuccess {
		t.Fatalf("%+v", res)
	}
	skewed := r.Started().Add(-time.Second)
	stored = append(stored, reach.PastFrame{ID: res.Frame, Kind: reach.ToolFrame, Name: "lookup", CallID: "mine", State: reach.Completed, Started: skewed, Ended: skewed})
	if got, want := rerun26Calls(r), []string{"before", "mine"}; !slices.Equal(got, want) {
		t.Errorf("the request shows the calls %v, want %v", got, want)
	}
}
