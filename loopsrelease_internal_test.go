package reach

import (
	"context"
	"testing"

	"github.com/agentreach/reach/internal/loops"
)

// first is the detector of rt.detector's answer.
func first(d *loops.Detector, _ *Error) *loops.Detector { return d }

// An ended tree lets its loop detector go (the requests are kept for their
// views without it), but not while a sub-request of it runs on: its calls
// are judged against the whole tree until the last request ends.
func TestEndLetsTheLoopDetectorGo(t *testing.T) {
	rt := New(nil)
	ctx, r, err := rt.Begin(context.Background(), &RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := rt.detector(r)
	if first(rt.detector(r)) != d {
		t.Fatal("a running tree's detector is not kept")
	}
	_, sub, err := rt.Delegate(ctx, &Delegation{Agent: "helper", Task: "look it up"})
	if err != nil {
		t.Fatal(err)
	}
	if first(rt.detector(sub)) != d {
		t.Fatal("a sub-request does not share its tree's detector")
	}
	r.End()
	if r.loops.Released() || first(rt.detector(sub)) != d {
		t.Fatal("the root's end let the detector go while a sub-request runs")
	}
	sub.End()
	if !r.loops.Released() {
		t.Fatal("the tree ended and keeps its detector")
	}
	if first(rt.detector(r)) == d {
		t.Error("an ended tree's detector is still handed out")
	}

	// A request with no sub-request lets it go at its end.
	_, r2, err := rt.Begin(context.Background(), &RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first(rt.detector(r2))
	r2.End()
	if !r2.loops.Released() {
		t.Error("an ended request keeps its detector")
	}
}
