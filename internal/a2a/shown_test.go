package a2a

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// slowStore is a store whose writes take a while, as a commit does, and
// that records each task's states as they became durable.
type slowStore struct {
	*store.Memory
	mu     sync.Mutex
	states map[string][]string
}

func (s *slowStore) PutTask(ctx context.Context, rec *store.TaskRecord) (bool, error) {
	time.Sleep(20 * time.Millisecond) // widens the window a caller had before the write
	ok, err := s.Memory.PutTask(ctx, rec)
	if err == nil {
		s.mu.Lock()
		s.states[rec.ID] = append(s.states[rec.ID], rec.State)
		s.mu.Unlock()
	}
	return ok, err
}

func (s *slowStore) list(id a2a.TaskID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.states[string(id)])
}

func (s *slowStore) has(id a2a.TaskID, st a2a.TaskState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.states[string(id)], string(st))
}

// A caller learns a task's id, and each of its states, only once the store
// holds them: a kill -9 right after leaves the task known, as the caller
// saw it (docs/STATE.md, task.stored).
func TestTaskShownOnceStored(t *testing.T) {
	st := &slowStore{Memory: store.NewMemory(), states: map[string][]string{}}
	h := newHarness(t, nil, "planner")
	h.g.opts.Tasks = st

	// A streaming send: every state it shows is stored before.
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hi"))
	var seen []a2a.TaskState
	// Bounded: a failed write that held the caller would hang here.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for ev, err := range h.client("planner", "alice", false).SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			t.Fatalf("the stream, its task's writes failing: %v (after %v); want every state shown", err, seen)
		}
		var id a2a.TaskID
		var s a2a.TaskState
		switch e := ev.(type) {
		case *a2a.Task:
			id, s = e.ID, e.Status.State
		case *a2a.TaskStatusUpdateEvent:
			id, s = e.TaskID, e.Status.State
		default:
			continue
		}
		seen = append(seen, s)
		if !st.has(id, s) {
			t.Errorf("the stream showed task %s %s before the store held that state (stored: %v)", id, s, st.list(id))
		}
	}
	if want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}; !slices.Equal(seen, want) {
		t.Errorf("the stream showed %v; want %v", seen, want)
	}

	// A send that returns at once: its task id is stored before the answer,
	// and so is the state GetTask then shows.
	tk := h.sendMsg("planner", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	if !st.has(tk.ID, tk.Status.State) {
		t.Errorf("the send answered task %s %s before the store held it (stored: %v)", tk.ID, tk.Status.State, st.list(tk.ID))
	}
	h.working("planner")
	eventually(t, "the task working at reach", func() bool {
		t.Helper()
		got, err := h.client("planner", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
		if err != nil {
			t.Fatalf("GetTask %s: %v", tk.ID, err)
		}
		if !st.has(tk.ID, got.Status.State) {
			t.Errorf("GetTask showed task %s %s before the store held it", tk.ID, got.Status.State)
		}
		return got.Status.State == a2a.TaskStateWorking
	})
	res, err := h.client("planner", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID})
	if err != nil || !st.has(tk.ID, res.Status.State) {
		t.Errorf("CancelTask answered %v (%v) before the store held its state", res, err)
	}
}

// failingStore refuses every write.
type failingStore struct{ *store.Memory }

func (failingStore) PutTask(context.Context, *store.TaskRecord) (bool, error) {
	return false, errors.New("disk full")
}

// A store that fails its writes holds no caller: the states are shown
// (the failure logged), the send ends.
func TestTaskShownWhenStoreFails(t *testing.T) {
	h := newHarness(t, nil, "planner")
	h.g.opts.Tasks = failingStore{store.NewMemory()}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hi"))
	var seen []a2a.TaskState
	// Bounded: a failed write that held the caller would hang here.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for ev, err := range h.client("planner", "alice", false).SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			t.Fatalf("the stream, its task's writes failing: %v (after %v); want every state shown", err, seen)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			seen = append(seen, e.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			seen = append(seen, e.Status.State)
		}
	}
	if want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}; !slices.Equal(seen, want) {
		t.Errorf("the stream showed %v; want %v", seen, want)
	}
	tk := h.send("planner", "alice", "say done", nil)
	if tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a blocking send answered %s; want it completed", tk.Status.State)
	}
}
