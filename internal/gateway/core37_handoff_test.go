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
//
// Not yet across two instances (handOffChain(t, true), the executor's
// hand-offs through instance two): a hand-off placed under a delegate
// frame of the other instance finds no stack for it in the shared store
// (only a tool call's checkpoint keeps its stack), so it begins at the top
// of the joined request, and the chain goes on to the agents' cap.
func TestCore37HandOffChainBoundedByDepth(t *testing.T) {
	handOffChain(t, false)
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
