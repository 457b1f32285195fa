package reach

import (
	"context"
	"testing"
)

// An ended tree lets its loop detector go (the requests are kept for their
// views without it), but not while a sub-request of it runs on: its calls
// are judged against the whole tree until the last request ends.
func TestEndLetsTheLoopDetectorGo(t *testing.T) {
	rt := New(nil)
	ctx, r, err := rt.Begin(context.Background(), &RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := rt.detector(r)
	if rt.detector(r) != d {
		t.Fatal("a running tree's detector is not kept")
	}
	_, sub, err := rt.Delegate(ctx, &Delegation{Agent: "helper", Task: "look it up"})
	if err != nil {
		t.Fatal(err)
	}
	if rt.detector(sub) != d {
		t.Fatal("a sub-request does not share its tree's detector")
	}
	r.End()
	if r.loops.Released() || rt.detector(sub) != d {
		t.Fatal("the root's end let the detector go while a sub-request runs")
	}
	sub.End()
	if !r.loops.Released() {
		t.Fatal("the tree ended and keeps its detector")
	}
	if rt.detector(r) == d {
		t.Error("an ended tree's detector is still handed out")
	}

	// A request with no sub-request lets it go at its end.
	_, r2, err := rt.Begin(context.Background(), &RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.detector(r2)
	r2.End()
	if !r2.loops.Released() {
		t.Error("an ended request keeps its detector")
	}
}
