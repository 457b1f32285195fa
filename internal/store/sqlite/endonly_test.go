package sqlite

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// The end of a checkpoint put before (store.Frame.EndOnly) writes its
// state, undo and error; the rest of the row stays the checkpoint's. An
// end whose checkpoint is not stored is written whole.
func TestEndOnly(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	now := time.Now()
	f := &store.Frame{Request: "req_1", Frame: "00000001", Kind: "tool", Name: "pay", CallID: "c1", IdemKey: "k",
		State: "executing", Args: []byte(`{"a":1}`), Started: now}
	if _, ok, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: "k", Owner: "o", Request: "req_1", Frame: "00000001",
		Claimed: now, Expires: now.Add(time.Hour), Executing: f}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	end := *f
	end.State, end.Undo, end.Error, end.EndOnly = "failed", []byte(`{"tool":"refund"}`), []byte(`{"code":"x"}`), true
	s.QueueFrame(&end)
	// No checkpoint of this one was put: its end is written whole.
	lone := store.Frame{Request: "req_1", Frame: "00000002", Kind: "tool", Name: "book", CallID: "c2",
		State: "completed", Args: []byte(`{"b":2}`), Started: now, EndOnly: true}
	if err := s.PutFrame(t.Context(), &lone); err != nil {
		t.Fatal(err)
	}
	if err := flush(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	fs, err := s.RequestFrames(t.Context(), "req_1")
	if err != nil || len(fs) != 2 {
		t.Fatalf("frames: %v, %v; want 2", fs, err)
	}
	got := map[string]*store.Frame{fs[0].Frame: fs[0], fs[1].Frame: fs[1]}
	e := got["00000001"]
	if e == nil || e.State != "failed" || string(e.Undo) != `{"tool":"refund"}` || string(e.Error) != `{"code":"x"}` ||
		e.Name != "pay" || e.CallID != "c1" || e.IdemKey != "k" || string(e.Args) != `{"a":1}` || !e.Started.Equal(store.Round(now)) {
		t.Errorf("the ended checkpoint: %+v", e)
	}
	l := got["00000002"]
	if l == nil || l.State != "completed" || l.Name != "book" || l.CallID != "c2" || string(l.Args) != `{"b":2}` {
		t.Errorf("an end with no checkpoint before it: %+v; want it whole", l)
	}
	if open, err := s.OpenFrames(t.Context()); err != nil || len(open) != 0 {
		t.Errorf("open frames after the ends: %v, %v; want none", open, err)
	}
}
