package a2a

import (
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestInputWaitBounded: a task waiting for its caller that no message
// answers within Options.InputWait is canceled at reach and at the agent,
// its message saying it waited and to start a new task; the bound holds
// again after each answer, also for an agent that asks again at once (no
// working in between), where the wait of the first question had already
// been answered and nothing bounded the second.
func TestInputWaitBounded(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.InputWait = 300 * time.Millisecond }, nil, "executor")
	tk := h.send("executor", "alice", "reask the fence", nil)
	if tk.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("ask: %s", tk.Status.State)
	}
	if got := h.continueTask("executor", "alice", tk, "blue"); got.Status.State != a2a.TaskStateInputRequired || statusText(got) != "which shade?" {
		t.Fatalf("answer: %s %q", got.Status.State, statusText(got))
	}
	eventually(t, "the second wait to end", func() bool { return h.state("executor", "alice", tk.ID) == a2a.TaskStateCanceled })
	got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	if txt := statusText(got); !strings.Contains(txt, "waited 300ms for input and no message came") || !strings.Contains(txt, "start a new task") {
		t.Errorf("the canceled task's message: %q", txt)
	}
	eventually(t, "the agent to be told", func() bool {
		for _, id := range h.agents["executor"].canceled() {
			if id == tk.ID {
				return true
			}
		}
		return false
	})
}

// TestInputWaitCountsFromTheLastAsk: an agent that, answered, shows the
// task as it stood (still waiting), works longer than the wait, then asks
// again, is given the whole wait from its new question: its next answer
// is taken, and an unanswered question still ends the task.
//
// The answer must reach reach within the wait of the first question: with
// a wait of 300 ms, a loaded race build sent it later (the test's client
// is answered the question, then sends its answer), the first wait ended
// the task, and the answer found it canceled. So the wait is 2 s, and the
// agent works twice that before it asks again.
func TestInputWaitCountsFromTheLastAsk(t *testing.T) {
	const wait = 2 * time.Second
	h := newHarnessWith(t, func(o *Options) { o.InputWait = wait }, nil, "executor")
	ag := h.agents["executor"]
	ag.mu.Lock()
	ag.slow = 2 * wait
	ag.mu.Unlock()
	tk := h.send("executor", "alice", "slowask the fence", nil)
	got := h.continueTask("executor", "alice", tk, "blue")
	if got.Status.State != a2a.TaskStateInputRequired || statusText(got) != "which shade?" {
		t.Fatalf("answer: %s %q", got.Status.State, statusText(got))
	}
	eventually(t, "the second wait to end", func() bool { return h.state("executor", "alice", tk.ID) == a2a.TaskStateCanceled })
}

// TestInputWaitBoundedAfterARefusedAnswer: an answer that the agent
// refuses (its send fails, no event: the task still waits at the agent as
// it did) leaves the task waiting, and its wait bounded anew: the bound of
// the question it answered was let go with the round the answer began, and
// nothing bounded the task, which held its request and a slot of its
// caller's running tasks for ever, however often a client did it.
func TestInputWaitBoundedAfterARefusedAnswer(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.InputWait = 300 * time.Millisecond }, nil, "executor")
	tk := h.send("executor", "alice", "input the fence", nil)
	if tk.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("ask: %s", tk.Status.State)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("refuse this"))
	m.TaskID, m.ContextID = tk.ID, tk.ContextID
	_, _ = h.client("executor", "alice", false).SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	eventually(t, "the wait after the refused answer to end", func() bool { return h.state("executor", "alice", tk.ID) == a2a.TaskStateCanceled })
}
