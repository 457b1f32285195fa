package a2a

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agentreach/reach"

	"github.com/agentreach/reach/internal/store"
)

// agentHeldStore holds the task writes of one agent's tasks until
// release (past their context's end too); the others' pass.
type agentHeldStore struct {
	*store.Memory
	agent   string
	release chan struct{}
}

func (s *agentHeldStore) PutTask(ctx context.Context, t *store.TaskRecord) (bool, error) {
	if t.Agent == s.agent {
		<-s.release
	}
	return s.Memory.PutTask(ctx, t)
}

// TestStopEndsWhileReadBudgetSpent: another agent's streams flood while
// the store holds their writes, so that the gateway's read budget
// (MaxReadBytes) is spent and every reader waits for it. A stop of a
// task of an agent whose store writes pass then still ends, within
// CancelTimeout: the task is canceled at reach (with what the budget let
// reach read of the agent's answer, or without), and the stop's account
// is in the audit; the floods' events are all applied once their store
// writes again, and the budget is given back whole.
func TestStopEndsWhileReadBudgetSpent(t *testing.T) {
	const streams, bound, budget = 2, 256 << 10, 384 << 10
	st := &agentHeldStore{Memory: store.NewMemory(), agent: "worker", release: make(chan struct{})}
	h := newHarnessWith(t, func(o *Options) {
		o.Tasks = st
		o.MaxTaskBytes = bound
		o.MaxReadBytes = budget
	}, nil, "executor", "worker")
	released := false
	defer func() {
		if !released {
			close(st.release)
		}
	}()
	go func() {
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("transit"))}
		for range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
		}
	}()
	id := h.working("executor")
	tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
	if tk == nil {
		t.Fatal("no task at reach")
	}
	eventually(t, "part 1 applied", func() bool {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		return tk.snap != nil && len(tk.snap.Artifacts) == 1
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range streams {
		go func() {
			req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("flood"))}
			for range h.client("worker", "alice", false).SendStreamingMessage(ctx, req) {
			}
		}()
	}
	floods := func() []*inbox {
		var ins []*inbox
		for _, ft := range h.g.tasks.list("worker", Owner{"alice", ""}) {
			ft.mu.Lock()
			ins = append(ins, ft.inboxes...)
			ft.mu.Unlock()
		}
		return ins
	}
	eventually(t, "every flood's reader to wait for the budget", func() bool {
		ins := floods()
		return len(ins) == streams && !slices.ContainsFunc(ins, func(in *inbox) bool {
			in.mu.Lock()
			defer in.mu.Unlock()
			return !in.waiting
		})
	})
	go tk.req.Stop(reach.Cancel, "operator", "enough")
	eventually(t, "the task to be canceled at reach while the budget is spent", tk.done)
	if got := h.state("executor", "alice", id); got != a2a.TaskStateCanceled {
		t.Errorf("task %s is %s; want canceled", id, got)
	}
	eventually(t, "the stop's account in the audit", func() bool { return len(h.audit.find("kept")) > 0 })
	close(st.release)
	released = true
	cancel()
	eventually(t, "every flood's task to end at reach", func() bool {
		ts := h.g.tasks.list("worker", Owner{"alice", ""})
		return len(ts) == streams && !slices.ContainsFunc(ts, func(ft *task) bool { return !ft.done() })
	})
	eventually(t, "the budget to be given back", func() bool { return h.g.reads.held() == 0 })
}

// TestStopKeepsAnswerLargerThanReadBudget: the agent answers a stop's
// cancel with eight artifacts of 64 KiB, more than the gateway's whole
// read budget (MaxReadBytes, 100 KiB: one at a time), then its canceled.
// The stop keeps them all, read one after another as each is applied
// (the budget given back in between), and settles the task canceled
// with the stop's text; the budget is given back whole.
func TestStopKeepsAnswerLargerThanReadBudget(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) {
		o.MaxTaskBytes = 1 << 20
		o.MaxReadBytes = 100 << 10
		o.CancelTimeout = time.Minute // the test waits for the state it asserts, not a timer
	}, nil, "executor")
	go func() {
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("burst"))}
		for range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
		}
	}()
	id := h.working("executor")
	tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
	if tk == nil {
		t.Fatal("no task at reach")
	}
	eventually(t, "part 1 applied", func() bool {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		return tk.snap != nil && len(tk.snap.Artifacts) == 1
	})
	tk.req.Stop(reach.Cancel, "operator", "enough")
	eventually(t, "the task to be canceled at reach", tk.done)
	got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCanceled || !strings.Contains(statusText(got), "enough") || len(got.Artifacts) != 9 {
		t.Errorf("GetTask: %s %q with %d artifacts; want canceled by the stop with all 9", got.Status.State, statusText(got), len(got.Artifacts))
	}
	eventually(t, "the stop's account in the audit", func() bool { return len(h.audit.find("kept")) > 0 })
	if ev := h.audit.find("kept"); len(ev) != 1 || !strings.Contains(ev[0].Message, "and 8 that arrived after it, up to the agent's own end") {
		t.Errorf("kept events %+v; want the 8 parts of the agent's answer said", ev)
	}
	eventually(t, "the budget to be given back", func() bool { return h.g.reads.held() == 0 })
}

// TestTwoStopsShareReadBudget: two tasks, each answering its stop's
// cancel with eight artifacts of 64 KiB, are stopped at once while the
// gateway's read budget (100 KiB) holds one such event at a time: each
// stop keeps all of its task's parts (neither waits on the other's held
// events), each task is canceled by its stop, and the budget is given
// back whole.
func TestTwoStopsShareReadBudget(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) {
		o.MaxTaskBytes = 1 << 20
		o.MaxReadBytes = 100 << 10
		o.CancelTimeout = time.Minute // the test waits for the state it asserts, not a timer
	}, nil, "executor")
	var tks []*task
	for range 2 {
		go func() {
			req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("burst"))}
			for range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), req) {
			}
		}()
		id := h.working("executor")
		tk := h.g.tasks.get("executor", id, Owner{"alice", ""})
		if tk == nil {
			t.Fatal("no task at reach")
		}
		eventually(t, "part 1 applied", func() bool {
			tk.mu.Lock()
			defer tk.mu.Unlock()
			return tk.snap != nil && len(tk.snap.Artifacts) == 1
		})
		tks = append(tks, tk)
	}
	for _, tk := range tks {
		go tk.req.Stop(reach.Cancel, "operator", "enough")
	}
	for _, tk := range tks {
		eventually(t, "the task to be canceled at reach", tk.done)
		got, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.id})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.State != a2a.TaskStateCanceled || !strings.Contains(statusText(got), "enough") || len(got.Artifacts) != 9 {
			t.Errorf("GetTask %s: %s %q with %d artifacts; want canceled by the stop with all 9", tk.id, got.Status.State, statusText(got), len(got.Artifacts))
		}
	}
	eventually(t, "both stops' accounts in the audit", func() bool { return len(h.audit.find("kept")) == 2 })
	for _, ev := range h.audit.find("kept") {
		if !strings.Contains(ev.Message, "and 8 that arrived after it, up to the agent's own end") {
			t.Errorf("kept event of %s: %q; want the 8 parts of the agent's answer said", ev.Task, ev.Message)
		}
	}
	eventually(t, "the budget to be given back", func() bool { return h.g.reads.held() == 0 })
}
