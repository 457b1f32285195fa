package reach

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// frameStore keeps the last event of each frame by request, as the audit
// log does, and reads them back (Options.StoredFrames).
type frameStore struct {
	mu     sync.Mutex
	frames map[string][]PastFrame
}

func (s *frameStore) Record(_ context.Context, e *Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frames == nil {
		s.frames = map[string][]PastFrame{}
	}
	pf := PastFrame{ID: e.Frame, Parent: e.Parent, Kind: e.Kind, Name: e.Name, CallID: e.CallID, Agent: e.Agent,
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

func (s *frameStore) read(id string) []PastFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames[id])
}

// TestRerun26NamedAgainHoldsOneEarlierRun: a request id named again 50
// times in one runtime with a store (a client sending one conversation id
// as its request id) shows every call made under it once, in order, while
// what it holds of its earlier runs stays one request and its frames: the
// runs before that are read back from the store. Before, each run held the
// one before it (Request.earlier), a chain of 49 requests and every frame
// of theirs, which the registry's limit on kept requests could not free.
func TestRerun26NamedAgainHoldsOneEarlierRun(t *testing.T) {
	st := &frameStore{}
	// A History knowing no request: the runs' sub-requests would be
	// looked up in it once the runtime let them go.
	noHistory := func(string) (*PastRequest, bool) { return nil, false }
	rt := New(&Options{Recorder: st, StoredFrames: st.read, History: noHistory, DisableLoopGuard: true, DefaultBudget: &Budget{}})
	rt.MustRegister(Tool{Name: "echo", Access: Read, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})
	const runs, calls = 50, 2
	var want []string
	var r *Request
	for i := range runs {
		ctx, q, err := rt.Begin(t.Context(), &RequestOptions{ID: "conversation", Principal: "alice"})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		r = q
		for j := range calls {
			id := fmt.Sprintf("c%d.%d", i, j)
			if res := rt.Call(ctx, &Call{ID: id, Tool: "echo", Arguments: json.RawMessage(`{}`)}); res.Status != StatusSuccess {
				t.Fatalf("%s: %+v", id, res)
			}
			want = append(want, id)
		}
		var got []string
		for _, f := range r.Frames() {
			if f.Kind == ToolFrame {
				got = append(got, f.CallID)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d shows the calls %v, want %v", i, got, want)
		}
		if kept, _ := r.KeptFrames(); len(kept) != len(r.Frames()) {
			t.Fatalf("run %d: KeptFrames has %d frames, Frames %d", i, len(kept), len(r.Frames()))
		}
		r.End()
	}
	held, heldFrames := 0, 0
	for e := r.earlier.Load(); e != nil && e.req != nil; e = e.req.earlier.Load() {
		held++
		e.req.mu.Lock()
		heldFrames += len(e.req.frames)
		e.req.mu.Unlock()
	}
	if held > 1 || heldFrames > calls {
		t.Errorf("after %d runs the request holds %d earlier runs with %d frames, want at most 1 with %d", runs, held, heldFrames, calls)
	}
}
