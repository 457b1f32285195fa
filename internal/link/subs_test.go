package link

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestHandoffSubsBounded: the sub-requests of in-process sub-agents a
// request owns: a hand-off begins its sub-request once (a first turn sent
// again joins it), again only once that one completed; the turn that
// handed their tasks going on ends its own sub-requests and no other
// turn's; past maxSubs in one request the oldest ends; the root's end ends
// the rest.
func TestHandoffSubsBounded(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(context.Background(), rt, time.Hour, Budgets{})
	ctx, root, done, err := q.CallContext(context.Background(), Target{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	delegate := func(turn *reach.Frame, task string) *reach.Request {
		t.Helper()
		_, sub, err := rt.Delegate(reach.WithParent(root.Context(), turn), &reach.Delegation{Agent: "researcher", Task: task})
		if err != nil {
			t.Fatal(err)
		}
		q.AddSub(sub)
		return sub
	}
	_, a, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	h := &Handoff{Turn: a, Tool: "researcher"}
	begun := 0
	begin := func() (*reach.Request, error) { begun++; return delegate(a, "task a"), nil }
	s1, _ := h.Sub(begin)
	if s2, _ := h.Sub(begin); s2 != s1 || begun != 1 {
		t.Fatalf("a first turn sent again began %d sub-requests, want it joined to the one", begun)
	}
	sb := delegate(b, "task b")
	q.EndSubs(a)
	if s1.State() != reach.RequestCompleted || sb.State() != reach.RequestRunning {
		t.Fatalf("turn a went on: its sub-request is %s, turn b's %s; want a's completed, b's running", s1.State(), sb.State())
	}
	if s3, _ := h.Sub(begin); s3 == s1 || begun != 2 {
		t.Errorf("a hand-off whose sub-request completed was not begun again")
	}
	var subs []*reach.Request
	for i := range maxSubs - 1 { // with s3 and sb: one more than maxSubs
		subs = append(subs, delegate(b, fmt.Sprint("task ", i)))
	}
	if sb.State() != reach.RequestCompleted || subs[0].State() != reach.RequestRunning {
		t.Errorf("past %d sub-requests the oldest is %s, the next %s; want the oldest ended", maxSubs, sb.State(), subs[0].State())
	}
	q.mu.Lock()
	n := len(q.owned[root.ID()].subs)
	q.mu.Unlock()
	if n > maxSubs {
		t.Errorf("request %s keeps %d sub-requests, want at most %d", root.ID(), n, maxSubs)
	}
	done()
	q.End(root.ID())
	for _, s := range subs {
		if s.State() != reach.RequestCompleted {
			t.Fatalf("sub-request %s is %s once its root ended, want completed", s.ID(), s.State())
		}
	}
}
