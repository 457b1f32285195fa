package a2a

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestGetTaskKeepsToMaxTaskBytes: GetTask of a running task whose view at
// the agent is over MaxTaskBytes is refused, its text saying the bound and
// what to do (reach reads at most twice the bound of the agent's answer,
// not 64 MiB); one under the bound is relayed; and the task runs on.
func TestGetTaskKeepsToMaxTaskBytes(t *testing.T) {
	const limit = 64 << 10
	h := newHarnessWith(t, func(o *Options) { o.MaxTaskBytes = limit }, nil, "worker")
	h.sendMsg("worker", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	id := h.working("worker")
	f := h.agents["worker"]
	view := func(n int) {
		f.mu.Lock()
		f.tasks[id].Artifacts = []*a2a.Artifact{{ID: "big", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("z", n))}}}
		f.mu.Unlock()
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"read past twice the bound", 4 * limit}, {"read under twice the bound, content over it", limit + limit/2}} {
		view(c.n)
		tk, err := h.client("worker", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err == nil {
			t.Errorf("%s: GetTask relayed the agent's task (%d bytes of artifact), want a refusal", c.name, len(textOf(tk.Artifacts[0].Parts)))
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("over %d bytes", limit)) || !strings.Contains(msg, "historyLength") || !strings.Contains(msg, "SubscribeToTask") {
			t.Errorf("%s: GetTask says %q, want the bound and what to do", c.name, msg)
		}
	}
	view(limit / 2)
	tk, err := h.client("worker", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("GetTask of a view under the bound: %v", err)
	}
	if len(tk.Artifacts) != 1 || len(textOf(tk.Artifacts[0].Parts)) != limit/2 {
		t.Errorf("GetTask under the bound: %d artifacts, want the agent's one", len(tk.Artifacts))
	}
	if tk.Status.State != a2a.TaskStateWorking {
		t.Errorf("the task is %s after the refusals, want it working", tk.Status.State)
	}
}
