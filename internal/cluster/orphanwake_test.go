package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
)

// TestLeaveOfStopNotHeardWakesRecovery: b's part of a request left it,
// its undo handed over; the request is then stopped through the store,
// and a, which has not heard the stop, ends its part as ended. a's part
// is the last live one and the request holds handed undos: the store
// leaves it, an orphan, and a asks for a recovery at its next heartbeat
// that may recover (orphaned), as it does when it leaves a stopped part.
// Before, only a part that left stopped asked, and the orphan waited for
// the sweep that comes every 10 TTLs.
func TestLeaveOfStopNotHeardWakesRecovery(t *testing.T) {
	ctx := context.Background()
	ttl := time.Minute
	_, a, b := twoInstances(t, ttl)
	rt := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil)), DisableLoopGuard: true})
	_, q, err := rt.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.st.GetRequest(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.st.JoinRequest(ctx, r, b.owner, ttl); err != nil {
		t.Fatal(err)
	}
	if last, err := b.st.LeaveRequestHanding(ctx, "p", b.owner, ttl, "ended", nil, nil, time.Now(), 1); err != nil || last {
		t.Fatalf("b leaves = %v, %v; want not the last", last, err)
	}
	if _, err := b.st.StopRequest(ctx, "p", 2, []byte(`{"mode":"cancel","by":"api","reason":"enough"}`)); err != nil {
		t.Fatal(err)
	}
	if q.StopCause() != nil {
		t.Fatal("a heard the stop; the case is one it has not heard yet")
	}
	q.End()
	if st, err := a.st.GetRequest(ctx, "p"); err != nil || !st.Ended.IsZero() {
		t.Fatalf("after a's leave, p = %+v, %v; want it not ended (an orphan holding b's handed undo)", st, err)
	}
	if !a.orphaned.Load() {
		t.Error("a left the last live part of a stopped request holding handed undos, an orphan, and asked for no recovery")
	}
}
