package reach_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestRestorePast: a request of an earlier run is kept like an ended
// request of this one: listed, found, its frames and sub-requests read
// once when first asked for (a sub-request's top frame under the delegate
// frame of its parent), and nothing runs in it, whatever its state.
func TestRestorePast(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	sub := &reach.PastRequest{ID: "trip/sub", Principal: "alice", Agent: "booker", State: reach.RequestCompleted, Started: t0, Ended: t0.Add(time.Second),
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
			return []reach.PastFrame{{ID: 3, Parent: 2, Kind: reach.ToolFrame, Name: "book", Depth: 1, State: reach.Completed, Started: t0}}, nil
		}}
	loads := 0
	rt := reach.New(&reach.Options{History: func(id string) (*reach.PastRequest, bool) {
		switch id {
		case "trip":
			return &reach.PastRequest{ID: "trip", Principal: "alice", State: reach.RequestCompleted, Started: t0, Ended: t0.Add(time.Minute),
				Usage: reach.Usage{ToolCalls: 2, Wall: time.Minute},
				Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
					loads++
					return []reach.PastFrame{
						{ID: 1, Kind: reach.ModelFrame, Name: "gpt", State: reach.Completed, Tokens: 10, Started: t0},
						{ID: 2, Parent: 1, Kind: reach.DelegateFrame, Name: "booker", State: reach.Completed, Started: t0},
					}, []*reach.PastRequest{sub}
				}}, true
		case "cut":
			return &reach.PastRequest{ID: "cut", State: reach.RequestInterrupted, Cause: &reach.Cause{By: "reach", Reason: "the gateway restarted"}}, true
		}
		return nil, false
	}})
	rt.MustRegister(reach.Tool{Name: "book", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
	r, ok := rt.Lookup("trip")
	if !ok || r.State() != "completed" || r.Usage().Wall != time.Minute || r.Usage().ToolCalls != 2 || loads != 0 {
		t.Fatalf("Lookup(trip) = %v %v: state %s, usage %+v, %d loads", r, ok, r.State(), r.Usage(), loads)
	}
	if again, _ := rt.Lookup("trip"); again != r || len(rt.Requests()) != 1 {
		t.Errorf("a second Lookup restored trip again")
	}
	fs := r.Frames()
	kids := r.Children()
	if loads != 1 || len(fs) != 2 || fs[1].Parent != fs[0] || len(kids) != 1 || kids[0].Parent() != r || kids[0].Root() != r {
		t.Fatalf("trip's frames %v and sub-requests %v (%d loads)", fs, kids, loads)
	}
	if kf := kids[0].Frames(); len(kf) != 1 || kf[0].Parent != fs[1] || kf[0].Request != kids[0] {
		t.Errorf("the sub-request's top frame is not under trip's delegate frame: %+v", kf)
	}
	if f, ok := r.Frame(3); !ok || f.Name != "book" {
		t.Errorf("Frame(3) in trip's tree = %v, %v", f, ok)
	}
	r.Stop(reach.Cancel, "ops", "late")
	if r.State() != "completed" {
		t.Errorf("stopping a request of an earlier run changed it: %s", r.State())
	}
	for id, code := range map[string]string{"trip": "request_ended", "cut": "request_interrupted"} {
		q, _ := rt.Lookup(id)
		res := rt.Call(q.Context(), &reach.Call{ID: "c", Tool: "book", Arguments: json.RawMessage(`{}`)})
		if res.Error == nil || res.Error.Code != code {
			t.Errorf("a call in %s: %+v, want %s", id, res.Error, code)
		}
	}
	if _, _, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "cut"}); err == nil {
		t.Error("Begin of the id of an interrupted request of an earlier run was not refused")
	}
	if _, ok := rt.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a request")
	}
}

// TestRequestsNewestFirst: Requests lists by when each began, whatever
// order the runtime came to keep them in: a request of an earlier run
// restored after this run began one, and an older one restored after a
// newer one, are listed by their age (they were listed as kept).
func TestRequestsNewestFirst(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	rt := reach.New(nil)
	_, live, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "live"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.End()
	rt.RestorePast(&reach.PastRequest{ID: "newer", State: reach.RequestInterrupted, Started: t0.Add(time.Minute)})
	rt.RestorePast(&reach.PastRequest{ID: "older", State: reach.RequestCompleted, Started: t0})
	var got []string
	for _, r := range rt.Requests() {
		got = append(got, r.ID())
	}
	if want := []string{"live", "newer", "older"}; !slices.Equal(got, want) {
		t.Errorf("Requests() = %v, want %v", got, want)
	}
}

