package storetest

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// The end of a checkpoint the call's claim put (store.Frame.EndOnly, as
// the runtime's checkpoints end) keeps the checkpoint's other columns and
// takes the end's state, undo and error, on every engine, whether it writes
// the end alone or whole; an end whose checkpoint is not stored is
// written whole.
func testFrameEndOnly(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		f := &store.Frame{Request: "req_1", Frame: "00000000000000f1", Kind: "tool", Name: "pay", CallID: "c1", IdemKey: "k",
			State: "executing", Args: []byte(`{"a":1}`), Started: t0}
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "o", Request: f.Request, Frame: f.Frame,
			Claimed: t0, Expires: t0.Add(time.Hour), Executing: f}); err != nil || !ok {
			t.Fatalf("ClaimKey = %v, %v", ok, err)
		}
		end := *f
		end.State, end.Undo, end.Error, end.EndOnly = "failed", []byte(`{"tool":"refund"}`), []byte(`{"code":"x"}`), true
		putFrame(t, s, &end)
		lone := &store.Frame{Request: "req_1", Frame: "00000000000000f2", Kind: "tool", Name: "book", CallID: "c2",
			State: "completed", Args: []byte(`{"b":2}`), Started: t0, EndOnly: true}
		putFrame(t, s, lone)
		fs, err := s.RequestFrames(ctx, "req_1")
		if err != nil || len(fs) != 2 {
			t.Fatalf("RequestFrames = %v, %v; want 2", fs, err)
		}
		got := map[string]*store.Frame{fs[0].Frame: fs[0], fs[1].Frame: fs[1]}
		if e := got[f.Frame]; e == nil || e.State != "failed" || string(e.Undo) != `{"tool":"refund"}` || string(e.Error) != `{"code":"x"}` ||
			e.Name != "pay" || e.CallID != "c1" || e.IdemKey != "k" || string(e.Args) != `{"a":1}` || !e.Started.Equal(store.Round(t0)) {
			t.Errorf("the ended checkpoint: %+v", e)
		}
		if l := got[lone.Frame]; l == nil || l.State != "completed" || l.Name != "book" || l.CallID != "c2" || string(l.Args) != `{"b":2}` {
			t.Errorf("an end with no checkpoint before it: %+v; want it whole", l)
		}
		if open, err := s.OpenFrames(ctx); err != nil || len(open) != 0 {
			t.Errorf("OpenFrames after the ends = %v, %v; want none", open, err)
		}
	})
}
