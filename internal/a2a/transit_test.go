package a2a

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach"

	"github.com/agentreach/reach/internal/store"
)

// TestStopKeepsPartInTransit: the agent streams part 1; its request is
// stopped; part 2, which the agent sends before its answer to the cancel
// (TASK_STATE_CANCELED), reaches reach after the stop. The stop keeps it:
// the caller's stream reads part 1, part 2, then reach's canceled with the
// stop's text; GetTask shows both parts; the audit says one event was
// kept that arrived after the stop, before the agent's own end. Before,
// reach settled the task canceled at the stop and dropped part 2 as late.
func TestStopKeepsPartInTransit(t *testing.T) {
	// The stop waits for the agent's end, not a clock: at the harness's
	// 300ms, a loaded race build let the wait expire before part 2 came.
	h := newHarnessWith(t, func(o *Options) { o.CancelTimeout = time.Minute }, nil, "executor")
	req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("transit"))}
	var id a2a.TaskID
	var parts []string
	var last *a2a.TaskStatusUpdateEvent
	for ev, err := range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			id = e.ID
		case *a2a.TaskArtifactUpdateEvent:
			parts = append(parts, textOf(e.Artifact.Parts))
			if len(parts) == 1 {
				tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
				go tk.req.Stop(reach.Cancel, "operator", "enough")
			}
		case *a2a.TaskStatusUpdateEvent:
			last = e
		}
	}
	if !slices.Equal(parts, []string{"part 1", "part 2"}) {
		t.Errorf("the caller's stream read parts %q; want part 2 too, sent before the agent's answer to the cancel", parts)
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
	if got.Status.State != a2a.TaskStateCanceled || !slices.Equal(kept, []string{"part 1", "part 2"}) {
		t.Errorf("GetTask: %s %q; want canceled with both parts", got.Status.State, kept)
	}
	// The audit reaches the Auditor off the call path: wait for it.
	eventually(t, "the stop's account in the audit", func() bool { return len(h.audit.find("kept")) > 0 })
	ev := h.audit.find("kept")
	if len(ev) != 1 || ev[0].Task != string(id) || !strings.Contains(ev[0].Message, "and 1 that arrived after it, up to the agent's own end") {
		t.Errorf("kept events %+v; want one saying part 2 arrived after the stop, before the agent's end", ev)
	}
	// The agent's own canceled came after reach's: the same state, not late.
	if slices.Contains(h.audit.kinds(id), "late:"+string(a2a.TaskStateCanceled)) {
		t.Errorf("audit %v: the agent's canceled recorded as late", h.audit.kinds(id))
	}
}

// TestStopBoundedWhenAgentNeverEnds: the agent confirms the cancel but
// never ends the task on its stream, and the store holds the task's
// writes (the events read wait to be applied). The stop waits for
// neither beyond CancelTimeout: the task is canceled at reach, and the
// audit says the agent had not ended it in time and that what was read
// was not applied in time (not kept). Before, the stop's wait for the
// events to be applied waited on a timer the wait for the agent's end
// had drained, and hung until the gateway closed.
func TestStopBoundedWhenAgentNeverEnds(t *testing.T) {
	st := &heldStore{Memory: store.NewMemory(), held: 2, release: make(chan struct{}), deaf: true} // the first write (submitted) passes
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	released := false
	defer func() {
		if !released {
			close(st.release)
		}
	}()
	go func() {
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("mute")),
			Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
		h.client("executor", "alice", false).SendMessage(t.Context(), req) //nolint:errcheck // answered once the store writes
	}()
	id := h.working("executor")
	tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
	if tk == nil {
		t.Fatal("no task at reach")
	}
	// The task, working and part 1 read; the working state's write held.
	eventually(t, "reach to read part 1", func() bool {
		tk.mu.Lock()
		ins := slices.Clone(tk.inboxes)
		tk.mu.Unlock()
		return slices.ContainsFunc(ins, func(in *inbox) bool {
			in.mu.Lock()
			defer in.mu.Unlock()
			return in.read >= 3
		})
	})
	go tk.req.Stop(reach.Cancel, "operator", "enough")
	eventually(t, "the task to be canceled at reach", tk.done)
	close(st.release) // the stop settled: the writes held go on
	released = true
	eventually(t, "the stop's account in the audit", func() bool { return len(h.audit.find("kept")) > 0 })
	ev := h.audit.find("kept")
	if len(ev) != 1 || !strings.Contains(ev[0].Message, "the agent had not ended the task within 300ms") ||
		!strings.Contains(ev[0].Message, "were not applied within 300ms") {
		t.Errorf("kept events %+v; want the agent's missing end and the events not applied said", ev)
	}
	got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCanceled || !strings.Contains(statusText(got), "enough") || len(got.Artifacts) != 0 {
		t.Errorf("GetTask: %s %q with %d artifacts; want canceled by the stop, part 1 not kept", got.Status.State, statusText(got), len(got.Artifacts))
	}
}

// TestIsolatingStopKeepsOnlyWhatWasRead: a stop in isolate mode does not
// wait for the agent: the task is canceled at reach with what was read
// before the stop (part 1), and part 2, which the agent sends as the
// cancel comes, is not kept.
func TestIsolatingStopKeepsOnlyWhatWasRead(t *testing.T) {
	h := newHarness(t, nil, "executor")
	req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("transit"))}
	var id a2a.TaskID
	var parts []string
	var last *a2a.TaskStatusUpdateEvent
	for ev, err := range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			id = e.ID
		case *a2a.TaskArtifactUpdateEvent:
			parts = append(parts, textOf(e.Artifact.Parts))
			if len(parts) == 1 {
				tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
				go tk.req.Stop(reach.Isolate, "operator", "enough")
			}
		case *a2a.TaskStatusUpdateEvent:
			last = e
		}
	}
	if !slices.Equal(parts, []string{"part 1"}) {
		t.Errorf("the caller's stream read parts %q; want only part 1, read before the isolating stop", parts)
	}
	if last == nil || last.Status.State != a2a.TaskStateCanceled || !strings.Contains(textOfMessage(last.Status.Message), "enough") {
		t.Fatalf("the stream's last status %+v; want reach's canceled with the stop's text", last)
	}
	eventually(t, "the stop's account in the audit", func() bool { return len(h.audit.find("kept")) > 0 })
	if ev := h.audit.find("kept"); len(ev) != 1 || !strings.Contains(ev[0].Message, "it did not wait for the agent") {
		t.Errorf("kept events %+v; want one saying the stop did not wait", ev)
	}
}
