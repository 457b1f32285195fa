package storetest

import (
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// An end kept through an outage (store.FrameEnder) lands only on a
// checkpoint still "executing": not on one a recovery marked meanwhile
// (cancelled), not on one of another life (where the store keeps owners),
// not where none is stored.
func testEndExecutingFrame(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		e, ok := s.(store.FrameEnder)
		if !ok {
			t.Skip("the store ends no checkpoint only where it is executing")
		}
		ctx := t.Context()
		put := func(frame, state, owner string) {
			t.Helper()
			putFrame(t, s, &store.Frame{Request: "req_e", Frame: frame, Kind: "tool", Name: "book", CallID: "c-" + frame,
				State: state, Args: []byte(`{"a":1}`), Started: t0, Owner: owner})
		}
		put("00000000000000e1", "executing", "a/1")
		put("00000000000000e2", "cancelled", "a/1")
		end := func(frame, owner string) bool {
			t.Helper()
			landed, err := e.EndExecutingFrame(ctx, &store.Frame{Request: "req_e", Frame: frame, State: "completed",
				Undo: []byte(`{"tool":"unbook"}`), Owner: owner})
			if err != nil {
				t.Fatal(err)
			}
			return landed
		}
		if end("00000000000000e2", "a/1") {
			t.Error("an end landed on a checkpoint a recovery marked cancelled")
		}
		if end("00000000000000e3", "a/1") {
			t.Error("an end landed where no checkpoint is stored")
		}
		if !end("00000000000000e1", "a/1") {
			t.Fatal("an end did not land on its executing checkpoint")
		}
		if end("00000000000000e1", "a/1") {
			t.Error("an end landed twice")
		}
		fs, err := s.RequestFrames(ctx, "req_e")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*store.Frame{}
		for _, f := range fs {
			got[f.Frame] = f
		}
		if len(got) != 2 {
			t.Fatalf("frames: %v; want the two put", fs)
		}
		if f := got["00000000000000e1"]; f.State != "completed" || string(f.Undo) != `{"tool":"unbook"}` || f.Name != "book" || string(f.Args) != `{"a":1}` {
			t.Errorf("the ended checkpoint: %+v", f)
		}
		if f := got["00000000000000e2"]; f.State != "cancelled" || f.Undo != nil {
			t.Errorf("the cancelled checkpoint: %+v; want it as marked", f)
		}
		if fs[0].Owner == "" {
			return // the store keeps no owner (SQLite: one life at a time)
		}
		put("00000000000000e4", "executing", "a/2")
		if end("00000000000000e4", "a/1") {
			t.Error("an end of one life landed on another life's executing checkpoint")
		}
	})
}
