package postgres

import (
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
