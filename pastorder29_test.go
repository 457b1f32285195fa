package reach_test

import (
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestRestorePastChildListedFirst: a restored request's frames are linked
// to their parents whatever order the history lists them in (a stored
// frame's start, end less latency, may date a nested call before its
// parent): the parent is found, not dropped because it was built after.
func TestRestorePastChildListedFirst(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	r := reach.New(nil).RestorePast(&reach.PastRequest{ID: "nest", State: reach.RequestCompleted, Started: t0, Ended: t0.Add(time.Minute),
		Load: func() ([]reach.PastFrame, []*reach.PastRequest) {
			return []reach.PastFrame{
				{ID: 2, Parent: 1, Kind: reach.ToolFrame, Name: "lookup", Depth: 2, State: reach.Completed, Started: t0.Add(-time.Microsecond)},
				{ID: 1, Kind: reach.ToolFrame, Name: "plan", Depth: 1, State: reach.Completed, Started: t0},
			}, nil
		}})
	fs := r.Frames()
	if len(fs) != 2 || fs[0].ID != 1 || fs[1].ID != 2 || fs[1].Parent != fs[0] {
		t.Fatalf("restored frames %v; want plan, then lookup under it", fs)
	}
}
