package durable

import (
	"context"
	"errors"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// refusing is a store that is down for PutFrame.
type refusing struct{ *store.Memory }

func (refusing) PutFrame(context.Context, *store.Frame) error {
	return errors.New("connection refused")
}

type keeper struct{ kept []*store.Frame }

func (k *keeper) KeepEnded(f *store.Frame) bool { k.kept = append(k.kept, f); return true }

// The end of a call with an undo that the store refuses goes to the
// keeper (KeepEnds), with its undo and the masked arguments of its
// "executing" row; an end without an undo is queued, not kept.
func TestEndedRefusedIsKept(t *testing.T) {
	k := &keeper{}
	c := New(refusing{store.NewMemory()}, func([]byte) []byte { return []byte(`"masked"`) }, nil)
	c.KeepEnds(k)
	cp := &reach.Checkpoint{Request: "r", Frame: 1, Tool: "book", State: reach.Executing, Args: []byte(`{"card":"4111"}`)}
	c.ExecutingFrame(cp)
	end := *cp
	end.State, end.Undo = reach.Completed, []byte(`{"tool":"unbook"}`)
	c.Ended(t.Context(), &end)
	if len(k.kept) != 1 {
		t.Fatalf("kept %d ends; want the one refused", len(k.kept))
	}
	if f := k.kept[0]; f.State != "completed" || string(f.Undo) != `{"tool":"unbook"}` || string(f.Args) != `"masked"` || f.Request != "r" {
		t.Fatalf("the kept end: %+v", f)
	}
	plain := *cp
	plain.State = reach.Completed
	c.Ended(t.Context(), &plain)
	if len(k.kept) != 1 {
		t.Fatalf("an end without an undo was kept: %d", len(k.kept))
	}
}
