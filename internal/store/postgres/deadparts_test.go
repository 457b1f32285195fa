package postgres

import (
	"slices"
	"testing"
	"time"
)

// TestPostgresDeadParts: a request held by this life and a live one has no
// dead part (a stop through this life ends it as before); held also by a
// life that stopped beating for a TTL, or by one with no instance row at
// all, it has; this life's own part never counts, even when its own beat
// is late. A live part read as dead would leave a request stopped through
// two live instances to a recovery, up to ten TTLs, not ended at once.
func TestPostgresDeadParts(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1", "C/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []string{"A/1", "B/1"} {
		if _, _, err := a.JoinRequest(ctx, joinReq("d1", "alice"), o, ttl); err != nil {
			t.Fatalf("JoinRequest d1 on %s: %v", o, err)
		}
	}
	if dead, err := a.DeadParts(ctx, "d1", "A/1", ttl); err != nil || dead {
		t.Fatalf("DeadParts(d1) with A and B alive = %v, %v; want false", dead, err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'A/1'`); err != nil {
		t.Fatal(err)
	}
	if dead, err := a.DeadParts(ctx, "d1", "A/1", ttl); err != nil || dead {
		t.Fatalf("DeadParts(d1) asked by A, its own beat late = %v, %v; want false (its own part is not another's)", dead, err)
	}
	if dead, err := b.DeadParts(ctx, "d1", "B/1", ttl); err != nil || !dead {
		t.Fatalf("DeadParts(d1) asked by B, A silent for a TTL = %v, %v; want true", dead, err)
	}
	if _, _, err := a.JoinRequest(ctx, joinReq("d2", "alice"), "C/1", ttl); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.JoinRequest(ctx, joinReq("d2", "alice"), "B/1", ttl); err != nil {
		t.Fatal(err)
	}
	if dead, err := b.DeadParts(ctx, "d2", "B/1", ttl); err != nil || dead {
		t.Fatalf("DeadParts(d2) with C alive = %v, %v; want false", dead, err)
	}
	if _, err := a.pool.Exec(ctx, `DELETE FROM instances WHERE owner = 'C/1'`); err != nil {
		t.Fatal(err)
	}
	if dead, err := b.DeadParts(ctx, "d2", "B/1", ttl); err != nil || !dead {
		t.Fatalf("DeadParts(d2) with C's instance row gone = %v, %v; want true", dead, err)
	}
}

// TestPostgresLeaveStoppedWithDeadPart: the last live part of a stopped
// request leaves it, not ends it, when a part of it is held by an instance
// that died: its undos are a recovery's to run. The gateway asked
// DeadParts first and then left; a part that died between the two (its
// heartbeat aged past the TTL just then) was counted neither alive nor
// dead, the request was stored ended, and that part's undos never ran
// (TestCrash18StopWhileInstanceDead failed so, once, in CI). Here the
// death comes after DeadParts answered: the leave itself must see it.
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
	if dead, err := b.DeadParts(ctx, "l1", "B/1", ttl); err != nil || dead {
		t.Fatalf("DeadParts(l1) with A alive = %v, %v; want false", dead, err)
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