// TestRestorePastParentFrameMissing: a sub-request of an earlier run whose
// top frame names a parent frame its parent did not keep (the delegate
// frame, not stored when the gateway was killed) is read without a
// deadlock: its frames are read, that one without a parent. The lookup of
// the missing frame went through the parent's sub-requests back into the
// sub-request whose lock the read held, and the request's view (GET
// /v1/requests/ID) hung for ever after such a restart
// (TestCrashWhileDelegatingOnPostgres).
func TestRestorePastParentFrameMissing(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	sub := &reach.PastRequest{ID: "p/sub", State: reach.RequestInterrupted, Started: t0,
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
			return []reach.PastFrame{{ID: 3, Parent: 2, Kind: reach.ToolFrame, Name: "book", Depth: 1, State: reach.Completed, Started: t0}}, nil
		}}
	rt := reach.New(&reach.Options{History: func(id string) (*reach.PastRequest, bool) {
		if id != "p" {
			return nil, false
		}
		return &reach.PastRequest{ID: "p", State: reach.RequestInterrupted, Started: t0,
			Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
				return []reach.PastFrame{{ID: 1, Kind: reach.ToolFrame, Name: "book", State: reach.Completed, Started: t0}}, []*reach.PastRequest{sub}
			}}, true
	}})
	r, ok := rt.Lookup("p")
	if !ok {
		t.Fatal("Lookup(p) found nothing")
	}
	done := make(chan []*reach.Frame, 1)
	go func() {
		kids := r.Children()
		if len(kids) != 1 {
			done <- nil
			return
		}
		done <- kids[0].Frames()
	}()
	select {
	case fs := <-done:
		if len(fs) != 1 || fs[0].ID != 3 || fs[0].Parent != nil {
			t.Errorf("the sub-request's frames: %+v; want frame 3, without its parent (not kept)", fs)
		}
	case <-time.After(time.Minute):
		t.Fatal("reading the frames of a sub-request whose parent frame was not kept never returned (a deadlock)")
	}
}

// TestRestorePastCycle: the stored requests may be edited (the audit log's
// chain guards the events, not the requests table), and a request made its
// own sub-request, or its sub-request's, was restored under itself without
// end: the graph of it (GET /v1/requests/{id}/graph, render.Frames) walked
// down for ever, to a stack overflow that ended the gateway. A sub-request
// whose id is the request's own or an ancestor's is now left out.
func TestRestorePastCycle(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	var lead, sub *reach.PastRequest
	lead = &reach.PastRequest{ID: "lead", Principal: "alice", State: reach.RequestCompleted, Started: t0, Ended: t0.Add(time.Minute),
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
			return []reach.PastFrame{{ID: 1, Kind: reach.DelegateFrame, Name: "helper", State: reach.Completed, Started: t0}},
				[]*reach.PastRequest{sub, lead} // lead made its own sub-request
		}}
	sub = &reach.PastRequest{ID: "lead/sub", Principal: "alice", State: reach.RequestCompleted, Started: t0, Ended: t0.Add(time.Second),
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
			return []reach.PastFrame{{ID: 2, Parent: 1, Kind: reach.ToolFrame, Name: "search", State: reach.Completed, Started: t0}},
				[]*reach.PastRequest{lead} // and its sub-request's
		}}
	rt := reach.New(&reach.Options{History: func(id string) (*reach.PastRequest, bool) {
		if id == "lead" {
			return lead, true
		}
		return nil, false
	}})
	r, ok := rt.Lookup("lead")
	if !ok {
		t.Fatal("lead not restored")
	}
	// Walk down at most 10 levels: without the check, the tree has no end.
	var ids []string
	var walk func(q *reach.Request, depth int)
	walk = func(q *reach.Request, depth int) {
		ids = append(ids, q.ID())
		if depth == 10 {
			return
		}
		for _, c := range q.Children() {
			walk(c, depth+1)
		}
	}
	walk(r, 0)
	if got := strings.Join(ids, " "); got != "lead lead/sub" {
		t.Errorf("the restored tree holds %d requests (%.40q...), want lead and its sub-request, once each", len(ids), got)
	}
}
