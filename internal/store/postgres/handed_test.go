package postgres

import (
	"slices"
	"testing"
	"time"
)

// TestPostgresLeaveHandsUndosOver: A's part of a request leaves with two
// undos while B's runs on; they are handed over to the request's record.
// Stopped, the request is not ended by B's leave, its last live part: it
// is an orphan with no part, which ClaimOrphans gives a recovery. Not
// stopped, B's leave ends it and no recovery claims it: the handed undos
// are let go. Before, A's leave handed nothing and B's ended the stopped
// request.
func TestPostgresLeaveHandsUndosOver(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1", "C/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, stopped := range []bool{true, false} {
		id := "r-ended"
		if stopped {
			id = "r-stopped"
		}
		if _, _, err := a.JoinRequest(ctx, joinReq(id, "alice"), "A/1", ttl); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.JoinRequest(ctx, joinReq(id, "alice"), "B/1", ttl); err != nil {
			t.Fatal(err)
		}
		if last, err := a.LeaveRequestHanding(ctx, id, "A/1", ttl, "ended", nil, nil, time.Now(), 2); err != nil || last {
			t.Fatalf("A leaves %s = %v, %v; want not the last", id, last, err)
		}
		var handed int
		if err := a.pool.QueryRow(ctx, `SELECT handed FROM requests WHERE id = $1`, id).Scan(&handed); err != nil || handed != 2 {
			t.Fatalf("%s holds %d handed undos (%v); want 2", id, handed, err)
		}
		state := "ended"
		if stopped {
			if _, err := b.StopRequest(ctx, id, 2, []byte(`{"mode":"cancel","by":"api","reason":"enough"}`)); err != nil {
				t.Fatal(err)
			}
			state = "stopped"
		}
		last, err := b.LeaveRequestHanding(ctx, id, "B/1", ttl, state, nil, nil, time.Now(), 0)
		if err != nil || last == stopped {
			t.Fatalf("B leaves %s = %v, %v; want last %v", id, last, err, !stopped)
		}
		r, err := a.GetRequest(ctx, id)
		if err != nil || r.State != state || r.Ended.IsZero() == !stopped {
			t.Fatalf("after both left, %s = %+v, %v; want %s, ended %v", id, r, err, state, !stopped)
		}
	}
	ids, err := a.ClaimOrphans(ctx, "C/1", ttl, 10)
	if err != nil || !slices.Equal(ids, []string{"r-stopped"}) {
		t.Fatalf("ClaimOrphans = %v, %v; want the stopped request only", ids, err)
	}
}
