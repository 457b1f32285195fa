package a2a

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach"
)

// chainOf starts planner -> executor -> verifier, each working (slow, or
// as words says), each hand-off made from the one before through reach's
// metadata, and returns their tasks.
func chainOf(t *testing.T, h *harness, words ...string) []*task {
	t.Helper()
	var out []*task
	meta := map[string]any{}
	for i, name := range []string{"planner", "executor", "verifier"} {
		if h.agents[name] == nil {
			break
		}
		w := "slow"
		if i < len(words) {
			w = words[i]
		}
		tk := h.sendMsg(name, "alice", &a2a.Message{ID: name, Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart(w)}, Metadata: meta}, true)
		h.working(name)
		rec := h.g.tasks.get(name, tk.ID, Owner{"alice", ""})
		out = append(out, rec)
		meta = map[string]any{MetaRequest: rec.req.ID()}
	}
	return out
}

// A CancelTask for the planner's task cascades: every agent below it gets
// CancelTask, every task is canceled at reach, and the subtree refuses
// further hand-offs.
func TestCancelTaskCascades(t *testing.T) {
	h := newHarness(t, nil, "planner", "executor", "verifier")
	ts := chainOf(t, h)
	tk, err := h.client("planner", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: ts[0].id})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status.State != a2a.TaskStateCanceled || !strings.Contains(statusText(tk), "CancelTask from alice") {
		t.Fatalf("CancelTask answered %s %q", tk.Status.State, statusText(tk))
	}
	for _, rec := range ts {
		name := rec.a.cfg.Name
		eventually(t, name+" to see CancelTask", func() bool { return slices.Contains(h.agents[name].canceled(), rec.id) })
		// Canceled at reach once the agent answered the cancel.
		eventually(t, name+"'s task to be canceled at reach", func() bool { return h.state(name, "alice", rec.id) == a2a.TaskStateCanceled })
		if rec.req.State() != reach.RequestStoppedCancel || rec.frame.State() != reach.Cancelled {
			t.Errorf("%s hand-off %s, frame %s", name, rec.req.State(), rec.frame.State())
		}
		eventually(t, name+"'s cancel in the audit", func() bool { return slices.Contains(h.audit.kinds(rec.id), "cancel:TASK_STATE_CANCELED") })
	}
	// The verifier's hand-off is stopped: what it would delegate is refused.
	r := h.send("executor", "alice", "echo more", map[string]any{MetaRequest: ts[2].req.ID()})
	if r.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(r), "stopped (cancel)") {
		t.Errorf("hand-off from a canceled subtree: %s %q", r.Status.State, statusText(r))
	}
	// A second CancelTask answers canceled; the executor got one CancelTask.
	if tk, err := h.client("planner", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: ts[0].id}); err != nil || tk.Status.State != a2a.TaskStateCanceled {
		t.Errorf("second cancel: %v %v", tk, err)
	}
	if n := len(h.agents["executor"].canceled()); n != 1 {
		t.Errorf("the executor got %d CancelTasks", n)
	}
}

// Stopping a request anywhere above the hand-offs (API, CLI, UI, a budget,
// a guard) cancels their tasks at every agent.
func TestStopRequestCascades(t *testing.T) {
	for _, mode := range []reach.StopMode{reach.Cancel, reach.Isolate} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newHarness(t, nil, "planner", "executor", "verifier")
			ts := chainOf(t, h)
			root := ts[0].req.Root()
			root.Stop(mode, "operator", "enough")
			for _, rec := range ts {
				name := rec.a.cfg.Name
				eventually(t, name+" to see CancelTask", func() bool { return slices.Contains(h.agents[name].canceled(), rec.id) })
				// Canceled at reach once the agent answered the cancel.
				eventually(t, name+"'s task to be canceled at reach", func() bool { return h.state(name, "alice", rec.id) == a2a.TaskStateCanceled })
				if v := rec.snapshot(); !strings.Contains(statusText(v), "stopped ("+mode.String()+") by operator: enough") {
					t.Errorf("%s status %q", name, statusText(v))
				}
			}
		})
	}
}

