package approval

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestEventsDeliveredInTheOrderMade: events are audited in the order they
// were made under the queue's lock, whichever call delivers first. A vote
// that approves makes "approved" and wakes the call waiting for it, which
// makes "used"; the waiter could deliver its "used" before the voter
// delivered its "approved", and the audit log said the approval was used
// before it was approved. Here the waiter delivers first.
func TestEventsDeliveredInTheOrderMade(t *testing.T) {
	var mu sync.Mutex
	var got []string
	q := New(&Options{Audit: func(_ context.Context, e Event) {
		mu.Lock()
		got = append(got, e.Action)
		mu.Unlock()
	}})
	rec := &record{Approval: Approval{ID: "a-1", Tool: "refund"}}
	now := time.Now()
	q.mu.Lock()
	approved := []Event{q.event(now, "approved", "alice", "", rec)}
	q.mu.Unlock()
	q.mu.Lock()
	used := []Event{q.event(now, "used", "", "", rec)}
	q.mu.Unlock()
	q.emit(t.Context(), used) // the waiter, woken, delivers first
	q.emit(t.Context(), approved)
	q.emit(t.Context(), nil) // a call that made nothing delivers nothing
	if want := []string{"approved", "used"}; !slices.Equal(got, want) {
		t.Errorf("audited %v, want %v: in the order made", got, want)
	}
}
