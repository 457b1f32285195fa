package reach

import (
	"context"
	"sync"
	"testing"
)

// endsTold records the requests' ends told to the store.
type endsTold struct {
	mu   sync.Mutex
	ends []string
}

func (e *endsTold) RequestBegan(context.Context, *Request) error    { return nil }
func (e *endsTold) RequestStopped(context.Context, *Request, Cause) {}
func (e *endsTold) RequestEnded(_ context.Context, r *Request) {
	e.mu.Lock()
	e.ends = append(e.ends, r.ID())
	e.mu.Unlock()
}
func (e *endsTold) told() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.ends) }

// TestOwedCountDoesNotWrap: a stopped request with as many compensations
// under way as its count holds (endHeld-1: 32767, each a client's
// Compensate or a failed call's, each blocked in an undo) begins one
// more. That one is not counted (its end does not wait for it), rather
// than the count running into the bit that says the end waits: then the
// end, which must wait for the 32767, was recorded at once, and once they
// paid, the count ran under zero and a later pay recorded it again.
func TestOwedCountDoesNotWrap(t *testing.T) {
	rec := &endsTold{}
	rt := New(&Options{Requests: rec})
	_, r, err := rt.Begin(t.Context(), &RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	r.Stop(Cancel, "operator", "enough")
	r.settle.Lock()
	r.owed = endHeld - 1 // as if 32767 compensations were under way
	r.settle.Unlock()
	r.owe() // one more, as compensate does
	r.End()
	if n := rec.told(); n != 0 {
		t.Fatalf("r's end recorded %d time(s) while 32767 compensations were under way; want it to wait", n)
	}
	for range endHeld - 1 {
		r.paid()
	}
	if n := rec.told(); n != 1 {
		t.Errorf("r's end recorded %d time(s) once the compensations paid; want once", n)
	}
	r.settle.Lock()
	owed := r.owed
	r.settle.Unlock()
	if owed != 0 {
		t.Errorf("owed %#x once all paid; want 0", owed)
	}
}
