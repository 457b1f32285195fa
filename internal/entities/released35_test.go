package entities

import (
	"sync/atomic"
	"testing"
)

// TestReleasedBeforeTheWaiterTakesIt: a holder's Released is told the
// versions as its locks are let go, before a call waiting for them takes
// them, so that what it notes (its request's version of its own write) is
// there when the waiter looks. Noted after release returned, a waiter of
// the same request's next turn could find its request's own write
// "changed since you read it" (TestTurnWritesOfOneEntityTakeTurns, seen
// once in CI).
func TestReleasedBeforeTheWaiterTakesIt(t *testing.T) {
	tab := newTable(DefaultMaxExact)
	a, b := &req{}, &req{}
	var noted atomic.Uint64
	ha := &Holder[*frame, *req]{Root: a, Frame: &frame{}, Released: func(vers map[string]uint64) { noted.Store(vers["x"]) }}
	rel, err := tab.Lock(t.Context(), ha, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan uint64, 1)
	go func() {
		relB, err := tab.Lock(t.Context(), &Holder[*frame, *req]{Root: b, Frame: &frame{}}, []string{"x"})
		if err != nil {
			t.Error(err)
			seen <- 0
			return
		}
		seen <- noted.Load() // what a's Released noted, as b takes x
		relB(false)
	}()
	vers := rel(true)
	if got := <-seen; got == 0 || got != vers["x"] {
		t.Errorf("the waiter took x with %d noted, want the version release gave, %d", got, vers["x"])
	}
}
