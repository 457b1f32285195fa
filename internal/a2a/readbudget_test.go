package a2a

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// TestReadBudgetBoundsAllStreams: four agents' streams flood while the
// store holds every write of their tasks (the appliers wait on it, the
// events pile up read and not applied). What the four hold together
// stays within MaxReadBytes, below four times the bound of one stream:
// once the budget is spent, the streams are not read on (their readers
// wait), rather than each reading to its own bound. Once the store
// writes again, nothing was lost: each task is failed at reach for its
// size (the flood's own end), and the budget is all given back.
func TestReadBudgetBoundsAllStreams(t *testing.T) {
	const streams, bound, budget = 4, 256 << 10, 384 << 10
	st := &heldStore{Memory: store.NewMemory(), held: 1, release: make(chan struct{}), deaf: true} // every write waits, past its timeout too
	h := newHarnessWith(t, func(o *Options) {
		o.Tasks = st
		o.MaxTaskBytes = bound
		o.MaxReadBytes = budget
	}, nil, "worker")
	released := false
	defer func() {
		if !released {
			close(st.release)
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range streams {
		go func() {
			req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("flood"))}
			for range h.client("worker", "alice", false).SendStreamingMessage(ctx, req) {
			}
		}()
	}
	tasks := func() []*task { return h.g.tasks.list("worker", Owner{"alice", ""}) }
	inboxes := func() []*inbox {
		var ins []*inbox
		for _, tk := range tasks() {
			tk.mu.Lock()
			ins = append(ins, tk.inboxes...)
			tk.mu.Unlock()
		}
		return ins
	}
	// Each stream's reader waits (for its own bound or for the budget).
	eventually(t, "every stream's reader to wait", func() bool {
		ins := inboxes()
		return len(ins) == streams && !slices.ContainsFunc(ins, func(in *inbox) bool {
			in.mu.Lock()
			defer in.mu.Unlock()
			return !in.waiting
		})
	})
	var sum int64
	for _, in := range inboxes() {
		in.mu.Lock()
		sum += in.bytes
		in.mu.Unlock()
	}
	if sum > budget {
		t.Errorf("the %d streams hold %d bytes read and not applied; want at most MaxReadBytes, %d", streams, sum, budget)
	}
	if got := h.g.reads.held(); got != sum {
		t.Errorf("the budget counts %d bytes; the streams hold %d", got, sum)
	}
	close(st.release)
	released = true
	eventually(t, "every task to fail for its size", func() bool {
		ts := tasks()
		return len(ts) == streams && !slices.ContainsFunc(ts, func(tk *task) bool { return !tk.done() })
	})
	for _, tk := range tasks() {
		tk.mu.Lock()
		state, msg := tk.state, textOfMessage(tk.snap.Status.Message)
		tk.mu.Unlock()
		if state != a2a.TaskStateFailed || !strings.Contains(msg, "over 262144 bytes") {
			t.Errorf("task %s: %s %q; want failed for its size", tk.id, state, msg)
		}
	}
	eventually(t, "the budget to be given back", func() bool { return h.g.reads.held() == 0 })
}

// TestReadBudgetTakesOneAlone: an event larger than the budget is read
// when the budget holds nothing, and the next waits until it is applied
// (a put that must wait, its context ended, reports false); two
// inboxes share the budget.
func TestReadBudgetTakesOneAlone(t *testing.T) {
	big := a2a.NewStatusUpdateEvent(a2a.TaskInfo{TaskID: "t", ContextID: "c"}, a2a.TaskStateWorking,
		a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(strings.Repeat("x", 4096))))
	b := newReadBudget(sizeOf(big) / 2)
	a, c := newInbox(b), newInbox(b)
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if !a.put(t.Context(), inboxItem{ev: big}, 1<<20, b) {
		t.Fatal("an event over the budget, the budget empty: not taken")
	}
	if c.put(ended, inboxItem{ev: big}, 1<<20, b) {
		t.Fatal("another inbox took an event while the budget was spent")
	}
	if _, ok := a.take(); !ok {
		t.Fatal("nothing to take")
	}
	if got := b.held(); got != 0 {
		t.Fatalf("the budget holds %d after the take; want 0", got)
	}
	if !c.put(ended, inboxItem{ev: big}, 1<<20, b) {
		t.Fatal("the budget given back, the next event: not taken")
	}
}
