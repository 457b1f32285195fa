package a2a

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestTasksTotalBytesBounded: what all tasks hold together is bounded by
// MaxTotalBytes: past it the oldest ended tasks are let go first (GetTask
// no longer finds the first, the last is kept), and while a live task
// alone holds more, a new message is refused with a rejected task that
// says the bound and what to do, to the principal whose live tasks hold
// their share of it or more (another goes on); once that task ends (and
// is let go in turn), messages go through again.
func TestTasksTotalBytesBounded(t *testing.T) {
	const limit = 64 << 10
	h := newHarnessWith(t, func(o *Options) { o.MaxTotalBytes = limit }, nil, "executor")
	var ids []a2a.TaskID
	for range 30 {
		tk := h.send("executor", "alice", "echo "+strings.Repeat("e", 1<<10), nil)
		if tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("echo: %s %q", tk.Status.State, statusText(tk))
		}
		ids = append(ids, tk.ID)
	}
	if n := h.g.tasks.bytes.Load(); n > limit || n <= 0 {
		t.Errorf("the tasks hold %d bytes, want some and at most %d", n, limit)
	}
	c := h.client("executor", "alice", false)
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: ids[0]}); err == nil {
		t.Errorf("the first ended task is still kept with the tasks over %d bytes", limit)
	}
	if tk, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: ids[len(ids)-1]}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("the last task: %v, %v; want it kept, completed", tk, err)
	}

	big := h.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow "+strings.Repeat("s", limit))), true)
	h.working("executor")
	refused := h.send("executor", "alice", "echo hi", nil)
	if refused.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(refused), "max_total_bytes") || !strings.Contains(statusText(refused), "Try again later") {
		t.Errorf("alice's message with her live task over the bound: %s %q, want rejected, saying the bound and what to do", refused.Status.State, statusText(refused))
	}
	// Bob's tasks hold nothing: alice's refuse alice, not him (they
	// refused every principal, so that one principal's live tasks kept
	// all others from A2A).
	if tk := h.send("executor", "bob", "echo hi", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("bob's message with alice's live task over the bound: %s %q, want it to go through", tk.Status.State, statusText(tk))
	}
	if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: big.ID}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the big task canceled and let go", func() bool { over, _, _ := h.g.tasks.over(Owner{"alice", ""}); return !over })
	if tk := h.send("executor", "alice", "echo hi", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("alice's message once the big task ended: %s %q, want it to go through", tk.Status.State, statusText(tk))
	}
}
