package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// TestOwnKeyCutOffIsNotRunAgain: a write under the caller's own
// idempotency key whose caller goes away while its tool runs (the gateway
// staying up) may have taken effect: every retry of the key is answered
// interrupted (check the effect, send a new key to run it again), and the
// write ran once. A failure that surely did not take effect (nothing
// sent, the tool's own error answer) lets the key go: its retry runs.
// Before, only an approved call kept the record, and a retry of the key
// ran the write a second time.
func TestOwnKeyCutOffIsNotRunAgain(t *testing.T) {
	rt := reach.New(nil)
	runs := map[string]*atomic.Int32{"fig": {}, "plum": {}, "pear": {}}
	var fail, notSent atomic.Bool
	started := make(chan struct{}, 1)
	rt.MustRegister(reach.Tool{Name: "hold", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			var in struct{ Key string }
			json.Unmarshal(args, &in)
			if notSent.CompareAndSwap(true, false) {
				return nil, &reach.NotSentError{Err: errors.New("not sent")}
			}
			runs[in.Key].Add(1)
			if fail.CompareAndSwap(true, false) {
				return nil, &reach.ToolError{Type: "invalid", Message: "no such shelf"}
			}
			if in.Key == "fig" && runs[in.Key].Load() == 1 {
				started <- struct{}{}
				<-ctx.Done() // held until its caller goes away
				return nil, ctx.Err()
			}
			return json.RawMessage(`"held"`), nil
		}})
	call := func(ctx context.Context, req, key, arg string) *reach.Result {
		t.Helper()
		if ctx == nil {
			ctx, _ = begin(t, rt, &reach.RequestOptions{ID: req, Principal: "alice"})
		}
		return rt.Call(ctx, &reach.Call{ID: "c1", Tool: "hold", IdempotencyKey: key, Arguments: json.RawMessage(`{"key":"` + arg + `"}`)})
	}

	ctx, _ := begin(t, rt, &reach.RequestOptions{ID: "r1", Principal: "alice"})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan *reach.Result)
	go func() { done <- call(cctx, "r1", "k-fig", "fig") }()
	<-started
	cancel() // the caller hangs up
	if res := <-done; res.Status == reach.StatusSuccess {
		t.Fatalf("the cut-off write: %+v; want it cancelled", res)
	}
	for i, req := range []string{"r2", "r3"} {
		res := call(nil, req, "k-fig", "fig")
		if res.Status != reach.StatusError || res.Error == nil || res.Error.Code != "interrupted" || res.Error.Type != reach.TypeInterrupted ||
			!strings.Contains(res.Error.Message, "may have done its work") || !strings.Contains(res.Error.Suggestion, "new idempotency key") {
			t.Fatalf("retry %d of the cut-off key: %s %+v; want the error interrupted, saying to check and send a new key", i, res.Status, res.Error)
		}
	}
	if n := runs["fig"].Load(); n != 1 {
		t.Fatalf("the write of k-fig ran %d times, want once", n)
	}
	if res := call(nil, "r4", "k-fig2", "fig"); res.Status != reach.StatusSuccess || res.Replayed {
		t.Fatalf("the write under a new key: %s %+v; want it run", res.Status, res.Error)
	}

	// The tool's own error answer: it did not take effect, the retry runs.
	fail.Store(true)
	if res := call(nil, "r5", "k-plum", "plum"); res.Status != reach.StatusError || res.Error == nil || res.Error.Code == "interrupted" {
		t.Fatalf("the failing write: %s %+v; want the tool's error", res.Status, res.Error)
	}
	if res := call(nil, "r6", "k-plum", "plum"); res.Status != reach.StatusSuccess || res.Replayed {
		t.Fatalf("the retry after the tool's error answer: %s %+v; want it run", res.Status, res.Error)
	}
	// Nothing sent: the retry runs.
	notSent.Store(true)
	if res := call(nil, "r7", "k-pear", "pear"); res.Status == reach.StatusSuccess {
		t.Fatalf("the write not sent: %+v; want it refused", res)
	}
	if res := call(nil, "r8", "k-pear", "pear"); res.Status != reach.StatusSuccess || res.Replayed {
		t.Fatalf("the retry of a write not sent: %s %+v; want it run", res.Status, res.Error)
	}
	if n, m := runs["plum"].Load(), runs["pear"].Load(); n != 2 || m != 1 {
		t.Fatalf("plum ran %d times (want 2), pear %d (want 1)", n, m)
	}
}