// A soft stop starts nothing new and lets the tasks in flight finish.
func TestSoftStopLetsTasksFinish(t *testing.T) {
	h := newHarness(t, nil, "planner", "executor", "verifier")
	ts := chainOf(t, h, "slow", "slow", "ignore")
	ts[0].req.Root().Stop(reach.Soft, "operator", "wind down")
	close(h.agents["verifier"].release)
	eventually(t, "the verifier to finish", func() bool { return ts[2].done() })
	if st := h.state("verifier", "alice", ts[2].id); st != a2a.TaskStateCompleted {
		t.Errorf("verifier: %s", st)
	}
	if n := len(h.agents["executor"].canceled()); n != 0 {
		t.Errorf("a soft stop sent %d CancelTasks", n)
	}
}

// An agent that does not answer CancelTask has its subtree isolated at
// reach, and the audit says so.
func TestUnansweredCancelIsolates(t *testing.T) {
	h := newHarness(t, nil, "planner", "executor", "verifier")
	ts := chainOf(t, h, "slow", "ignore", "slow")
	if _, err := h.client("planner", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: ts[0].id}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the executor's hand-off to be isolated", func() bool { return ts[1].req.State() == "stopped_isolate" })
	eventually(t, "the isolation in the audit", func() bool { return len(h.audit.find("isolate")) > 0 })
	ev := h.audit.find("isolate")
	if len(ev) != 1 || ev[0].Agent != "executor" || !strings.Contains(ev[0].Message, "did not confirm the cancel") {
		t.Fatalf("isolate events = %+v", ev)
	}
	// Below it, the verifier's hand-off is isolated too.
	if st := ts[2].req.State(); st != "stopped_isolate" {
		t.Errorf("verifier's hand-off %s", st)
	}
	if st := h.state("executor", "alice", ts[1].id); st != a2a.TaskStateCanceled {
		t.Errorf("executor: %s", st)
	}
}

// Terminal states are monotonic at reach: an agent that completes after
// reach canceled its task stays canceled for every reader, and the late
// state is recorded.
func TestLateCompletionStaysCanceled(t *testing.T) {
	h := newHarness(t, nil, "executor")
	tk := h.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("late")), true)
	id := h.working("executor")
	if id != tk.ID {
		t.Fatalf("ids %s %s", id, tk.ID)
	}
	if _, err := h.client("executor", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late state in the audit", func() bool { return slices.Contains(h.audit.kinds(tk.ID), "late:TASK_STATE_CANCELED") })
	up, _ := h.agents["executor"].GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
	if up.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the agent's own state %s, want completed (late)", up.Status.State)
	}
	if st := h.state("executor", "alice", tk.ID); st != a2a.TaskStateCanceled {
		t.Errorf("GetTask: %s", st)
	}
	res, _ := h.client("executor", "alice", false).ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if len(res.Tasks) != 1 || res.Tasks[0].Status.State != a2a.TaskStateCanceled {
		t.Errorf("ListTasks: %v", res.Tasks)
	}
	ev := h.audit.find("late")
	if len(ev) != 1 || !strings.Contains(ev[0].Message, "TASK_STATE_COMPLETED after reach had settled the task as TASK_STATE_CANCELED") {
		t.Errorf("late events %+v", ev)
	}
}

// A streaming caller sees the cancel as the stream's last event.
func TestStreamEndsCanceled(t *testing.T) {
	h := newHarness(t, nil, "executor")
	req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow"))}
	var last a2a.TaskState
	var id a2a.TaskID
	for ev, err := range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			id, last = e.ID, e.Status.State
		case *a2a.TaskStatusUpdateEvent:
			last = e.Status.State
			if last == a2a.TaskStateWorking {
				go h.client("executor", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
			}
		}
	}
	if last != a2a.TaskStateCanceled {
		t.Errorf("the stream ended with %s", last)
	}
}

