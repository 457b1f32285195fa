package durable

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
)

// TestHistoryChildDatedBeforeParent: a stored frame's start is its end
// less its latency, wall clock less monotonic time; on a loaded machine a
// nested call that began microseconds after its parent can come back
// dated before it. Rebuilt from the store after a restart, it keeps its
// parent and its depth all the same (it lost both when frames were linked
// in start order: TestHistoryRebuildsRequests failed 1 run in 20 so).
func TestHistoryChildDatedBeforeParent(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := New(st, nil, nil)
	old := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, Recorder: log, DefaultBudget: &reach.Budget{}})
	_, req, err := old.Begin(ctx, &reach.RequestOptions{ID: "nest", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	req.End()
	// The events as the runtime records them: an outer tool call and the
	// call it made, whose end less its latency comes out a microsecond
	// before its parent's start.
	t0 := time.Now().Add(-time.Second)
	const outer, inner = reach.FrameID(0xa1), reach.FrameID(0xa2)
	for _, e := range []*reach.Event{
		{Time: t0.Add(5 * time.Millisecond), Latency: 5*time.Millisecond + time.Microsecond, Request: "nest", Root: "nest",
			Frame: inner, Parent: outer, Kind: reach.ToolFrame, Name: "lookup", CallID: "c2", State: reach.Completed, Args: json.RawMessage(`{}`)},
		{Time: t0.Add(10 * time.Millisecond), Latency: 10 * time.Millisecond, Request: "nest", Root: "nest",
			Frame: outer, Kind: reach.ToolFrame, Name: "plan", CallID: "c1", State: reach.Completed, Args: json.RawMessage(`{}`)},
	} {
		log.Record(ctx, e)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	h := NewHistory(st, nil)
	rt := reach.New(&reach.Options{History: h.Past})
	r, ok := rt.Lookup("nest")
	if !ok {
		t.Fatal("Lookup(nest) after a restart found nothing")
	}
	byID := map[reach.FrameID]*reach.Frame{}
	for _, f := range r.Frames() {
		byID[f.ID] = f
	}
	o, i := byID[outer], byID[inner]
	if o == nil || i == nil {
		t.Fatalf("frames after a restart: %v; want both calls", r.Frames())
	}
	if i.Parent != o {
		t.Errorf("the inner call's parent after a restart: %v; want the outer call %s", i.Parent, outer)
	}
	if o.Depth != 1 || i.Depth != 2 {
		t.Errorf("depths after a restart: outer %d, inner %d; want 1 and 2", o.Depth, i.Depth)
	}
}
