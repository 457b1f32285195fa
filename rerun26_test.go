package reach_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentreach/reach"
)

// rerun26Calls returns the call ids of a request's tool frames, in order.
func rerun26Calls(r *reach.Request) []string {
	var ids []string
	for _, f := range r.Frames() {
		if f.Kind == reach.ToolFrame {
			ids = append(ids, f.CallID)
		}
	}
	return ids
}

// A request begun again by the id of one that completed goes on under the
// id: its frames and sub-requests are shown after the earlier ones', with
// its frame window letting go of frames in both (Options.FrameWindow).
// Before, the request begun again replaced the completed one, and its
// views lost every call made before.
func TestRerun26BegunAgainKeepsEarlierFrames(t *testing.T) {
	rt := reach.New(&reach.Options{})
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		return args, nil
	}})
	lookup := func(ctx context.Context, id string) {
		t.Helper()
		res := rt.Call(ctx, &reach.Call{ID: id, Tool: "lookup", Arguments: json.RawMessage(`{"q":"` + id + `"}`)})
		if res.Status != reach.StatusSuccess {
			t.Fatalf("%s: %+v", id, res)
		}
	}
	o := &reach.RequestOptions{ID: "again", Principal: "alice"}
	ctx, first, err := rt.Begin(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	lookup(ctx, "c1")
	_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "look"})
	if err != nil {
		t.Fatal(err)
	}
	sub.End()
	lookup(ctx, "c2")
	first.End()

	ctx, second, err := rt.Begin(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer second.End()
	if second == first || second.State() != reach.RequestRunning {
		t.Fatalf("begun again: the same request %v, state %s; want a new one running", second == first, second.State())
	}
	lookup(ctx, "c3")
	if got, want := rerun26Calls(second), []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("the request begun again shows the calls %v, want %v", got, want)
	}
	if kids := second.Children(); len(kids) != 1 || kids[0] != sub {
		t.Errorf("the request begun again shows the sub-requests %v, want the earlier one", kids)
	}
	if kept, _ := second.KeptFrames(); len(kept) != len(second.Frames()) {
		t.Errorf("KeptFrames has %d frames, Frames %d", len(kept), len(second.Frames()))
	}
	if r, ok := rt.Lookup("again"); !ok || r != second {
		t.Errorf("Lookup(again) = %v, %v; want the request begun again", r, ok)
	}
	// A stopped request is not continued: named again it is its own.
	o2 := &reach.RequestOptions{ID: "stopped", Principal: "alice"}
	ctx, s, err := rt.Begin(t.Context(), o2)
	if err != nil {
		t.Fatal(err)
	}
	lookup(ctx, "s1")
	s.Stop(reach.Cancel, "test", "stop it")
	s.End()
	if _, again, err := rt.Begin(t.Context(), o2); err == nil {
		defer again.End()
		if got := rerun26Calls(again); len(got) != 0 {
			t.Errorf("a request begun by a stopped one's id shows its calls %v", got)
		}
	}
}

// A call refused in a request of an earlier run (RestorePast) before its
// frames are first read is shown once: its frame, kept in memory, is also
// among the frames read back from the store once its event is stored
// (before, the views showed it twice when the read came after the event).
func TestRerun26RefusedInPastRequestShownOnce(t *testing.T) {
	rt := reach.New(&reach.Options{})
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		return args, nil
	}})
	var stored []reach.PastFrame // the store: what its Load reads back
	p := &reach.PastRequest{ID: "past", Principal: "alice", State: reach.RequestCompleted,
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) { return stored, nil }}
	r := rt.RestorePast(p)
	res := rt.Call(r.Context(), &reach.Call{ID: "late", Tool: "lookup", Arguments: json.RawMessage(`{"q":"late"}`)})
	if res.Status == reach.StatusSuccess || res.Frame == 0 {
		t.Fatalf("a call in a request of an earlier run: %+v; want refused, with its frame", res)
	}
	stored = append(stored, reach.PastFrame{ID: res.Frame, Kind: reach.ToolFrame, Name: "lookup", CallID: "late", State: reach.Refused})
	if got := rerun26Calls(r); !slices.Equal(got, []string{"late"}) {
		t.Errorf("the request of an earlier run shows the calls %v, want [late]", got)
	}
}
