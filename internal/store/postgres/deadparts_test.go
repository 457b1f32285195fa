package postgres

import (
	"slices"
	"testing"
	"time"
)

// TestPostgresLeaveSaysDeadPart: a stopped request's part that leaves is
// told, by the leave itself (LeaveRequestOutcome, under the request's row
// lock), whether a part of an instance that died stays; the gateway asked
// a query of its own (DeadParts) before. Held by this life and a live one,
// the request has no dead part (it is left: the live part ends it); held
// also by a life that stopped beating for a TTL, or by one with no
// instance row at all, it has (left to a recovery); this life's own part
// never counts, even when its own beat is late. A live part read as dead
// would leave a request stopped through two live instances to a recovery,
// up to ten TTLs, not ended at once.
func TestPostgresLeaveSaysDeadPart(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1", "C/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	join := func(id string, owners ...string) {
		t.Helper()
		for _, o := range owners {
			if _, _, err := a.JoinRequest(ctx, joinReq(id, "alice"), o, ttl); err != nil {
				t.Fatalf("JoinRequest %s on %s: %v", id, o, err)
			}
		}
		if _, err := a.StopRequest(ctx, id, 2, []byte(`{"by":"api","reason":"enough"}`)); err != nil {
			t.Fatal(err)
		}
	}
	leave := func(s *Store, id, owner string, want Leave, why string) {
		t.Helper()
		got, err := s.LeaveRequestOutcome(ctx, id, owner, ttl, "stopped", nil, nil, time.Now(), 0)
		if err != nil || got != want {
			t.Fatalf("%s leaving %s, %s = %v, %v; want %v", owner, id, why, got, err, want)
		}
	}
	join("d1", "A/1", "B/1")
	join("d2", "A/1", "B/1")
	join("d3", "A/1", "B/1")
	join("d4", "B/1", "C/1")
	leave(a, "d1", "A/1", LeaveLeft, "B alive")
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'A/1'`); err != nil {
		t.Fatal(err)
	}
	leave(a, "d2", "A/1", LeaveLeft, "its own beat late, B alive (its own part is not another's)")
	leave(b, "d3", "B/1", LeaveDead, "A silent for a TTL")
	if r, _ := b.GetRequest(ctx, "d3"); r.State != "stopped" || !r.Ended.IsZero() {
		t.Fatalf("d3 after B left = %s (ended %v); want stopped, not ended: a recovery's", r.State, r.Ended)
	}
	if _, err := a.pool.Exec(ctx, `DELETE FROM instances WHERE owner = 'C/1'`); err != nil {
		t.Fatal(err)
	}
	leave(b, "d4", "B/1", LeaveDead, "C's instance row gone")
}

// TestPostgresLeaveStoppedWithDeadPart: the last live part of a stopped
// request leaves it, not ends it, when a part of it is held by an instance
// that died: its undos are a recovery's to run. The gateway asked
// DeadParts first and then left; a part that died between the two (its
// heartbeat aged past the TTL just then) was counted neither alive nor
// dead, the request was stored ended, and that part's undos never ran
// (TestCrash18StopWhileInstanceDead failed so, once, in CI). The leave
// itself must see the death; the gateway now asks nothing before it.
func TestPostgresLeaveStoppedWithDeadPart(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"l1", "l2", "l3"} {
		for _, o := range []string{"A/1", "B/1"} {
			if _, _, err := a.JoinRequest(ctx, joinReq(id, "alice"), o, ttl); err != nil {
				t.Fatalf("JoinRequest %s on %s: %v", id, o, err)
			}
		}
	}
	for _, id := range []string{"l1", "l3"} {
		if _, err := b.StopRequest(ctx, id, 2, []byte(`{"by":"api","reason":"enough"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'A/1'`); err != nil { // A dies now
		t.Fatal(err)
	}
	// l1, stopped; l3, stopped, left by a part that has not heard the
	// stop (it leaves as ended): both keep A's dead part.
	for _, c := range []struct{ id, state string }{{"l1", "stopped"}, {"l3", "ended"}} {
		last, err := b.LeaveRequestHanding(ctx, c.id, "B/1", ttl, c.state, nil, nil, time.Now(), 0)
		if err != nil || last {
			t.Fatalf("B leaving %s (as %s) with A's part dead = %v, %v; want left, not ended", c.id, c.state, last, err)
		}
		if r, _ := b.GetRequest(ctx, c.id); r.State != "stopped" || !r.Ended.IsZero() {
			t.Fatalf("%s after B left = %s (ended %v); want stopped, not ended", c.id, r.State, r.Ended)
		}
	}
	// Not stopped: the request ends with its last live part, as before
	// (a request that ends with no stop undoes nothing).
	if last, err := b.LeaveRequestHanding(ctx, "l2", "B/1", ttl, "ended", nil, nil, time.Now(), 0); err != nil || !last {
		t.Fatalf("B leaving l2 (not stopped) with A's part dead = %v, %v; want ended", last, err)
	}
	judge(t, b, "A/1", ttl)
	ids, err := b.ClaimOrphans(ctx, "B/1", ttl, 10)
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"l1", "l3"}) {
		t.Fatalf("ClaimOrphans = %v, %v; want l1 and l3, for their undos", ids, err)
	}
}
