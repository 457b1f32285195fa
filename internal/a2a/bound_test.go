package a2a

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach"
)

// TestA2AFloodFailsTheTask: an agent that streams an artifact without end
// has the task failed at reach once what reach keeps of it passes
// MaxTaskBytes; the caller's stream ends with that state, its text saying
// the bound and what to do; the agent's stream is let go and the agent
// told to cancel; and the task keeps nothing of the flood.
func TestA2AFloodFailsTheTask(t *testing.T) {
	const limit = 1 << 20
	h := newHarnessWith(t, func(o *Options) { o.MaxTaskBytes = limit }, nil, "worker")
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("flood"))
	var last a2a.Event
	var id a2a.TaskID
	for ev, err := range h.client("worker", "alice", false).SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		last = ev
		if tk, ok := ev.(*a2a.Task); ok {
			id = tk.ID
		}
	}
	// The caller's stream ends with the task's status, or (its events
	// let go with the rest) the task as it stands.
	var status a2a.TaskStatus
	switch e := last.(type) {
	case *a2a.TaskStatusUpdateEvent:
		status = e.Status
	case *a2a.Task:
		status = e.Status
		if len(e.Artifacts) != 0 {
			t.Errorf("the stream's last task has %d artifacts, want none kept", len(e.Artifacts))
		}
	default:
		t.Fatalf("the stream ended with %T, want the task's status", last)
	}
	if status.State != a2a.TaskStateFailed {
		t.Fatalf("the stream ended with %s, want FAILED", status.State)
	}
	if text := textOfMessage(status.Message); !strings.Contains(text, fmt.Sprintf("over %d bytes", limit)) || !strings.Contains(text, "shorter answer") {
		t.Errorf("the failure says %q, want the bound and what to do", text)
	}
	select {
	case n := <-h.agents["worker"].flooded:
		if n*64<<10 > 64*limit {
			t.Errorf("the agent streamed %d chunks before its stream was let go", n)
		}
	case <-time.After(time.Minute): // as eventually: a loaded race build is slow
		t.Fatal("the agent's stream was never let go")
	}
	eventually(t, "the agent told to cancel", func() bool { return len(h.agents["worker"].canceled()) == 1 })
	// A task's events reach the Auditor off the call path (the gateway's
	// audit queue), after the caller's stream and the agent's cancel may
	// have: wait for the failure.
	eventually(t, "the failure in the audit", func() bool {
		return slices.Contains(h.audit.kinds(id), "state:"+string(a2a.TaskStateFailed))
	})
	tk, err := h.client("worker", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status.State != a2a.TaskStateFailed || len(tk.Artifacts) != 0 {
		t.Errorf("GetTask: %s with %d artifacts, want FAILED with none (reach's record, not the agent's view)", tk.Status.State, len(tk.Artifacts))
	}
}

// TestTaskHeldIsBounded: a task fed 64 MiB of artifact chunks (each its
// own memory) holds at most about MaxTaskBytes of them while it lives: the
// heap, after a collection, grows by less than 8 MiB with a 1 MiB bound
// (by 64 MiB and more without it).
func TestTaskHeldIsBounded(t *testing.T) {
	const limit = 1 << 20
	tk := workingTask(t, Options{MaxTaskBytes: limit})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 1024 {
		tk.apply(&a2a.TaskArtifactUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID, Append: i > 0,
			Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("x", 64<<10))}}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	tk.mu.Lock()
	state, held, fed := tk.state, tk.held, tk.fed
	tk.mu.Unlock()
	runtime.KeepAlive(tk)
	if state != a2a.TaskStateFailed {
		t.Errorf("the task is %s after 64 MiB of chunks, want FAILED", state)
	}
	if held > limit || fed > limit {
		t.Errorf("the task holds %d bytes, its feed %d, want at most %d", held, fed, limit)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("the heap grew by %d bytes, want under 8 MiB", grew)
	}
}

// TestTaskOverTheBoundWhole: a task that comes over MaxTaskBytes in one
// piece (a polled agent's GetTask, a stream's first event), even completed,
// is failed at reach and kept without its artifacts.
func TestTaskOverTheBoundWhole(t *testing.T) {
	const limit = 1 << 20
	tk := lonelyTask(t, Options{MaxTaskBytes: limit})
	big := &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("x", 2*limit))}}}}
	tk.apply(big)
	v := tk.snapshot()
	if v == nil || v.Status.State != a2a.TaskStateFailed || len(v.Artifacts) != 0 {
		t.Fatalf("the task is %+v, want FAILED with no artifact", v)
	}
	if text := statusText(v); !strings.Contains(text, fmt.Sprintf("over %d bytes", limit)) {
		t.Errorf("the failure says %q, want the bound", text)
	}
	if evs := tk.feed; len(evs) != 1 || !final(evs[0]) {
		t.Errorf("the feed is %d events, want the failed task alone", len(evs))
	}
}

