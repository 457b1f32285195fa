package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentreach/reach/internal/pgtest"
)

// A cascading cancel across two instances on one PostgreSQL store: the
// planner hands "work" to the executor through instance one, and the
// executor hands it to the verifier through instance two (the verifier's
// tool calls go through two as well), passing reach's context on. The
// root is stopped through one's API (what `reach stop` does), or the
// client cancels the planner's task (CancelTask on one). Every agent gets
// CancelTask, every hand-off on both instances ends, each task is
// canceled at the instance that forwarded it, and each agent's client
// (the JS SDK's) reads its hand-off's end saying why and what to do.
func TestInstancesA2AAgentsCascadingCancel(t *testing.T) {
	for _, how := range []string{"stop", "canceltask"} {
		t.Run(how, func(t *testing.T) { fleetCancel(t, how) })
	}
}

func fleetCancel(t *testing.T, how string) {
	c := startCast(t, castOptions{fleet: pgtest.Database(t), second: map[string][]string{"executor": {"VERIFIER"}, "verifier": {"REACH"}},
		extra: "instance_ttl: 2s\n"})
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(c.reach+"/a2a/planner", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))
	m.Metadata = map[string]any{"reach/request": "fleet-work"}
	res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	top, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("the send: %T", res)
	}
	for _, a := range c.agents {
		awaitAgents(t, a.role+" to work", func() bool { return len(a.all("working")) >= 1 })
	}
	// The verifier's hand-off runs on two, in the tree of one's root.
	var vsub *reachRequest
	awaitAgents(t, "the verifier's hand-off on two", func() bool {
		for _, r := range c.g2.rt.Requests() {
			if r.Agent() == "verifier" && r.State() == "running" {
				vsub = r
			}
		}
		return vsub != nil
	})
	root, _ := c.g.rt.Lookup("fleet-work")
	sub := root.Children()[0]
	if p := vsub.Parent(); p == nil || p.ID() != sub.Children()[0].ID() {
		t.Errorf("the verifier's hand-off on two is under %v, not the executor's hand-off %s", p, sub.Children()[0].ID())
	}
	why := "the user changed their mind"
	switch how {
	case "stop":
		c.stopRequest(t, "fleet-work", "cancel")
	case "canceltask":
		why = "canceled"
		if _, err := cl.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: top.ID}); err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
	}
	for _, a := range c.agents {
		awaitAgents(t, a.role+" to get CancelTask", func() bool { return len(a.all("cancel")) >= 1 })
	}
	// Every hand-off ends, on both instances.
	for _, r := range []*reachRequest{sub, sub.Children()[0], vsub} {
		awaitAgents(t, r.Agent()+"'s hand-off to end", func() bool { return r.State() != "running" })
		if !strings.HasPrefix(string(r.State()), "stopped") {
			t.Errorf("%s's hand-off is %s (%+v)", r.Agent(), r.State(), r.StopCause())
			for _, g := range []*Gateway{c.g, c.g2} {
				g.audit.Flush(t.Context())
				evs, _ := g.audit.Show(t.Context(), r.ID())
				for _, e := range evs {
					t.Logf("audit %s %s %s %s %s: %s", e.Instance, e.Kind, e.Name, e.Decision, e.Reason, e.Message)
				}
			}
		}
	}
	// Each task is canceled at the instance that forwarded it.
	for _, at := range []struct{ base, agent string }{{c.reach, "planner"}, {c.reach, "executor"}, {c.reach2, "verifier"}} {
		awaitAgents(t, at.agent+"'s task canceled at reach", func() bool {
			_, out := do(t, "POST", at.base+"/a2a/"+at.agent, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1}}`,
				map[string]string{"A2A-Version": "1.0", "Content-Type": "application/json"})
			return path(out, "result", "tasks", 0, "status", "state") == "TASK_STATE_CANCELED"
		})
	}
	// What each agent's client read of its hand-off: canceled, saying why
	// and what to do.
	for _, name := range []string{"planner", "executor"} {
		a := c.agents[name]
		awaitAgents(t, name+"'s client to read its hand-off's end", func() bool { return len(a.all("delegate")) >= 1 })
		e := a.all("delegate")[0]
		txt, _ := e["text"].(string)
		t.Logf("%s read its hand-off to %v: %v %q", name, e["to"], e["state"], txt)
		if e["state"] != "TASK_STATE_CANCELED" || !strings.Contains(txt, why) || !strings.Contains(txt, "report what was done so far") {
			t.Errorf("%s's client read its hand-off to %v as %v %q", name, e["to"], e["state"], txt)
		}
	}
}
