package a2a

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
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
