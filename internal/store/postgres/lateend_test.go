package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// A kept end written after another instance's recovery marked its
// checkpoint (cancelled, no undo): by the state of its request, its undo
// is dead-lettered once (interrupted, stopped), written over the mark
// (still running, for the recovery or stop to come), or left (ended by its
// client: no undo of it runs). The dead letter keeps its request's owner,
// as one the runtime adds does. Through real processes:
// cmd/reach TestFleet21LateEndAfterRecovery.
func TestLateEndAfterRecovery(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	now := time.Now()
	undo := []byte(`{"tool":"shop__unbook","arguments":{"key": "k"},"key":"undo:f1"}`)
	for _, state := range []string{"interrupted", "stopped", "running", "ended"} {
		id := "r-" + state
		if err := s.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", Tenant: "acme", State: state, Started: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutFrame(ctx, &store.Frame{Request: id, Frame: "f1", Name: "shop__book", State: "cancelled", Owner: "a/1", Started: now}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second: a successor killed before it dropped its kept line
			landed, err := s.EndExecutingFrame(ctx, &store.Frame{Request: id, Frame: "f1", State: "completed", Undo: undo, Owner: "a/1"})
			if err != nil || landed {
				t.Fatalf("%s: the late end = %v, %v; want not landed, no error", state, landed, err)
			}
		}
		// Another life's end of it, or one with no undo, changes nothing.
		if _, err := s.EndExecutingFrame(ctx, &store.Frame{Request: id, Frame: "f1", State: "completed", Undo: undo, Owner: "b/1"}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.ListDeadLetters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, d := range ds {
		got[d.Request]++
		if d.Tool != "shop__unbook" || string(d.Args) != `{"key": "k"}` || d.Frame != "f1" || d.State != store.DeadOpen ||
			d.Principal != "alice" || d.Tenant != "acme" {
			t.Errorf("dead letter %+v; want open, shop__unbook {\"key\": \"k\"} of frame f1, of alice in acme", d)
		}
	}
	if got["r-interrupted"] != 1 || got["r-stopped"] != 1 || len(got) != 2 {
		t.Errorf("dead letters by request = %v; want one for r-interrupted and r-stopped each, none else", got)
	}
	for state, want := range map[string]string{"running": "completed", "ended": "cancelled", "interrupted": "cancelled"} {
		fs, err := s.RequestFrames(ctx, "r-"+state)
		if err != nil || len(fs) != 1 {
			t.Fatalf("frames of r-%s: %v, %v", state, fs, err)
		}
		if fs[0].State != want || (want == "completed") != (len(fs[0].Undo) > 0) {
			t.Errorf("r-%s's checkpoint after the late end: %s, undo %s; want %s (undo only where written)", state, fs[0].State, fs[0].Undo, want)
		}
	}
}