// A hand-off whose caller's hand-off ends while it still runs is canceled:
// an orphan does not go on spending.
func TestOrphanIsCanceled(t *testing.T) {
	h := newHarness(t, nil, "planner", "executor")
	ts := chainOf(t, h, "ignore", "slow")[:2]
	close(h.agents["planner"].release) // the planner finishes, leaving its executor running
	eventually(t, "the executor to see CancelTask", func() bool { return slices.Contains(h.agents["executor"].canceled(), ts[1].id) })
	// Canceled at reach once the agent answered the cancel.
	eventually(t, "the executor's task to be canceled at reach", func() bool { return h.state("executor", "alice", ts[1].id) == a2a.TaskStateCanceled })
	if st := h.state("planner", "alice", ts[0].id); st != a2a.TaskStateCompleted {
		t.Errorf("planner: %s", st)
	}
	if v := ts[1].snapshot(); !strings.Contains(statusText(v), "request ended") {
		t.Errorf("the executor's status %q", statusText(v))
	}
}

// holdStop is a store that holds the root's own stop where a store makes
// it durable (RequestStopped): after the stop has canceled the contexts
// below the root, before it marks the requests below stopped. It keeps the
// state each request had when its end was told (what a store records), and
// the order of the stops and ends it was told.
type holdStop struct {
	release chan struct{}
	mu      sync.Mutex
	ended   map[string]reach.RequestState
	told    []string // "stop <id>", "end <id>", as told
}

func (h *holdStop) RequestBegan(context.Context, *reach.Request) error { return nil }

func (h *holdStop) RequestStopped(_ context.Context, r *reach.Request, c reach.Cause) {
	if r.Parent() == nil && c.Request == r.ID() {
		<-h.release
	}
	h.mu.Lock()
	h.told = append(h.told, "stop "+r.ID())
	h.mu.Unlock()
}

func (h *holdStop) RequestEnded(_ context.Context, r *reach.Request) {
	h.mu.Lock()
	h.ended[r.ID()] = r.State()
	h.told = append(h.told, "end "+r.ID())
	h.mu.Unlock()
}

func (h *holdStop) endedAs(id string) (reach.RequestState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.ended[id]
	return st, ok
}

func (h *holdStop) records() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.told)
}

// A stop of the root cancels the hand-offs' contexts before it marks them
// stopped, and in between a store write (here held until every hand-off has
// ended; on an instance that joined the request, the stop read from the
// store): each task the cancel ends marks its hand-off stopped, with the
// root's cause, before it ends it, so that no hand-off ends completed. Its
// end's record waits on the root's stop stored (which the store holds), and
// is stopped too.
func TestStopAboveMarksTheHandOffBeforeItEnds(t *testing.T) {
	hold := &holdStop{release: make(chan struct{}), ended: map[string]reach.RequestState{}}
	h := newHarnessWith(t, func(o *Options) {
		rt := reach.New(&reach.Options{Requests: hold})
		o.Runtime, o.Link = rt, testLinker{rt}
	}, nil, "planner", "executor", "verifier")
	ts := chainOf(t, h)
	root := ts[0].req.Root()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		root.Stop(reach.Cancel, "operator", "enough")
	}()
	for _, rec := range ts {
		eventually(t, rec.a.cfg.Name+"'s hand-off to end while the stop is held", func() bool { return rec.frame.State().Done() })
	}
	for _, rec := range ts {
		if st, fs := rec.req.State(), rec.frame.State(); !st.Stopped() || fs != reach.Cancelled {
			t.Errorf("%s's hand-off ended %s (its delegate frame %s) under a stop of its root", rec.a.cfg.Name, st, fs)
		}
	}
	close(hold.release)
	<-stopped
	for _, rec := range ts {
		name := rec.a.cfg.Name
		if c := rec.req.StopCause(); rec.req.State() != reach.RequestStoppedCancel || c == nil || c.Request != root.ID() || c.Reason != "enough" {
			t.Errorf("%s's hand-off after the stop: %s %+v", name, rec.req.State(), c)
		}
		eventually(t, name+" to see CancelTask", func() bool { return slices.Contains(h.agents[name].canceled(), rec.id) })
		// The task ends, and its hand-off's end is recorded, once the
		// agent answered the cancel (what it sent before is kept).
		eventually(t, name+"'s task to end", rec.done)
		eventually(t, name+"'s hand-off's end to be recorded", func() bool { _, ok := hold.endedAs(rec.req.ID()); return ok })
		if st, _ := hold.endedAs(rec.req.ID()); !st.Stopped() {
			t.Errorf("%s's hand-off's end recorded %q under a stop of its root; want it stopped", name, st)
		}
		if v := rec.snapshot(); v.Status.State != a2a.TaskStateCanceled || !strings.Contains(statusText(v), "stopped (cancel) by operator: enough") {
			t.Errorf("%s's task: %s %q", name, v.Status.State, statusText(v))
		}
	}
}

