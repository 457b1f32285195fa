package a2a

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestAgentsLiveTasksCounted: an agent's live tasks in AgentsFor are those
// whose owner the caller counts (GET /v1/agents: the caller's own, its
// tenant's for a tenant's operator); Agents counts every owner's. Before,
// everyone was told every principal's live tasks: when another principal
// works with an agent, and how much.
func TestAgentsLiveTasksCounted(t *testing.T) {
	h := newHarness(t, nil, "worker")
	slow := func(who string) {
		t.Helper()
		if tk := h.sendMsg("worker", who, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true); tk.Status.State == a2a.TaskStateRejected {
			t.Fatalf("%s's task rejected", who)
		}
		h.working("worker")
	}
	slow("bob")
	slow("bob")
	slow("alice")
	if got := h.g.Agents(t.Context())[0].LiveTasks; got != 3 {
		t.Errorf("every owner's live tasks = %d, want 3", got)
	}
	for who, want := range map[string]int{"bob": 2, "alice": 1, "carol": 0} {
		got := h.g.AgentsFor(t.Context(), func(o Owner) bool { return o == Owner{Principal: who} })[0].LiveTasks
		if got != want {
			t.Errorf("%s's live tasks = %d, want %d", who, got, want)
		}
	}
}
