package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// eventStore keeps the events it is given, as a store of frames does: the
// last event of each frame, by request (a fake of the audit log).
type eventStore struct {
	mu     sync.Mutex
	frames map[string][]reach.PastFrame
	reads  int
}

func (s *eventStore) Record(_ context.Context, e *reach.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frames == nil {
		s.frames = map[string][]reach.PastFrame{}
	}
	pf := reach.PastFrame{ID: e.Frame, Parent: e.Parent, Kind: e.Kind, Name: e.Name, CallID: e.CallID, Agent: e.Agent,
		Args: e.Args, State: e.State, Error: e.Error, Summary: e.Summary, Started: e.Started, Ended: e.Time}
	fs := s.frames[e.Request]
	for i := range fs {
		if fs[i].ID == e.Frame {
			fs[i] = pf
			return
		}
	}
	s.frames[e.Request] = append(fs, pf)
}

func (s *eventStore) read(id string) []reach.PastFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return append([]reach.PastFrame(nil), s.frames[id]...)
}

// With a store of frames, a request keeps only its newest ended tool
// frames in memory, and its views read the rest back: every frame, in
// the order they began, with its state, parent and error.
func TestFrameWindowReadsBackFromTheStore(t *testing.T) {
	st := &eventStore{}
	rt := reach.New(&reach.Options{Recorder: st, StoredFrames: st.read, FrameWindow: 4, DisableLoopGuard: true,
		DefaultBudget: &reach.Budget{}})
	rt.MustRegister(
		reach.Tool{Name: "echo", Access: reach.Read, Func: echo},
		reach.Tool{Name: "boom", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("boom")
		}},
		reach.Tool{Name: "outer", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			if res := call(rt, ctx, "echo", `{"inner":true}`); res.IsError() {
				return nil, errors.New(res.ModelText())
			}
			return args, nil
		}},
	)
	ctx, req := begin(t, rt, nil)
	var want []reach.FrameID
	failed := 0
	for i := range 40 {
		tool := "echo"
		switch {
		case i%10 == 3:
			tool, failed = "boom", failed+1
		case i == 5:
			tool = "outer"
		}
		res := call(rt, ctx, tool, fmt.Sprintf(`{"i":%d}`, i))
		want = append(want, res.Frame)
		if i == 5 {
			want = append(want, 0) // the inner echo, begun after outer
		}
	}
	kept, gone := req.KeptFrames()
	if len(kept) >= 2*4 || gone.Frames+len(kept) != 41 {
		t.Fatalf("kept %d frames in memory and let %d go, want fewer than 8 kept of 41", len(kept), gone.Frames)
	}
	if gone.Failed != failed-1 && gone.Failed != failed { // the last boom may still be kept
		t.Errorf("tally: %d failed let go, want %d or %d", gone.Failed, failed-1, failed)
	}
	// A frame the store has of the same request from elsewhere (another
	// instance that joined it) is not one of this request's.
	st.Record(ctx, &reach.Event{Request: req.ID(), Frame: 777, Kind: reach.ToolFrame, Name: "elsewhere", State: reach.Completed})
	fs := req.Frames()
	if len(fs) != 41 {
		t.Fatalf("Frames: %d frames, want 41: %v", len(fs), names(fs))
	}
	for i, f := range fs {
		if want[i] != 0 && f.ID != want[i] {
			t.Fatalf("frame %d is %s %v, want %v (the order they began)", i, f.Name, f.ID, want[i])
		}
	}
	inner := fs[6]
	if inner.Name != "echo" || inner.Parent == nil || inner.Parent.ID != want[5] || inner.Depth != 2 {
		t.Errorf("the inner call: %s under %v at depth %d, want echo under outer %v at depth 2", inner.Name, inner.Parent, inner.Depth, want[5])
	}
	if f := fs[3]; f.State() != reach.Failed || f.Err() == nil || f.Ended().IsZero() {
		t.Errorf("the first boom read back: %s %v %v", f.State(), f.Err(), f.Ended())
	}
	if f, ok := req.Frame(want[0]); !ok || f.Name != "echo" || f.State() != reach.Completed {
		t.Errorf("Frame(first) = %v, %v; want the first echo, completed", f, ok)
	}
	if _, ok := req.Frame(want[39]); !ok {
		t.Error("Frame(last) not found")
	}
	// An id that is none of the request's (another tracer's span, say:
	// looked up on every call that carries one) reads nothing back.
	reads := st.reads
	if f, ok := req.Frame(12345); ok || st.reads != reads {
		t.Errorf("Frame(an unknown id) = %v, %v, with %d reads of the store, want none", f, ok, st.reads-reads)
	}
}

// Without a store of frames, every frame stays in memory (up to
// MaxFrames), and nothing is read back.
func TestFrameWindowOffWithoutAStore(t *testing.T) {
	st := &eventStore{}
	rt := reach.New(&reach.Options{Recorder: st, FrameWindow: 4, DisableLoopGuard: true, DefaultBudget: &reach.Budget{}})
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Func: echo})
	ctx, req := begin(t, rt, nil)
	for i := range 20 {
		call(rt, ctx, "echo", fmt.Sprintf(`{"i":%d}`, i))
	}
	if kept, gone := req.KeptFrames(); len(kept) != 20 || gone.Frames != 0 {
		t.Errorf("kept %d, let go %d; want all 20 kept", len(kept), gone.Frames)
	}
	if len(req.Frames()) != 20 || st.reads != 0 {
		t.Errorf("Frames: %d, store reads %d; want 20 from memory", len(req.Frames()), st.reads)
	}
}

// MaxFrames bounds the frames a request keeps, in memory or let go to the
// store, as it does without a store: later calls run and are not kept.
func TestFrameWindowWithinMaxFrames(t *testing.T) {
	st := &eventStore{}
	rt := reach.New(&reach.Options{Recorder: st, StoredFrames: st.read, FrameWindow: 2, MaxFrames: 10,
		DisableLoopGuard: true, DefaultBudget: &reach.Budget{}})
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Func: echo})
	ctx, req := begin(t, rt, nil)
	for i := range 30 {
		if res := call(rt, ctx, "echo", fmt.Sprintf(`{"i":%d}`, i)); res.IsError() {
			t.Fatalf("call %d: %s", i, res.ModelText())
		}
	}
	kept, gone := req.KeptFrames()
	if fs := req.Frames(); len(fs) != 10 || len(kept)+gone.Frames != 10 {
		t.Errorf("Frames: %d, kept %d and let go %d; want the first 10", len(fs), len(kept), gone.Frames)
	}
}

// The default window keeps a request's newest 4 ended tool frames, up to
// 8 between two lets go (a session's request under the gateway: 128 of
// them under the served benchmark), and reads every other one back.
func TestFrameWindowDefault(t *testing.T) {
	st := &eventStore{}
	rt := reach.New(&reach.Options{Recorder: st, StoredFrames: st.read, DisableLoopGuard: true, DefaultBudget: &reach.Budget{}})
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Func: echo})
	ctx, req := begin(t, rt, nil)
	for i := range 30 {
		call(rt, ctx, "echo", fmt.Sprintf(`{"i":%d}`, i))
	}
	kept, gone := req.KeptFrames()
	if len(kept) < 4 || len(kept) >= 8 || len(kept)+gone.Frames != 30 {
		t.Errorf("kept %d frames in memory and let %d go, want 4 to 7 of 30 kept", len(kept), gone.Frames)
	}
	if fs := req.Frames(); len(fs) != 30 {
		t.Errorf("Frames: %d, want all 30", len(fs))
	}
}
