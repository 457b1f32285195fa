package cluster

import (
	"context"
	"testing"
)

// TestFencedByOlderRecoverer: b is paused past the TTL while a request
// runs on it; a recoverer of an older reach (the eighteenth session's:
// it does not mark b dead, Judge, and forgets b only if b has not
// heartbeated since, Forget) stores that request interrupted, as its
// recovery does, and b resumes before it is forgotten. b's heartbeat
// after the break reads that the request running on it was recovered,
// and b fences itself: it stops its part and admits nothing. Before, b
// heartbeated on as alive, its lease renewed, and dispatched the calls it
// held in a request whose writes the recovery had undone.
func TestFencedByOlderRecoverer(t *testing.T) {
	f := newFenceFleet(t)
	ctx := context.Background()
	got, err := f.st.GetRequest(ctx, f.req.ID())
	if err != nil {
		t.Fatal(err)
	}
	got.State, got.Ended = "interrupted", got.Started
	if err := f.st.PutRequest(ctx, got); err != nil {
		t.Fatal(err)
	}
	f.wantFenced(t)
}
