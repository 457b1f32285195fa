package a2a

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach/internal/store"
)

// readCounting is a TaskStore that counts its GetTask calls.
type readCounting struct {
	TaskStore
	reads atomic.Int64
}

func (s *readCounting) GetTask(ctx context.Context, agent, id string) (*store.TaskRecord, error) {
	s.reads.Add(1)
	return s.TaskStore.GetTask(ctx, agent, id)
}

// TestA2AReferenceTasksCapped: a message that references more tasks than
// MaxReferenceTasks is refused (-32602) saying how many it may, before any
// is read from the store and without reaching the agent; each reference
// reach does not hold was a read of the store, as many as the body held.
// A message with MaxReferenceTasks references goes on.
func TestA2AReferenceTasksCapped(t *testing.T) {
	st := &readCounting{TaskStore: store.NewMemory()}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	refs := func(n int) []a2a.TaskID {
		ids := make([]a2a.TaskID, n)
		for i := range ids {
			ids[i] = a2a.TaskID(fmt.Sprintf("task-not-held-%d", i))
		}
		return ids
	}
	sent := len(h.agents["executor"].seen())
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo summarize these"))
	m.ReferenceTasks = refs(MaxReferenceTasks * 100)
	before := st.reads.Load()
	_, err := h.client("executor", "bob", false).SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("references %d tasks", MaxReferenceTasks*100)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("at most %d", MaxReferenceTasks)) {
		t.Fatalf("a message referencing %d tasks: %v, want refused saying how many it may", MaxReferenceTasks*100, err)
	}
	if n := st.reads.Load() - before; n != 0 {
		t.Errorf("the refused message cost %d reads of the store, want none", n)
	}
	if n := len(h.agents["executor"].seen()); n != sent {
		t.Errorf("the agent got the refused message")
	}
	m = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo summarize these"))
	m.ReferenceTasks = refs(MaxReferenceTasks)
	if tk := h.sendMsg("executor", "bob", m, false); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a message referencing %d tasks: %s %q, want it passed on", MaxReferenceTasks, tk.Status.State, statusText(tk))
	}
}
