package a2a

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// TestCancelTaskTellsNoStoreText: a CancelTask of a task another instance
// runs, whose request the shared store fails to stop, is refused with what
// happened and what to do next; the store's own text (a driver's, with
// its host and user) goes to the log, not to the client. Before, the
// answer quoted it.
func TestCancelTaskTellsNoStoreText(t *testing.T) {
	driver := errors.New(`failed to connect to host=db-7.internal user=reach_rw database=reach: dial tcp 10.9.8.7:5432: connect: connection refused`)
	h := newHarnessWith(t, func(o *Options) {
		o.Tasks = store.NewMemory()
		o.Stop = func(context.Context, string, string) error { return driver }
	}, nil, "executor")
	go func() {
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")),
			Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
		h.client("executor", "alice", false).SendMessage(t.Context(), req) //nolint:errcheck // the task is read below
	}()
	id := h.working("executor")
	eventually(t, "the task stored with its request", func() bool {
		rec, err := h.g.opts.Tasks.GetTask(t.Context(), "executor", string(id))
		return err == nil && rec != nil && rec.Request != ""
	})
	// Through the store: as if another instance ran it.
	h.g.tasks.mu.Lock()
	live := h.g.tasks.byID[taskKey{"executor", id}]
	delete(h.g.tasks.byID, taskKey{"executor", id})
	h.g.tasks.mu.Unlock()
	_, err := h.client("executor", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
	if err == nil || !strings.Contains(err.Error(), "could not be canceled") || !strings.Contains(err.Error(), "Try again") {
		t.Errorf("CancelTask: %v; want a refusal saying what happened and to try again", err)
	}
	for _, s := range []string{"db-7.internal", "reach_rw", "10.9.8.7", "connection refused"} {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("CancelTask's answer %q tells the store's %q", err, s)
		}
	}
	h.g.tasks.mu.Lock()
	h.g.tasks.byID[taskKey{"executor", id}] = live
	h.g.tasks.mu.Unlock()
}
