package a2a

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// TestAgentReusesAnotherCallersTaskID: an agent that answers bob's message
// with the id of alice's live task does not take that task from alice:
// alice still gets her task (working, as the agent left it), and bob's
// task fails at reach under an id of reach's, its message saying why; no
// CancelTask goes to the agent for the id it reused.
func TestAgentReusesAnotherCallersTaskID(t *testing.T) {
	h := newHarness(t, nil, "executor")
	first := h.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("executor")
	second := h.send("executor", "bob", "reuse "+string(first.ID), nil)
	if second.ID == first.ID || second.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(second), "already gave another task") {
		t.Errorf("bob's task: %s %s %q; want a failed task of its own id saying the agent reused another's", second.ID, second.Status.State, statusText(second))
	}
	if st := h.state("executor", "alice", first.ID); st != a2a.TaskStateWorking {
		t.Errorf("alice's task %s is %s after the agent reused its id, want working", first.ID, st)
	}
	for _, id := range h.agents["executor"].canceled() {
		if id == first.ID {
			t.Errorf("reach sent CancelTask for %s, alice's task", id)
		}
	}
}

// TestAgentReusesAStoredTaskID: a task id the store holds (a task another
// instance follows, or one from before a restart), which this gateway's
// own tasks do not, is not taken over either: the new task fails at reach,
// and the stored task keeps its owner.
func TestAgentReusesAStoredTaskID(t *testing.T) {
	st := store.NewMemory()
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	if _, err := st.PutTask(t.Context(), &store.TaskRecord{Agent: "executor", ID: "elsewhere-1", Principal: "alice",
		State: string(a2a.TaskStateWorking), Data: []byte(`{"id":"elsewhere-1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`)}); err != nil {
		t.Fatal(err)
	}
	tk := h.send("executor", "bob", "reuse elsewhere-1", nil)
	if tk.ID == "elsewhere-1" || tk.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(tk), "already gave another task") {
		t.Errorf("bob's task: %s %s %q; want a failed task of its own id saying the agent reused another's", tk.ID, tk.Status.State, statusText(tk))
	}
	rec, err := st.GetTask(t.Context(), "executor", "elsewhere-1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Principal != "alice" || rec.State != string(a2a.TaskStateWorking) {
		t.Errorf("the stored task is %s's, %s; want alice's, working", rec.Principal, rec.State)
	}
}
