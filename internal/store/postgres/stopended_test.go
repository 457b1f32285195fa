package postgres

import (
	"testing"
	"time"
)

// TestPostgresStopOpenRefusesEnded: StopOpenRequest (an operator's stop)
// stores the stop of a request still running, even when one instance's
// part of it left (B runs on); it stores nothing for a request that ended
// with no stop, nor for one its client ended (settled) while a part still
// runs, and reports ended; StopRequest still stores the stop a stopped
// request cascades onto an ended sub-request. Before (no StopOpenRequest:
// the API stored StopRequest's), the ended and the settled requests were
// stored stopped.
func TestPostgresStopOpenRefusesEnded(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	cause := []byte(`{"mode":"cancel","by":"api","reason":"enough"}`)
	join := func(id string) {
		t.Helper()
		if _, _, err := a.JoinRequest(ctx, joinReq(id, "alice"), "A/1", ttl); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.JoinRequest(ctx, joinReq(id, "alice"), "B/1", ttl); err != nil {
			t.Fatal(err)
		}
	}
	leave := func(s *Store, id, owner string) {
		t.Helper()
		if _, err := s.LeaveRequestHanding(ctx, id, owner, ttl, "ended", nil, nil, time.Now(), 1); err != nil {
			t.Fatal(err)
		}
	}
	stopOpen := func(id string, wantChanged, wantEnded bool, wantState string) {
		t.Helper()
		changed, ended, err := b.StopOpenRequest(ctx, id, 2, cause)
		if err != nil || changed != wantChanged || ended != wantEnded {
			t.Fatalf("StopOpenRequest(%s) = %v, %v, %v; want changed %v, ended %v", id, changed, ended, err, wantChanged, wantEnded)
		}
		if r, err := a.GetRequest(ctx, id); err != nil || r.State != wantState {
			t.Fatalf("%s is stored %+v, %v; want %s", id, r, err, wantState)
		}
	}

	join("r-part-left")
	leave(a, "r-part-left", "A/1") // B's part runs on
	stopOpen("r-part-left", true, false, "stopped")

	join("r-ended")
	leave(a, "r-ended", "A/1")
	leave(b, "r-ended", "B/1")
	stopOpen("r-ended", false, true, "ended")

	join("r-settled")
	if ok, err := a.SettleRequest(ctx, "r-settled"); err != nil || !ok {
		t.Fatalf("SettleRequest = %v, %v", ok, err)
	}
	stopOpen("r-settled", false, true, "running")

	if changed, ended, err := b.StopOpenRequest(ctx, "r-unknown", 2, cause); err != nil || changed || ended {
		t.Fatalf("StopOpenRequest of an unknown request = %v, %v, %v; want nothing", changed, ended, err)
	}
	// The cascade of a stop onto an ended sub-request is stored as before.
	if changed, err := b.StopRequest(ctx, "r-ended", 2, cause); err != nil || !changed {
		t.Fatalf("StopRequest(r-ended) = %v, %v; want the stop stored", changed, err)
	}
}
