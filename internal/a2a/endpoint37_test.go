package a2a

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// One agent configured under two names (one URL) is one agent to the
// graph check: a hand-off back to it under its second name is a re-entry,
// refused as its contract says, and never reaches it.
func TestSecondNameOfAnAgentIsReentry(t *testing.T) {
	var plannerURL string
	h := newHarness(t, func(a *Agent) {
		switch a.Name {
		case "planner":
			plannerURL = a.URL
		case "planner2":
			a.URL = plannerURL + "/" // spelled apart: a trailing slash
		}
	}, "planner", "executor", "planner2")
	planner := h.sendMsg("planner", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("planner")
	sub := h.g.tasks.get("planner", planner.ID, Owner{"alice", ""}).req
	exec := h.sendMsg("executor", "alice", &a2a.Message{ID: "m1", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart("slow")},
		Metadata: map[string]any{MetaRequest: sub.ID()}}, true)
	h.working("executor")
	esub := h.g.tasks.get("executor", exec.ID, Owner{"alice", ""}).req
	tk := h.send("planner2", "alice", "echo plan again", map[string]any{MetaRequest: esub.ID()})
	if tk.Status.State != a2a.TaskStateRejected {
		t.Fatalf("a hand-off to the planner under its second name: %s %q, want it refused as a re-entry", tk.Status.State, statusText(tk))
	}
	if text := statusText(tk); !strings.Contains(text, "not reentrant") {
		t.Errorf("refusal %q does not say the agent is not reentrant", text)
	}
	if n := len(h.agents["planner"].seen()); n != 1 {
		t.Errorf("the planner got %d messages, want 1 (the refused one never reached it)", n)
	}
}
