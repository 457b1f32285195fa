package approval

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// An approval is for one run, also when that run is cancelled while the
// tool runs (its client went, or cancelled it): the write may have been
// made. A retry of the same call must not run it again under the same
// approval, as it did, once per cancel, for as long as the approval was
// remembered.
func TestApprovedRunCancelledIsNotRunAgain(t *testing.T) {
	f := newFixture(t, nil)
	var runs atomic.Int32
	entered := make(chan struct{})
	f.rt.MustRegister(reach.Tool{Name: "wire_money", Access: reach.Write, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		if runs.Add(1) == 1 {
			close(entered)
			<-ctx.Done() // the money left; the answer never came back
			return nil, context.Cause(ctx)
		}
		return json.RawMessage(`{"sent":true}`), nil
	}})
	ctx := f.begin(t, "alice", "")
	const args = `{"to":"mallory","amount":1000}`
	if res := f.call(ctx, "wire_money", args); res.Status != reach.StatusPending {
		t.Fatalf("first call: %s %+v", res.Status, res.Error)
	}
	a := f.q.List(Pending)[0]
	if _, err := f.q.Approve(a.ID, alice, ""); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan *reach.Result)
	go func() { done <- f.call(cctx, "wire_money", args) }()
	<-entered
	cancel()
	if res := <-done; res.Status == reach.StatusSuccess {
		t.Fatalf("the cancelled run: %s", res.Status)
	}
	for i := range 3 {
		res := f.call(ctx, "wire_money", args)
		if res.Status == reach.StatusSuccess || res.Error == nil || !strings.Contains(res.Error.Message, "approval was for that one run") {
			t.Errorf("retry %d after the cancelled run: %s %+v, want it not run again, saying why", i+1, res.Status, res.Error)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("wire_money ran %d times under one approval, want once", n)
	}
	// The retries filed no new approval: the user has nothing to approve
	// until this one expires, and the refusal must not send the model to
	// ask for one (it said "ask the user, who approves it anew").
	if p := f.q.List(Pending); len(p) != 0 {
		t.Errorf("the retries filed %d approvals", len(p))
	}
	res := f.call(ctx, "wire_money", args)
	if res.Error == nil || strings.Contains(res.Error.Suggestion, "approves it anew") || !strings.Contains(res.Error.Suggestion, "until its approval expires") {
		t.Errorf("the refusal suggests %q; want it to say the same call is answered so until its approval expires", res.Error.Suggestion)
	}
}