// TestA2ALiveTasksBoundedPerPrincipal: a running task is never forgotten
// (its agent may work on it for hours) and nothing bounded how many one
// principal started: 1,000 held 128 MB. Past MaxLiveTasks a new message is
// answered with a rejected task that says so and what to do, the agent not
// asked; another principal goes on; a continuation is not counted again;
// once one of the principal's tasks ends, it may start another.
func TestA2ALiveTasksBoundedPerPrincipal(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.MaxLiveTasks = 2 }, nil, "worker")
	slow := func(who string) *a2a.Task {
		t.Helper()
		return h.sendMsg("worker", who, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	}
	var bobs []*a2a.Task
	for range 2 {
		bobs = append(bobs, slow("bob"))
		h.working("worker")
	}
	over := slow("bob")
	if over.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(over), "2 tasks running") || !strings.Contains(statusText(over), "CancelTask") {
		t.Fatalf("bob's third task: %s %q, want rejected, saying how many run and what to do", over.Status.State, statusText(over))
	}
	select {
	case id := <-h.agents["worker"].working:
		t.Fatalf("the agent was asked the refused task (%s)", id)
	default:
	}
	if tk := slow("alice"); tk.Status.State == a2a.TaskStateRejected {
		t.Errorf("alice's task after bob's: rejected %q", statusText(tk))
	}
	h.working("worker")
	if _, err := h.client("worker", "bob", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: bobs[0].ID}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob's canceled task over at reach", func() bool { return h.state("worker", "bob", bobs[0].ID) == a2a.TaskStateCanceled })
	if tk := slow("bob"); tk.Status.State == a2a.TaskStateRejected {
		t.Errorf("bob's task after one of his ended: rejected %q", statusText(tk))
	}
}

// TestFinalStatusOverTheBound: an agent's last status update whose
// message takes the task over MaxTaskBytes (alone, or with what the task
// holds already) fails the task at reach as a whole task over the bound
// does (TestTaskOverTheBoundWhole): its state being final let it be kept
// whole, and the caller was handed one event over the bound.
func TestFinalStatusOverTheBound(t *testing.T) {
	const limit = 1 << 20
	for _, c := range []struct {
		name     string
		artifact int // bytes of artifact held before the final status
		message  int // bytes of the final status's message
	}{
		{"message alone", 0, 2 * limit},
		{"message with the artifacts", limit - limit/4, limit / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := workingTask(t, Options{MaxTaskBytes: limit})
			if c.artifact > 0 {
				tk.apply(&a2a.TaskArtifactUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID,
					Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("x", c.artifact))}}})
			}
			msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(strings.Repeat("y", c.message)))
			tk.apply(&a2a.TaskStatusUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID,
				Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: msg}})
			v := tk.snapshot()
			if v == nil || v.Status.State != a2a.TaskStateFailed || len(v.Artifacts) != 0 {
				t.Fatalf("the task is %s with %d artifacts, want FAILED with none", v.Status.State, len(v.Artifacts))
			}
			if text := statusText(v); !strings.Contains(text, fmt.Sprintf("over %d bytes", limit)) {
				t.Errorf("the failure says %.80q, want the bound", text)
			}
			tk.mu.Lock()
			held, fed := tk.held, tk.fed
			tk.mu.Unlock()
			if held > limit || fed > limit {
				t.Errorf("the task holds %d bytes, its feed %d, want at most %d", held, fed, limit)
			}
		})
	}
}

// TestMessageAnswerOverTheBound: an agent that answers with a message
// (no task) over MaxTaskBytes has the send failed at reach, as a task over
// it is (TestTaskOverTheBoundWhole): the message was kept and passed on
// whole, one event over the bound.
func TestMessageAnswerOverTheBound(t *testing.T) {
	const limit = 1 << 20
	tk := lonelyTask(t, Options{MaxTaskBytes: limit})
	tk.history = []*a2a.Message{a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))}
	tk.apply(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(strings.Repeat("x", 2*limit))))
	tk.mu.Lock()
	msg, fed := tk.msg, tk.fed
	tk.mu.Unlock()
	if msg != nil {
		t.Errorf("the message over the bound is kept (%d bytes)", sizeOf(msg))
	}
	if fed > limit {
		t.Errorf("the feed holds %d bytes, want at most %d", fed, limit)
	}
	v := tk.snapshot()
	if v == nil || v.Status.State != a2a.TaskStateFailed {
		t.Fatalf("the send answered %+v, want a FAILED task", v)
	}
	if text := statusText(v); !strings.Contains(text, fmt.Sprintf("over %d bytes", limit)) {
		t.Errorf("the failure says %.80q, want the bound", text)
	}
}

