package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// inputClient is an A2A Go SDK client of role through reach.
func (c *cast) inputClient(t *testing.T, role string) *a2aclient.Client {
	t.Helper()
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(c.reach+"/a2a/"+role, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// A task that waits for input, answered in the same task through reach:
// by the A2A Go SDK's client, and by a JS SDK agent (the planner) that
// answers the executor's question. The answer runs in the same hand-off
// (one sub-request, its frame), and a stop of the root while the task
// waits cancels it, at reach and at the agent, saying who stopped it.
func TestA2AAgentsInputRequired(t *testing.T) {
	c := startCast(t, castOptions{})
	cl := c.inputClient(t, "executor")

	send := func(m *a2a.Message) *a2a.Task {
		t.Helper()
		res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		tk, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("send: got %T", res)
		}
		return tk
	}
	ask := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask colour"))
	ask.Metadata = map[string]any{"reach/request": "ask-1"}
	q := send(ask)
	if q.Status.State != a2a.TaskStateInputRequired || textOf(q) != "which colour?" {
		t.Fatalf("the ask ended %s %q", q.Status.State, textOf(q))
	}
	root, ok := c.g.rt.Lookup("ask-1")
	if !ok || len(root.Children()) != 1 {
		t.Fatalf("ask-1: %v, %d hand-offs", ok, len(root.Children()))
	}
	sub := root.Children()[0]
	if st := sub.State(); st != "running" {
		t.Fatalf("the hand-off of a task waiting for input is %s", st)
	}
	reply := a2a.NewMessageForTask(a2a.MessageRoleUser, q, a2a.NewTextPart("blue"))
	r := send(reply)
	if r.ID != q.ID || r.Status.State != a2a.TaskStateCompleted || textOf(r) != "colour: blue" {
		t.Fatalf("the answer ended %s %s %q", r.ID, r.Status.State, textOf(r))
	}
	if n := len(root.Children()); n != 1 {
		t.Errorf("the answer began another hand-off: %d", n)
	}

	// The JS SDK's client answers in the same task, through reach.
	pl := c.inputClient(t, "planner")
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask through"))
	m.Metadata = map[string]any{"reach/request": "ask-2"}
	res, err := pl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if tk := res.(*a2a.Task); tk.Status.State != a2a.TaskStateCompleted || textOf(tk) != "TASK_STATE_COMPLETED: colour: blue" {
		t.Fatalf("ask through ended %s %q", tk.Status.State, textOf(tk))
	}
	root2, _ := c.g.rt.Lookup("ask-2")
	if n := len(root2.Children()); n != 1 || len(root2.Children()[0].Children()) != 1 {
		t.Fatalf("ask-2: %d hand-offs", n)
	}

	// A stop of the root while the task waits cancels it.
	ask3 := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask colour"))
	ask3.Metadata = map[string]any{"reach/request": "ask-3"}
	q3 := send(ask3)
	if q3.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("ask-3 ended %s", q3.Status.State)
	}
	c.stopRequest(t, "ask-3", "cancel")
	awaitAgents(t, "ask-3's task canceled at reach", func() bool {
		g, err := cl.GetTask(t.Context(), &a2a.GetTaskRequest{ID: q3.ID})
		return err == nil && g.Status.State == a2a.TaskStateCanceled
	})
	g, _ := cl.GetTask(t.Context(), &a2a.GetTaskRequest{ID: q3.ID})
	t.Logf("canceled: %q", textOf(g))
	if txt := textOf(g); !strings.Contains(txt, "the user changed their mind") || !strings.Contains(txt, "report what was done so far") {
		t.Errorf("the canceled task's message does not say why and what to do: %q", txt)
	}
	awaitAgents(t, "the executor to get CancelTask", func() bool {
		for _, e := range c.agents["executor"].all("cancel") {
			if e["task"] == string(q3.ID) {
				return true
			}
		}
		return false
	})
	_, err = cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, q3, a2a.NewTextPart("blue"))})
	t.Logf("answer after the stop: %v", err)
	if err == nil {
		t.Errorf("an answer to a canceled task was taken")
	}
}

// A task waiting for its caller that no message answers is not held for
// ever: after idle_gap its hand-off is stopped, the task canceled at reach
// and at the agent, its message saying it waited and what to do.
func TestA2AAgentsInputWaitBounded(t *testing.T) {
	c := startCast(t, castOptions{extra: "idle_gap: 1s\n"})
	cl := c.inputClient(t, "executor")
	res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask colour"))})
	if err != nil {
		t.Fatal(err)
	}
	q := res.(*a2a.Task)
	if q.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the ask ended %s", q.Status.State)
	}
	var g *a2a.Task
	awaitAgents(t, "the unanswered task to be canceled", func() bool {
		g, err = cl.GetTask(t.Context(), &a2a.GetTaskRequest{ID: q.ID})
		return err == nil && g.Status.State == a2a.TaskStateCanceled
	})
	if txt := textOf(g); !strings.Contains(txt, "waited 1s for input and no message came") || !strings.Contains(txt, "start a new task") {
		t.Errorf("the canceled task's message: %q", txt)
	}
	awaitAgents(t, "the executor to get CancelTask", func() bool {
		for _, e := range c.agents["executor"].all("cancel") {
			if e["task"] == string(q.ID) {
				return true
			}
		}
		return false
	})
	if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, q, a2a.NewTextPart("blue"))}); err == nil {
		t.Errorf("an answer to the expired task was taken")
	}
}

// Only the principal whose task waits for input may answer it: another
// principal's message naming its taskId (and contextId) is answered
// "task not found", and the task still waits for its owner's answer.
func TestA2AAgentsInputOtherPrincipal(t *testing.T) {
	agent := startAgent(t, a2aCache(t), "executor", map[string]string{"REACH": "http://127.0.0.1:1"})
	_, url, _, keys := authGateway(t, fmt.Sprintf("agents:\n  - {name: executor, url: %q}\n", strings.TrimSuffix(agent.url, "/")))
	send := func(who, msg string) map[string]any {
		t.Helper()
		_, out := do(t, "POST", url+"/a2a/executor", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+a2a.NewMessageID()+`","role":"ROLE_USER",`+msg+`}}}`,
			map[string]string{"Authorization": "Bearer " + keys[who], "A2A-Version": "1.0", "Content-Type": "application/json"})
		return out
	}
	out := send("alice", `"parts":[{"text":"ask colour"}]`)
	id, _ := path(out, "result", "task", "id").(string)
	ctxID, _ := path(out, "result", "task", "contextId").(string)
	if path(out, "result", "task", "status", "state") != "TASK_STATE_INPUT_REQUIRED" || id == "" {
		t.Fatalf("alice's ask: %v", out)
	}
	answer := fmt.Sprintf(`"taskId":%q,"contextId":%q,"parts":[{"text":"blue"}]`, id, ctxID)
	if out := send("bob", answer); path(out, "error", "code") != float64(-32001) {
		t.Errorf("bob's answer to alice's task: %v", out)
	}
	if out := send("alice", answer); path(out, "result", "task", "status", "state") != "TASK_STATE_COMPLETED" {
		t.Errorf("alice's answer: %v", out)
	}
}
