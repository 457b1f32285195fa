package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// oldBeat is the heartbeat of a reach before schema 16 (the eighteenth
// session's, before lives were marked): an upsert that overwrote seen.
const oldBeat = `INSERT INTO instances (owner, name, started, seen) VALUES ($1, $2, $3, reach_now())
	ON CONFLICT (owner) DO UPDATE SET seen = excluded.seen`

// An older instance, frozen and judged dead by a newer one (its row marked),
// or then forgotten (its row deleted once its work was recovered), goes
// on and heartbeats as it always did: it stays dead (schema 16's guard on
// instances), where its heartbeat made it alive again. A live older life's
// heartbeat still goes through, and so does a new life's first.
func TestResumedDeadLifeStaysDead(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	ttl := 50 * time.Millisecond
	started := time.Now().UnixNano()
	for _, o := range []string{"old/judged", "old/forgotten", "old/alive"} {
		if _, err := s.pool.Exec(ctx, oldBeat, o, "old", started); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * ttl) // their heartbeats grow a TTL old
	if _, err := s.pool.Exec(ctx, oldBeat, "old/alive", "old", started); err != nil {
		t.Fatal(err)
	}
	judged, err := s.Judge(ctx, []string{"old/judged", "old/forgotten"}, ttl)
	if err != nil || len(judged) != 2 {
		t.Fatalf("Judge = %v, %v; want both old lives marked", judged, err)
	}
	if err := s.Forget(ctx, "old/forgotten", ttl); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"old/judged", "old/forgotten", "old/alive"} {
		if _, err := s.pool.Exec(ctx, oldBeat, o, "old", started); err != nil {
			t.Fatal(err)
		}
	}
	lives, err := s.Lives(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	alive := map[string]bool{}
	for _, l := range lives {
		alive[l.Owner] = l.Alive
	}
	if alive["old/judged"] || alive["old/forgotten"] {
		t.Errorf("lives after the judged and forgotten older lives heartbeated again: %v; want both dead", alive)
	}
	if _, ok := alive["old/forgotten"]; ok {
		t.Errorf("the forgotten life's row is back: %v", alive)
	}
	if !alive["old/alive"] {
		t.Errorf("lives: %v; want the older life that was never judged alive", alive)
	}
	// This binary's heartbeat of a forgotten life says so (judged), as
	// when it found its row marked.
	if judged, _, err := s.Beat(ctx, "old/forgotten", "old", time.Now()); err != nil || !judged {
		t.Errorf("Beat of a forgotten life = %v, %v; want judged", judged, err)
	}
	if judged, inserted, err := s.Beat(ctx, "new/1", "new", time.Now()); err != nil || judged || !inserted {
		t.Errorf("a new life's first Beat = judged %v, inserted %v, %v; want inserted", judged, inserted, err)
	}
}
