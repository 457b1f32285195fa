package postgres

import (
	"slices"
	"testing"
	"time"
)

// TestPostgresRunningOnForgottenLife: RunningOn names the instance of a
// part whose life died while it is not recovered yet (its heartbeat old,
// its row in instances), and no longer once the recovery forgot that life
// (its row deleted), though the part stays in replicas. It used to name
// it for as long as the request ran on, so that a request another
// instance ran on showed running on an instance whose life was killed and
// recovered long before.
func TestPostgresRunningOnForgottenLife(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, owner := range []string{"A/1", "B/1", "C/1"} {
		if err := a.Heartbeat(ctx, owner, owner[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, outcome, err := a.JoinRequest(ctx, joinReq("r1", "alice"), "A/1", ttl); err != nil || outcome != JoinBegun {
		t.Fatalf("JoinRequest r1 on A = %v, %v", outcome, err)
	}
	if _, outcome, err := a.JoinRequest(ctx, joinReq("r1", "alice"), "C/1", ttl); err != nil || outcome != JoinJoined {
		t.Fatalf("JoinRequest r1 on C = %v, %v", outcome, err)
	}
	on := func(why string, want ...string) {
		t.Helper()
		got, err := b.RunningOn(ctx, []string{"r1"}, "B/1")
		if err != nil || !slices.Equal(got["r1"], want) {
			t.Fatalf("RunningOn r1 from B, %s = %v, %v; want %v", why, got, err, want)
		}
	}
	on("A and C alive", "A", "C")
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'C/1'`); err != nil {
		t.Fatal(err)
	}
	on("C dead, not recovered yet", "A", "C")
	if _, err := a.pool.Exec(ctx, `DELETE FROM instances WHERE owner = 'C/1'`); err != nil {
		t.Fatal(err)
	}
	var parts int
	if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM replicas WHERE request = 'r1' AND owner = 'C/1'`).Scan(&parts); err != nil || parts != 1 {
		t.Fatalf("C's part of r1 in replicas: %d, %v; want it kept", parts, err)
	}
	on("C's life recovered and forgotten", "A")
}
