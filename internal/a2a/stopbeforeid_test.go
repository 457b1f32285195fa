package a2a

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach"
)

// TestStopBeforeTaskIDKeepsWhatAgentSent: a stop lands while the agent
// has the message and has not yet given its task's id (reach cannot tell
// it). Once the id comes, the agent is told, and what it sends until its
// own end of the task (its working state, part 1, then part 2 with its
// answer to the cancel) is kept, as for a stop that lands after the id:
// the agent sent all of it before it had the cancel. The caller's stream
// reads both parts, then reach's canceled with the stop's text; GetTask
// shows both; the audit says what was kept. Before, the task was settled
// canceled as soon as its id came, and the parts the agent sent before it
// could know of the stop were dropped.
func TestStopBeforeTaskIDKeepsWhatAgentSent(t *testing.T) {
	for _, mode := range []reach.StopMode{reach.Cancel, reach.Isolate} {
		t.Run(mode.String(), func(t *testing.T) { stopBeforeTaskID(t, mode) })
	}
}

// stopBeforeTaskID is TestStopBeforeTaskIDKeepsWhatAgentSent with a stop
// in mode: an isolating one does not wait for the agent (as after the
// id): the task is settled canceled as soon as its id comes, nothing the
// agent sends after is kept.
func stopBeforeTaskID(t *testing.T, mode reach.StopMode) {
	// The stop waits for the agent's end, not a clock (part 2 comes with
	// it): at the harness's 300ms, a loaded race build could expire first.
	h := newHarnessWith(t, func(o *Options) { o.CancelTimeout = time.Minute }, nil, "executor")
	f := h.agents["executor"]
	type seenEv struct {
		ev  a2a.Event
		err error
	}
	evs := make(chan seenEv, 64)
	go func() {
		defer close(evs)
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("gated"))}
		for ev, err := range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
			evs <- seenEv{ev, err}
			if err != nil {
				return
			}
		}
	}()
	<-f.gated // the agent has the message; its task is not sent
	var tk *task
	eventually(t, "the task's hand-off at reach", func() bool {
		h.g.live.mu.Lock()
		defer h.g.live.mu.Unlock()
		for _, s := range h.g.live.m[Owner{"alice", ""}] {
			if s.t != nil {
				tk = s.t
				return true
			}
		}
		return false
	})
	eventually(t, "the task's sub-request", func() bool {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		return tk.req != nil
	})
	tk.req.Stop(mode, "operator", "enough")
	eventually(t, "the stop to wait for the task's id", func() bool {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		return tk.wantStop != ""
	})
	close(f.gate)
	var id a2a.TaskID
	var parts []string
	var last *a2a.TaskStatusUpdateEvent
	for e := range evs {
		if e.err != nil {
			t.Fatal(e.err)
		}
		switch ev := e.ev.(type) {
		case *a2a.Task:
			id = ev.ID
		case *a2a.TaskArtifactUpdateEvent:
			parts = append(parts, textOf(ev.Artifact.Parts))
		case *a2a.TaskStatusUpdateEvent:
			last = ev
		}
	}
	want := []string{"part 1", "part 2"}
	if mode == reach.Isolate {
		want = nil
	}
	if !slices.Equal(parts, want) {
		t.Errorf("the caller's stream read parts %q; want %q", parts, want)
	}
	if last == nil || last.Status.State != a2a.TaskStateCanceled || !strings.Contains(textOfMessage(last.Status.Message), "enough") {
		t.Fatalf("the stream's last status %+v; want reach's canceled with the stop's text", last)
	}
	got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, a := range got.Artifacts {
		kept = append(kept, textOf(a.Parts))
	}
	if got.Status.State != a2a.TaskStateCanceled || !slices.Equal(kept, want) {
		t.Errorf("GetTask: %s %q; want canceled with %q", got.Status.State, kept, want)
	}
	if mode == reach.Isolate {
		return
	}
	f.mu.Lock()
	cancels := slices.Clone(f.cancels)
	f.mu.Unlock()
	if !slices.Equal(cancels, []a2a.TaskID{id}) {
		t.Errorf("the agent had cancels %v; want one of %s", cancels, id)
	}
	eventually(t, "the stop's account in the audit", func() bool { return len(h.audit.find("kept")) > 0 })
	if ev := h.audit.find("kept"); len(ev) != 1 || ev[0].Task != string(id) || !strings.Contains(ev[0].Message, "up to the agent's own end") {
		t.Errorf("kept events %+v; want one saying the stop kept what came up to the agent's end", ev)
	}
}
