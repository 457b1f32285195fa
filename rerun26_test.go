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
