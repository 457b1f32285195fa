package gateway

import (
	"strings"
	"testing"
)

// TestA2AAgentsShutdown35: reach shuts down while three @a2a-js/sdk agents
// work on one request through it. Each agent's A2A client reads its
// hand-off canceled, worded as the MCP cut_by_shutdown is: the gateway
// shut down, no one stopped the work, a write may have taken effect, and
// to send it again once the gateway is back. Before, it read that the
// request was stopped by "gateway", that the work was stopped and to
// report it rather than hand it over again, as for a user's stop.
func TestA2AAgentsShutdown35(t *testing.T) {
	c := startCast(t, castOptions{})
	c.startWork(t, "shutdown-35", 1)
	c.g.Close()
	for _, name := range []string{"planner", "executor"} {
		a := c.agents[name]
		awaitAgents(t, name+"'s client to read its hand-off's end", func() bool { return len(a.all("delegate")) >= 1 })
		e := a.all("delegate")[0]
		txt, _ := e["text"].(string)
		t.Logf("%s's client read its hand-off to %v as %v: %s", name, e["to"], e["state"], txt)
		if e["state"] != "TASK_STATE_CANCELED" || !strings.Contains(txt, "shutting down") ||
			!strings.Contains(txt, "once the gateway is back") || !strings.Contains(txt, "may have taken effect") ||
			strings.Contains(txt, "rather than handing it over again") || strings.Contains(txt, "by gateway") {
			t.Errorf("%s's client read its hand-off to %v as %v %q; want canceled by the gateway's shutdown, to send again once it is back",
				name, e["to"], e["state"], txt)
		}
	}
}