// TestMessageAnswerOverTheBoundSent: through the gateway, a send whose
// agent answers with a message over MaxTaskBytes is answered with reach's
// failed task, which GetTask then reads; the hand-off ends.
func TestMessageAnswerOverTheBoundSent(t *testing.T) {
	const limit = 4 << 10
	h := newHarnessWith(t, func(o *Options) { o.MaxTaskBytes = limit }, nil, "executor")
	res, err := h.client("executor", "alice", false).SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("message "+strings.Repeat("x", 4*limit)))})
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok || tk.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(tk), fmt.Sprintf("over %d bytes", limit)) {
		t.Fatalf("the send answered %T %+v, want reach's FAILED task saying the bound", res, res)
	}
	got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
	if err != nil || got.Status.State != a2a.TaskStateFailed {
		t.Errorf("GetTask: %v, %v", got, err)
	}
	rec := h.g.tasks.get("executor", tk.ID, Owner{"alice", ""})
	if rec == nil || rec.req == nil || rec.req.State() == reach.RequestRunning {
		t.Errorf("the hand-off of a send answered over the bound is still running")
	}
}

// TestA2ALiveSlotLetGo: a task that ended is held by no slot of its
// principal's (the registry lets ended tasks go; a slot kept until that
// principal's next message held it, whatever it held, for good).
func TestA2ALiveSlotLetGo(t *testing.T) {
	h := newHarness(t, nil, "worker")
	if tk := h.send("worker", "bob", "echo hi", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("echo: %s %q", tk.Status.State, statusText(tk))
	}
	eventually(t, "bob's ended task let go by its slot", func() bool {
		h.g.live.mu.Lock()
		defer h.g.live.mu.Unlock()
		return len(h.g.live.m) == 0
	})
}

// BenchmarkLiveTasks: what b.N running tasks of one principal hold, in
// this process (the gateway, and the fake agent and its client beside it):
// heap-bytes/task and goroutines/task, with MaxLiveTasks out of the way.
func BenchmarkLiveTasks(b *testing.B) {
	h := newHarnessWith(b, func(o *Options) { o.MaxLiveTasks = -1 }, nil, "worker")
	go func() {
		for range h.agents["worker"].working {
		}
	}()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before, g0 := ms.HeapInuse, runtime.NumGoroutine()
	for i := 0; b.Loop(); i++ {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(fmt.Sprint("slow ", i)))
		if tk := h.sendMsg("worker", "bob", m, true); tk.Status.State == a2a.TaskStateRejected {
			b.Fatalf("task %d rejected: %s", i, statusText(tk))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse-before)/float64(b.N), "heap-bytes/task")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(b.N), "goroutines/task")
}

// TestTaskMetadataCounts: what an agent puts in metadata (a status
// message's, a part's, an event's own) counts toward MaxTaskBytes as the
// parts' content does: a task fed 64 MiB of it, around empty parts, is
// failed at reach and holds at most about the bound. Before, metadata was
// counted as nothing: a task held all of it, past its bound and past
// MaxTotalBytes.
func TestTaskMetadataCounts(t *testing.T) {
	const limit = 1 << 20
	meta := func() map[string]any { return map[string]any{"pad": strings.Repeat("m", 64<<10)} }
	for _, tc := range []struct {
		name  string
		event func(tk *task, i int) a2a.Event
	}{
		{"a status message's metadata", func(tk *task, i int) a2a.Event {
			m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(fmt.Sprint(i)))
			m.Metadata = meta()
			return &a2a.TaskStatusUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: m}}
		}},
		{"a part's metadata", func(tk *task, i int) a2a.Event {
			p := a2a.NewTextPart("")
			p.Metadata = meta()
			return &a2a.TaskArtifactUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID, Append: i > 0, Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{p}}}
		}},
		{"an event's own metadata", func(tk *task, i int) a2a.Event {
			return &a2a.TaskStatusUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}, Metadata: meta()}
		}},
	} {
		tk := workingTask(t, Options{MaxTaskBytes: limit})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range 1024 {
			tk.apply(tc.event(tk, i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		tk.mu.Lock()
		state, held, fed := tk.state, tk.held, tk.fed
		tk.mu.Unlock()
		runtime.KeepAlive(tk)
		if tc.name != "an event's own metadata" && state != a2a.TaskStateFailed {
			t.Errorf("%s: the task is %s after 64 MiB of it, want FAILED", tc.name, state)
		}
		if held > limit || fed > limit {
			t.Errorf("%s: the task holds %d bytes, its feed %d, want at most %d", tc.name, held, fed, limit)
		}
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
			t.Errorf("%s: the heap grew by %d MiB, want under 8 MiB", tc.name, grew>>20)
		}
	}
}