// TestRetryByKeyWhileRunningOverBudget: a request whose tool-call budget
// its first call spent retries that call by its own key while it still
// runs: the retry is answered as the key says (the first's result, once
// it is back), not refused over budget, and spends nothing. A call whose
// key has no record nor run is still refused, and runs not; one that
// needs an approval is refused before a human is asked.
func TestRetryByKeyWhileRunningOverBudget(t *testing.T) {
	gate := &seeAndApprove{seen: make(chan string, 8)}
	rt := reach.New(&reach.Options{Authorizer: gate, Approver: gate})
	var runs atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	fn := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		if runs.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return args, nil
	}
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant, Func: fn})
	rt.MustRegister(reach.Tool{Name: "wire", Access: reach.HighRisk, Reentrancy: reach.Reentrant, Func: fn})
	ctx, req := begin(t, rt, &reach.RequestOptions{ID: "r1", Budget: &reach.Budget{ToolCalls: 1}})
	pay := func(key string) *reach.Result {
		return rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", IdempotencyKey: key, Arguments: json.RawMessage(`{"amount":10}`)})
	}
	first := make(chan *reach.Result)
	go func() { first <- pay("k1") }()
	<-started
	retry := make(chan *reach.Result)
	go func() { retry <- pay("k1") }()
	<-gate.seen // the first
	// The retry passed the admit stage while the first runs (it reached
	// authorization), or was answered: a refusal.
	select {
	case r := <-retry:
		close(release)
		<-first
		t.Fatalf("the retry while the first runs: %s %+v; want it answered by the key", r.Status, r.Error)
	case <-gate.seen:
	}
	close(release)
	if r := <-first; r.Status != reach.StatusSuccess || r.Replayed {
		t.Fatalf("the first call: %s %+v", r.Status, r.Error)
	}
	if r := <-retry; r.Status != reach.StatusSuccess || !r.Replayed {
		t.Fatalf("the retry while the first ran: %s replayed %v %+v; want the first's result", r.Status, r.Replayed, r.Error)
	}
	if r := pay("k1"); r.Status != reach.StatusSuccess || !r.Replayed {
		t.Fatalf("a retry after: %s replayed %v %+v; want the recorded result", r.Status, r.Replayed, r.Error)
	}
	if u := req.Usage().ToolCalls; u != 1 {
		t.Errorf("the request spent %d tool calls, want 1", u)
	}
	// A key with no record and no call running would run: refused.
	if r := pay("k2"); r.Status != reach.StatusRefused || r.Error == nil || r.Error.Code != "budget_tool_calls" {
		t.Fatalf("a new key over budget: %s %+v; want refused budget_tool_calls", r.Status, r.Error)
	}
	r := rt.Call(ctx, &reach.Call{ID: "c2", Tool: "wire", IdempotencyKey: "k3", Arguments: json.RawMessage(`{"amount":10}`)})
	if r.Status != reach.StatusRefused || r.Error == nil || r.Error.Code != "budget_tool_calls" {
		t.Fatalf("a call needing approval over budget: %s %+v; want refused budget_tool_calls", r.Status, r.Error)
	}
	if n := gate.asked.Load(); n != 0 {
		t.Errorf("a human was asked %d times for a call its budget refused", n)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tools ran %d times, want once", n)
	}
	if u := req.Usage().ToolCalls; u != 1 {
		t.Errorf("the request spent %d tool calls, want 1", u)
	}
}

// seeAndApprove permits writes and asks for high-risk calls, telling seen
// of each call it authorizes; it approves what it is asked.
type seeAndApprove struct {
	seen  chan string
	asked atomic.Int32
}

func (g *seeAndApprove) Authorize(_ context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	g.seen <- c.ID
	if c.Access() == reach.HighRisk {
		return reach.NeedsApproval, nil
	}
	return reach.Permit, nil
}

func (g *seeAndApprove) Approve(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
	g.asked.Add(1)
	return reach.Permit, nil
}
