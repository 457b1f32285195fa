package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestA2AAgentsContextPerPrincipal: with the A2A JS SDK's agent, two
// principals naming the same contextId each get a context of their own at
// the agent (which sees every caller as reach), and each sees the id it
// named on its task; alice answers her task in her context. Reach passed
// contextId on as sent: bob's new message "session-1" went into alice's
// context at the agent.
func TestA2AAgentsContextPerPrincipal(t *testing.T) {
	agent := startAgent(t, a2aCache(t), "executor", map[string]string{"REACH": "http://127.0.0.1:1"})
	_, url, _, keys := authGateway(t, fmt.Sprintf("agents:\n  - {name: executor, url: %q}\n", strings.TrimSuffix(agent.url, "/")))
	send := func(who, msg string) map[string]any {
		t.Helper()
		_, out := do(t, "POST", url+"/a2a/executor", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+a2a.NewMessageID()+`","role":"ROLE_USER",`+msg+`}}}`,
			map[string]string{"Authorization": "Bearer " + keys[who], "A2A-Version": "1.0", "Content-Type": "application/json"})
		return out
	}
	ids := map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		out := send(who, `"contextId":"session-1","parts":[{"text":"ask colour"}]`)
		if path(out, "result", "task", "status", "state") != "TASK_STATE_INPUT_REQUIRED" || path(out, "result", "task", "contextId") != "session-1" {
			t.Fatalf("%s's ask in session-1: %v", who, out)
		}
		ids[who], _ = path(out, "result", "task", "id").(string)
	}
	at := map[string]string{} // the context each task is in at the agent
	for _, e := range agent.all("task") {
		id, _ := e["task"].(string)
		at[id], _ = e["context"].(string)
	}
	alice, bob := at[ids["alice"]], at[ids["bob"]]
	if alice == "" || alice == "session-1" || alice == bob {
		t.Errorf("at the agent: alice's task in %q, bob's in %q, want each in a context of its own", alice, bob)
	}
	answer := fmt.Sprintf(`"taskId":%q,"contextId":"session-1","parts":[{"text":"blue"}]`, ids["alice"])
	if out := send("alice", answer); path(out, "result", "task", "status", "state") != "TASK_STATE_COMPLETED" ||
		path(out, "result", "task", "contextId") != "session-1" {
		t.Errorf("alice's answer: %v", out)
	}
	// Her next message in session-1 is in her context at the agent again.
	out := send("alice", `"contextId":"session-1","parts":[{"text":"ask colour"}]`)
	id, _ := path(out, "result", "task", "id").(string)
	for _, e := range agent.all("task") {
		if e["task"] == id && e["context"] != alice {
			t.Errorf("alice's next task in session-1 is in %v at the agent, want %q", e["context"], alice)
		}
	}
}
