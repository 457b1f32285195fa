package a2a

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach"

	"github.com/agentreach/reach/internal/store"
)

// heldStore is a task store whose writes from the held-th on wait until
// release is closed.
type heldStore struct {
	*store.Memory
	held    int32
	n       atomic.Int32
	release chan struct{}
	// deaf holds the writes past their context's end too: a test's
	// order of events then rests on release alone, not on a write's
	// timeout.
	deaf bool
}

func (s *heldStore) PutTask(ctx context.Context, t *store.TaskRecord) (bool, error) {
	if s.n.Add(1) >= s.held {
		done := ctx.Done()
		if s.deaf {
			done = nil
		}
		select {
		case <-s.release:
		case <-done:
			return false, ctx.Err()
		}
	}
	return s.Memory.PutTask(ctx, t)
}

// TestStopKeepsPartsReadBefore: the agent streams two artifacts while
// reach's write of the task's working state to the store is slow; a stop
// of the hand-off that comes then keeps them. Reach has read them from
// the stream (while the write holds the events' applying back); the stop
// applies them, then cancels the task: the caller's GetTask shows the
// task canceled with parts 1 and 2, and the agent is told.
func TestStopKeepsPartsReadBefore(t *testing.T) {
	st := &heldStore{Memory: store.NewMemory(), held: 2, release: make(chan struct{})} // the first write (submitted) passes
	h := newHarnessWith(t, func(o *Options) {
		o.Tasks = st
		o.CancelTimeout = time.Minute // the stop's wait for what was read ends on the store, not on a clock
	}, nil, "executor")
	sent := make(chan *a2a.Task, 1)
	go func() {
		// Answered once the task's working state is stored: after release.
		sent <- h.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("parts")), true)
	}()
	id := h.working("executor")
	tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
	if tk == nil {
		t.Fatal("no task at reach")
	}
	read := func(cond func(*inbox) bool) func() bool {
		return func() bool {
			tk.mu.Lock()
			ins := slices.Clone(tk.inboxes)
			tk.mu.Unlock()
			for _, in := range ins {
				in.mu.Lock()
				ok := cond(in)
				in.mu.Unlock()
				if ok {
					return true
				}
			}
			return false
		}
	}
	// The task, working, part 1 and part 2 read from the stream; the
	// store's write of the working state still held.
	eventually(t, "reach to read both parts", read(func(in *inbox) bool { return in.read >= 4 }))
	// The events are applied by another goroutine than reads them: under
	// load it may reach the working state's write only now (a fresh-clone
	// run read the four before it had, and this asked for it at once).
	eventually(t, "the store's write of the working state, held", func() bool { return st.n.Load() >= 2 })
	go tk.req.Stop(reach.Cancel, "operator", "enough")
	eventually(t, "the stop to wait for what was read", read(func(in *inbox) bool { return in.holdAt >= 0 }))
	close(st.release)
	eventually(t, "the task to end", tk.done)
	<-sent
	got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, a := range got.Artifacts {
		parts = append(parts, textOf(a.Parts))
	}
	if got.Status.State != a2a.TaskStateCanceled || !strings.Contains(statusText(got), "enough") {
		t.Errorf("GetTask: %s %q; want canceled by the stop", got.Status.State, statusText(got))
	}
	if !slices.Equal(parts, []string{"part 1", "part 2"}) {
		t.Errorf("GetTask's artifacts %q; want the parts the agent sent before the stop", parts)
	}
	eventually(t, "the agent to be told", func() bool { return slices.Contains(h.agents["executor"].canceled(), id) })
}