// A stop of the root is stored before the stops and ends of the hand-offs
// below it, however soon their tasks mark them stopped: while the store
// holds the root's stop, every task below is canceled at reach (its
// hand-off marked stopped first) and nothing of the hand-offs is recorded;
// once the root's stop is stored, each hand-off's stop is, shallowest
// first, each before its end. A kill in between leaves the root stopped
// (and what is below it stopped by the restart), never the root running,
// then interrupted, under a hand-off stored stopped by its stop.
func TestStopAboveIsStoredBeforeTheHandOffs(t *testing.T) {
	hold := &holdStop{release: make(chan struct{}), ended: map[string]reach.RequestState{}}
	h := newHarnessWith(t, func(o *Options) {
		rt := reach.New(&reach.Options{Requests: hold})
		o.Runtime, o.Link = rt, testLinker{rt}
	}, nil, "planner", "executor", "verifier")
	ts := chainOf(t, h)
	root := ts[0].req.Root()
	// What is recorded of the hand-offs, and the root's stop (the root
	// ends as its stop's cancellation reaches it: its own records' order
	// is not this test's).
	recorded := func() []string {
		var out []string
		for _, s := range hold.records() {
			if s == "stop "+root.ID() || slices.ContainsFunc(ts, func(rec *task) bool { return strings.HasSuffix(s, " "+rec.req.ID()) }) {
				out = append(out, s)
			}
		}
		return out
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		root.Stop(reach.Cancel, "operator", "enough")
	}()
	for _, rec := range ts {
		// The task marks its hand-off stopped, and would have recorded
		// its stop, before it settles the task canceled at reach.
		eventually(t, rec.a.cfg.Name+"'s task to be canceled at reach while the stop is held", func() bool {
			return rec.req.State().Stopped() && rec.snapshot().Status.State == a2a.TaskStateCanceled
		})
	}
	if got := recorded(); len(got) != 0 {
		t.Errorf("recorded before the root's stop was: %v; want nothing", got)
	}
	close(hold.release)
	<-stopped
	for _, rec := range ts {
		eventually(t, rec.a.cfg.Name+"'s hand-off's end to be recorded", func() bool { _, ok := hold.endedAs(rec.req.ID()); return ok })
	}
	got := recorded()
	at := func(s string) int { return slices.Index(got, s) }
	if len(got) == 0 || got[0] != "stop "+root.ID() {
		t.Fatalf("records %v; want the root's stop first", got)
	}
	for i, rec := range ts {
		id := rec.req.ID()
		stop, end := at("stop "+id), at("end "+id)
		if stop < 0 || end < stop {
			t.Errorf("%s's hand-off: its stop recorded at %d, its end at %d (%v); want its stop, then its end", rec.a.cfg.Name, stop, end, got)
		}
		if i > 0 && stop < at("stop "+ts[i-1].req.ID()) {
			t.Errorf("%s's hand-off's stop recorded before its caller's (%v)", rec.a.cfg.Name, got)
		}
	}
}
