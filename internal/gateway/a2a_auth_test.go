package gateway

import (
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A JS SDK agent that asks for authorization (TASK_STATE_AUTH_REQUIRED)
// is treated as one that asks for input: the state reaches the client
// (the A2A Go SDK's, and the JS SDK's in A2A 1.0 and 0.3), the audit
// records it, the hand-off waits, holding its request, and the client's
// answer in the same task resumes it, in the same hand-off.
func TestA2AAgentsAuthRequired(t *testing.T) {
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
	ask := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask auth"))
	ask.Metadata = map[string]any{"reach/request": "auth-1"}
	q := send(ask)
	if q.Status.State != a2a.TaskStateAuthRequired || !strings.Contains(textOf(q), "sign in") {
		t.Fatalf("the ask ended %s %q", q.Status.State, textOf(q))
	}
	root, ok := c.g.rt.Lookup("auth-1")
	if !ok || len(root.Children()) != 1 {
		t.Fatalf("auth-1: %v, %d hand-offs", ok, len(root.Children()))
	}
	if st := root.Children()[0].State(); st != "running" {
		t.Fatalf("the hand-off of a task waiting for authorization is %s", st)
	}
	if g, err := cl.GetTask(t.Context(), &a2a.GetTaskRequest{ID: q.ID}); err != nil || g.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("GetTask of the waiting task: %v %v", g, err)
	}
	// An answer the agent does not take leaves it waiting (the agent asks
	// again); "signed in" completes it, in the same task and hand-off.
	if r := send(a2a.NewMessageForTask(a2a.MessageRoleUser, q, a2a.NewTextPart("not yet"))); r.ID != q.ID || r.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("the first answer ended %s %s %q", r.ID, r.Status.State, textOf(r))
	}
	r := send(a2a.NewMessageForTask(a2a.MessageRoleUser, q, a2a.NewTextPart("signed in")))
	if r.ID != q.ID || r.Status.State != a2a.TaskStateCompleted || textOf(r) != "authorized: the report is ready" {
		t.Fatalf("the answer ended %s %s %q", r.ID, r.Status.State, textOf(r))
	}
	if n := len(root.Children()); n != 1 {
		t.Errorf("the answers began other hand-offs: %d", n)
	}
	// The audit records the wait, then the end. A task's events reach the
	// audit off the call path, after the answer may have reached the
	// client: wait for the end.
	var states []string
	awaitAgents(t, "the task's end in the audit", func() bool {
		states = states[:0]
		for _, e := range c.taskEvents(t, "auth-1", string(q.ID)) {
			states = append(states, e.Decision)
		}
		return len(states) > 0 && states[len(states)-1] == "completed"
	})
	if !slices.Contains(states, "auth_required") {
		t.Errorf("the task's states in the audit: %v", states)
	}

	// The JS SDK's client answers in the same task, through reach, in
	// A2A 1.0 and 0.3.
	for _, text := range []string{"auth through", "auth through 0.3"} {
		pl := c.inputClient(t, "planner")
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		res, err := pl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
		if err != nil {
			t.Fatal(err)
		}
		if tk := res.(*a2a.Task); tk.Status.State != a2a.TaskStateCompleted || textOf(tk) != "TASK_STATE_COMPLETED: authorized: the report is ready" {
			t.Errorf("%s ended %s %q", text, tk.Status.State, textOf(tk))
		}
	}
	var asked []string
	for _, e := range c.agents["planner"].all("delegate") {
		asked = append(asked, e["state"].(string))
	}
	if want := "TASK_STATE_AUTH_REQUIRED TASK_STATE_COMPLETED TASK_STATE_AUTH_REQUIRED TASK_STATE_COMPLETED"; strings.Join(asked, " ") != want {
		t.Errorf("the planner's client read %v; want %s", asked, want)
	}
}

// A task waiting for authorization that no message answers is canceled
// after idle_gap, at reach and at the agent, its message saying it waited
// for authorization and what to do.
func TestA2AAgentsAuthWaitBounded(t *testing.T) {
	c := startCast(t, castOptions{extra: "idle_gap: 1s\n"})
	cl := c.inputClient(t, "executor")
	res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask auth"))})
	if err != nil {
		t.Fatal(err)
	}
	q := res.(*a2a.Task)
	if q.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("the ask ended %s", q.Status.State)
	}
	var g *a2a.Task
	awaitAgents(t, "the unanswered task to be canceled", func() bool {
		g, err = cl.GetTask(t.Context(), &a2a.GetTaskRequest{ID: q.ID})
		return err == nil && g.Status.State == a2a.TaskStateCanceled
	})
	if txt := textOf(g); !strings.Contains(txt, "waited 1s for authorization and no message came") || !strings.Contains(txt, "start a new task") {
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
	if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, q, a2a.NewTextPart("signed in"))}); err == nil {
		t.Errorf("an answer to the expired task was taken")
	}
}
