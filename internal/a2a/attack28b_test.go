package a2a

import (
	"strconv"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestOverBoundRefusalTellsNoOthersBytes: the refusal of a message while
// the live tasks are over MaxTotalBytes told the caller how many bytes
// all live tasks held, every principal's and tenant's: less its own
// (which it was told too), what another's tasks held, and, asked again,
// when they grew or ended. Now it says the gateway is at its bound, what
// the caller's own tasks hold and what to do; not the total.
func TestOverBoundRefusalTellsNoOthersBytes(t *testing.T) {
	const limit = 64 << 10
	h := newHarnessWith(t, func(o *Options) { o.MaxTotalBytes = limit }, nil, "executor")
	bobs := h.sendMsg("executor", "bob", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow "+strings.Repeat("b", limit))), true)
	h.working("executor")
	alices := h.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow "+strings.Repeat("a", limit/2+1024))), true)
	h.working("executor")
	var all, mine int64
	eventually(t, "alice's live task over her share of the bound", func() bool {
		var over bool
		over, all, mine = h.g.tasks.over(Owner{"alice", ""})
		return over
	})
	refused := h.send("executor", "alice", "echo hi", nil)
	text := statusText(refused)
	if refused.Status.State != a2a.TaskStateRejected || !strings.Contains(text, "max_total_bytes") || !strings.Contains(text, "Try again later") {
		t.Fatalf("alice's message over the bound: %s %q, want rejected, saying the bound and what to do", refused.Status.State, text)
	}
	for what, n := range map[string]int64{"all live tasks' bytes": all, "bob's tasks' bytes": all - mine} {
		if strings.Contains(text, strconv.FormatInt(n, 10)) {
			t.Errorf("the refusal tells alice %s (%d): %q", what, n, text)
		}
	}
	if !strings.Contains(text, "yours hold") {
		t.Errorf("the refusal does not tell alice what her own live tasks hold: %q", text)
	}
	for who, id := range map[string]a2a.TaskID{"bob": bobs.ID, "alice": alices.ID} {
		if _, err := h.client("executor", who, false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
}
