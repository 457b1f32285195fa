package a2a

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// An agent whose first answer is a task with no state (or
// TASK_STATE_UNSPECIFIED) made a task all the same: reach takes it as
// TASK_STATE_SUBMITTED (the A2A spec's state of a task created and
// acknowledged, nothing saying it is worked on) and stores it before the
// caller learns its id, as every other task. Without the state it was
// shown and never stored: a restart lost a task the caller held the id of.
func TestTaskWithoutStateStored(t *testing.T) {
	for _, immediate := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "immediate"}[immediate], func(t *testing.T) {
			st := &slowStore{Memory: store.NewMemory(), states: map[string][]string{}}
			h := newHarness(t, nil, "planner")
			h.g.opts.Tasks = st
			m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("nostate"))
			var tk *a2a.Task
			if immediate {
				tk = h.sendMsg("planner", "alice", m, true)
			} else {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				for ev, err := range h.client("planner", "alice", false).SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
					if err != nil {
						t.Fatal(err)
					}
					if e, ok := ev.(*a2a.Task); ok {
						tk = e
						break
					}
				}
			}
			if tk == nil || tk.Status.State != a2a.TaskStateSubmitted {
				t.Fatalf("the task shown: %+v; want it TASK_STATE_SUBMITTED", tk)
			}
			if !st.has(tk.ID, a2a.TaskStateSubmitted) {
				t.Fatalf("task %s was shown before it was stored (stored: %v)", tk.ID, st.list(tk.ID))
			}
			rec, err := st.GetTask(t.Context(), "planner", string(tk.ID))
			if err != nil || rec.Final || rec.Principal != "alice" {
				t.Fatalf("the stored task: %+v (%v)", rec, err)
			}
			var v a2a.Task
			if err := json.Unmarshal(rec.Data, &v); err != nil || v.ID != tk.ID || v.Status.State != a2a.TaskStateSubmitted {
				t.Fatalf("the stored view: %+v (%v)", v, err)
			}
		})
	}
}

// A task reach refuses itself, before any hand-off (here a bound: the
// principal's running tasks), is stored in its final state, with the
// refusal's text, before the caller learns its id: GetTask and ListTasks
// of another gateway on the store (another instance, or this one after a
// restart) find it.
func TestRefusedTaskStored(t *testing.T) {
	st := &slowStore{Memory: store.NewMemory(), states: map[string][]string{}}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st; o.MaxLiveTasks = 1 }, nil, "planner")
	h.sendMsg("planner", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("planner")
	tk := h.sendMsg("planner", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), false)
	if tk.Status.State != a2a.TaskStateRejected || !strings.HasPrefix(string(tk.ID), "reach-") {
		t.Fatalf("the second task: %s %s; want reach's own, rejected", tk.ID, tk.Status.State)
	}
	if !st.has(tk.ID, a2a.TaskStateRejected) {
		t.Fatalf("the refused task %s was shown before it was stored (stored: %v)", tk.ID, st.list(tk.ID))
	}
	// Another gateway on the same store, as after a restart.
	b := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "planner")
	got, err := b.client("planner", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
	if err != nil {
		t.Fatalf("GetTask of the refused task on another gateway: %v", err)
	}
	if got.Status.State != a2a.TaskStateRejected || statusText(got) != statusText(tk) || !strings.Contains(statusText(got), "tasks running at reach") {
		t.Fatalf("the refused task on another gateway: %s %q; want %s %q", got.Status.State, statusText(got), tk.Status.State, statusText(tk))
	}
	list, err := b.client("planner", "alice", false).ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range list.Tasks {
		found = found || x.ID == tk.ID
	}
	if !found {
		t.Fatalf("ListTasks on another gateway: %d tasks, without the refused %s", len(list.Tasks), tk.ID)
	}
	if _, err := b.client("planner", "bob", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID}); err == nil {
		t.Fatal("bob got alice's refused task")
	}
}
