package a2a

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// A message naming (taskId) a task that another instance runs, which the
// shared store keeps as the caller's, is not answered "no task of yours
// here; send without taskId to start one" (advice that has the agent
// start over and lose its conversation): the answer says the task runs on
// another instance and what to do, with a code of its own. A task the
// store keeps as ended says it takes no more messages; a task that is
// another principal's, or unknown, is answered as before.
func TestMend38MessageToATaskOfAnotherInstance(t *testing.T) {
	st := store.NewMemory()
	for _, rec := range []*store.TaskRecord{
		{Agent: "planner", ID: "t-there", Principal: "alice", Request: "r-there", State: "working",
			Data: []byte(`{"id":"t-there","contextId":"c1","kind":"task","status":{"state":"working"}}`)},
		{Agent: "planner", ID: "t-over", Principal: "alice", Request: "r-over", State: "completed", Final: true,
			Data: []byte(`{"id":"t-over","contextId":"c2","kind":"task","status":{"state":"completed"}}`)},
	} {
		if _, err := st.PutTask(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "planner")
	send := func(who, task string) *a2a.Error {
		t.Helper()
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go on"))
		m.TaskID = a2a.TaskID(task)
		_, err := h.client("planner", who, false).SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
		var ae *a2a.Error
		if !errors.As(err, &ae) {
			t.Fatalf("%s's message to %s: %v, want a protocol error", who, task, err)
		}
		return ae
	}

	ae := send("alice", "t-there")
	if errors.Is(ae.Err, a2a.ErrTaskNotFound) || strings.Contains(ae.Message, "send without taskId") ||
		!strings.Contains(ae.Message, "another instance") || !strings.Contains(ae.Message, "t-there") {
		t.Errorf("a task another instance runs: %v %q", ae.Err, ae.Message)
	}
	if ae.Details["code"] != "task_on_another_instance" {
		t.Errorf("a task another instance runs: details %v, want code task_on_another_instance", ae.Details)
	}

	ae = send("alice", "t-over")
	if !errors.Is(ae.Err, a2a.ErrUnsupportedOperation) || !strings.Contains(ae.Message, "completed") || strings.Contains(ae.Message, "another instance") {
		t.Errorf("a task the store keeps ended: %v %q", ae.Err, ae.Message)
	}

	for _, task := range []string{"t-unknown", "t-there"} {
		who := "alice"
		if task == "t-there" {
			who = "bob" // not his: nothing said of it
		}
		ae = send(who, task)
		if !errors.Is(ae.Err, a2a.ErrTaskNotFound) || !strings.Contains(ae.Message, "send without taskId to start one") || ae.Details["code"] != nil {
			t.Errorf("%s's message to %s: %v %q %v, want today's not found", who, task, ae.Err, ae.Message, ae.Details)
		}
	}
}

// The same on PostgreSQL, with the task running on one gateway and the
// message sent to another on the store: the second says where the task
// is, and the first, sent the same message, passes it on to the agent.
func TestMend38MessageToATaskOfAnotherInstanceOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	pg := pgtest.Own(t)
	url, err := pg.CreateDatabase(t.Context(), "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(t.Context(), url, &postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	b := peerGateway(t, a, st)
	tk := a.send("executor", "alice", "input", nil)
	if tk.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task: %s, want input required", tk.Status.State)
	}
	answer := func(h *harness, who string) (*a2a.Task, error) {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("blue"))
		m.TaskID = tk.ID
		res, err := h.client("executor", who, false).SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
		if err != nil {
			return nil, err
		}
		v, _ := res.(*a2a.Task)
		return v, nil
	}
	_, err = answer(b, "alice")
	var ae *a2a.Error
	if !errors.As(err, &ae) || ae.Details["code"] != CodeTaskElsewhere || !strings.Contains(ae.Message, "another instance") {
		t.Fatalf("alice's answer through the other instance: %v, want %s", err, CodeTaskElsewhere)
	}
	if _, err := answer(b, "bob"); !errors.As(err, &ae) || !errors.Is(ae.Err, a2a.ErrTaskNotFound) || ae.Details["code"] != nil {
		t.Errorf("bob's message to alice's task through the other instance: %v, want not found", err)
	}
	if v, err := answer(a, "alice"); err != nil || v == nil || v.ID != tk.ID {
		t.Fatalf("alice's answer through the instance that runs the task: %v, %v", v, err)
	}
}
