package gateway

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/pgtest"
)

// Two reentrant agents handing each other new tasks (planner -> executor
// -> planner ..., each task one step further, none repeated), through
// reach, passing reach's context on: the chain is bounded by the depth
// budget (8, the standard one), the innermost hand-off refused
// budget_depth and every agent above reading it. Before, a hand-off took
// its parent frame's depth and the chain went on to the agents' own cap
// (40 steps).
func TestCore37HandOffChainBoundedByDepth(t *testing.T) {
	handOffChain(t, false)
}

// The same chain across two instances on one PostgreSQL: the executor's
// hand-offs go through instance two, the planner's through instance one,
// so each hand-off is placed under a delegate frame the other instance
// runs. Its stack is read from the shared store (the delegate frame's
// row, written when its sub-request begins), so the chain counts one
// depth as on one instance. Before, a delegate frame kept no stack there:
// a hand-off under one began at the top of the request it joined (depth
// 1 again), and the chain went on to the agents' cap (40 steps).
func TestCore37HandOffChainBoundedByDepthAcrossInstances(t *testing.T) {
	handOffChain(t, true)
}

func handOffChain(t *testing.T, fleet bool) {
	o := castOptions{agent: map[string]string{"planner": "reentrancy: reentrant", "executor": "reentrancy: reentrant"}}
	if fleet {
		o.fleet, o.second = pgtest.Database(t), map[string][]string{"executor": {"PLANNER"}}
	}
	c := startCast(t, o)
	tk := c.send(t, false, "planner", "pingpong:1", "")
	text := textOf(tk)
	if tk.Status.State != a2a.TaskStateCompleted || strings.Contains(text, "gave up") || !strings.Contains(text, "depth budget is 8") {
		t.Fatalf("planner: %s %q, want the chain refused by the depth budget", tk.Status.State, text[max(0, len(text)-600):])
	}
	var steps int
	for _, a := range c.agents {
		steps += len(a.all("delegate"))
	}
	// Hand-offs at depths 1 (the client's) to 8 are let through: 7 made by
	// the agents, then the 8th they make (depth 9) is refused.
	if steps != 8 {
		t.Errorf("the agents made %d hand-offs, want 8 (7 let through, the 8th refused)", steps)
	}
	if n := strings.Count(text, "TASK_STATE_REJECTED"); n != 1 {
		t.Errorf("%d refusals in %q, want 1", n, text)
	}
}

// A cycle of agents across two instances on one PostgreSQL: the planner
// hands "cycle: plan the trip" to the executor through instance one, and
// the executor hands the same task back to the planner through instance
// two, under the delegate frame instance one runs. Instance two reads that
// frame's stack from the shared store and refuses the hand-off as a cycle,
// as one instance does (TestA2AAgentsCycle). Before, it found no stack
// for a delegate frame, the hand-off began at the top of the request it
// joined, and the planner got the task a second time.
func TestAdopt37AgentsCycleAcrossInstances(t *testing.T) {
	c := startCast(t, castOptions{agent: map[string]string{"planner": "reentrancy: reentrant"},
		fleet: pgtest.Database(t), second: map[string][]string{"executor": {"PLANNER"}}})
	tk := c.send(t, false, "planner", "cycle: plan the trip", "")
	text := textOf(tk)
	if tk.Status.State != a2a.TaskStateCompleted || !strings.Contains(text, "TASK_STATE_REJECTED") {
		t.Fatalf("planner: %s %q, want the executor's hand-off back refused", tk.Status.State, text[max(0, len(text)-600):])
	}
	d := c.agents["executor"].all("delegate")
	if len(d) != 1 || d[0]["state"] != "TASK_STATE_REJECTED" || !strings.Contains(d[0]["text"].(string), "This would create a cycle: agent planner") {
		t.Fatalf("the executor's hand-off back: %v", d)
	}
	if n := len(c.agents["planner"].all("task")); n != 1 {
		t.Errorf("the planner got %d tasks, want 1", n)
	}
}
