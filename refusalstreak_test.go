package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// stopRecorder keeps the stop events the audit is given.
type stopRecorder struct {
	mu    sync.Mutex
	stops []reach.Cause
}

func (s *stopRecorder) Record(_ context.Context, e *reach.Event) {
	if e.Stop != nil {
		s.mu.Lock()
		s.stops = append(s.stops, *e.Stop)
		s.mu.Unlock()
	}
}

// streakRuntime has a read tool that answers its arguments (ran counts
// its runs) and a forbidden one that never runs.
func streakRuntime(t *testing.T, o *reach.Options) (*reach.Runtime, *int) {
	t.Helper()
	if o == nil {
		o = &reach.Options{}
	}
	ran := new(int)
	rt := reach.New(o)
	rt.MustRegister(
		reach.Tool{Name: "lookup", Access: reach.Read, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			*ran++
			return json.RawMessage(`{"found":"nothing new"}`), nil
		}},
		reach.Tool{Name: "wipe", Access: reach.Forbidden, Func: echo},
	)
	return rt, ran
}

const streakText = "the agent was refused 8 times in a row and went on calling: the request is stopped; answer the user with what you have"

// An agent that keeps calling a tool it may not call is stopped at the
// eighth refusal in a row: the refusal that makes it says so, and its next
// call and model turn are refused with the stop's text; the audit has the
// stop with its reason.
func TestRefusedInARowStops(t *testing.T) {
	rec := &stopRecorder{}
	rt, _ := streakRuntime(t, &reach.Options{Recorder: rec})
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Agent: "shopper"})
	for i := 1; i <= 8; i++ {
		res := call(rt, ctx, "wipe", fmt.Sprintf(`{"n":%d}`, i))
		if res.Status != reach.StatusRefused || res.Error.Code != "denied" {
			t.Fatalf("call %d: %+v, want the denial", i, res)
		}
		stopped := req.StopCause() != nil
		if want := i == 8; stopped != want {
			t.Fatalf("after %d refusals the request is stopped: %v, want %v", i, stopped, want)
		}
		if i == 8 && !strings.Contains(strings.Join(res.Notes, "\n"), streakText) {
			t.Errorf("the eighth refusal's notes %q, want the stop's text", res.Notes)
		}
	}
	if c := req.StopCause(); c.Mode != reach.Cancel || c.By != "reach" || c.Reason != streakText {
		t.Errorf("the stop: %+v", c)
	}
	res := call(rt, ctx, "lookup", `{"q":"a"}`)
	if res.Error == nil || res.Error.Type != reach.TypeStopped || !strings.Contains(res.Error.Message, streakText) {
		t.Errorf("the next call: %+v, want the stop's refusal", res)
	}
	if _, _, err := rt.BeginModel(ctx, "m"); err == nil || !strings.Contains(err.Error(), streakText) {
		t.Errorf("the next model turn: %v, want the stop's refusal", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.stops) != 1 || rec.stops[0].Reason != streakText {
		t.Errorf("the audit's stops: %+v, want one with the reason", rec.stops)
	}
}

// The loop guard's refusals count: the same lookup runs twice and is
// refused after; the eighth refusal stops the request.
func TestRefusedInARowLoop(t *testing.T) {
	rt, ran := streakRuntime(t, nil)
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
	for i := 1; i <= 10; i++ {
		res := call(rt, ctx, "lookup", `{"q":"refund policy"}`)
		if i > 2 && (res.Error == nil || res.Error.Type != reach.TypeLoop) {
			t.Fatalf("call %d: %+v, want the loop's refusal", i, res)
		}
		if stopped, want := req.StopCause() != nil, i == 10; stopped != want {
			t.Fatalf("after call %d the request is stopped: %v, want %v", i, stopped, want)
		}
	}
	if *ran != 2 {
		t.Errorf("%d lookups ran, want 2", *ran)
	}
}

// A call let through sets the count back: seven refusals, a lookup that
// runs, seven more leave the request running; the eighth in a row stops it.
func TestRefusedInARowReset(t *testing.T) {
	rt, _ := streakRuntime(t, nil)
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
	deny := func(n int) {
		for range n {
			if res := call(rt, ctx, "wipe", `{}`); res.Status != reach.StatusRefused {
				t.Fatalf("%+v, want a refusal", res)
			}
		}
	}
	deny(7)
	if res := call(rt, ctx, "lookup", `{"q":"a"}`); res.Status != reach.StatusSuccess {
		t.Fatalf("the lookup: %+v", res)
	}
	deny(7)
	if c := req.StopCause(); c != nil {
		t.Fatalf("stopped after 7 refusals since a call ran: %+v", c)
	}
	deny(1)
	if req.StopCause() == nil {
		t.Error("not stopped after 8 refusals in a row")
	}
}

// Refusals the agent cannot mend by changing course neither count nor set
// the count back: pending approvals and rate limits.
func TestRefusedInARowExclusions(t *testing.T) {
	t.Run("pending", func(t *testing.T) {
		rt, _ := streakRuntime(t, &reach.Options{Approver: pending{}})
		rt.MustRegister(reach.Tool{Name: "refund", Access: reach.HighRisk, Func: echo})
		ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
		for range 20 {
			if res := call(rt, ctx, "refund", `{"order":"1001"}`); res.Status != reach.StatusPending {
				t.Fatalf("%+v, want pending", res)
			}
		}
		if c := req.StopCause(); c != nil {
			t.Fatalf("stopped by pending approvals: %+v", c)
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		rt, _ := streakRuntime(t, &reach.Options{RateLimit: &reach.RateLimit{PerPrincipal: 0.001, PerPrincipalBurst: 1}})
		ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
		if res := call(rt, ctx, "lookup", `{"q":"first"}`); res.Status != reach.StatusSuccess {
			t.Fatalf("the first lookup: %+v", res) // the bucket's one call
		}
		for i := range 4 {
			call(rt, ctx, "wipe", fmt.Sprintf(`{"n":%d}`, i))
		}
		limited := 0
		for i := range 20 {
			if res := call(rt, ctx, "lookup", fmt.Sprintf(`{"q":%d}`, i)); res.Error != nil && res.Error.Type == reach.TypeRateLimit {
				limited++
			}
		}
		if limited != 20 || req.StopCause() != nil {
			t.Fatalf("%d calls rate limited, stopped %+v: want 20, and running", limited, req.StopCause())
		}
		for i := range 4 {
			call(rt, ctx, "wipe", fmt.Sprintf(`{"m":%d}`, i))
		}
		if req.StopCause() == nil {
			t.Error("4 denials, rate limits, 4 denials: not stopped, want the rate limits to leave the count as it was")
		}
	})
}

type pending struct{}

func (pending) Approve(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
	return reach.NeedsApproval, nil
}

// RefusedInARow below zero turns the rule off; a limit of its own is kept.
func TestRefusedInARowOption(t *testing.T) {
	for _, tc := range []struct {
		n, stopAt int
	}{{-1, 0}, {3, 3}} {
		rt, _ := streakRuntime(t, &reach.Options{RefusedInARow: tc.n})
		ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
		for i := 1; i <= 30; i++ {
			call(rt, ctx, "wipe", `{}`)
			if stopped, want := req.StopCause() != nil, tc.stopAt != 0 && i >= tc.stopAt; stopped != want {
				t.Fatalf("RefusedInARow %d: after %d refusals stopped %v, want %v", tc.n, i, stopped, want)
			}
		}
	}
}

// A sub-agent that ignores its refusals stops its own sub-request (and
// its hand-off ends cancelled), not the request that handed it the task:
// the count is one agent's in one request, and the parent's agent goes on.
func TestRefusedInARowSubRequest(t *testing.T) {
	rt, _ := streakRuntime(t, nil)
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Agent: "planner"})
	for range 5 {
		call(rt, ctx, "wipe", `{}`) // the parent's own refusals: its count, not the sub-agent's
	}
	sctx, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "executor", Task: "wipe it"})
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		call(rt, sctx, "wipe", `{}`)
	}
	if c := sub.StopCause(); c == nil || c.Reason != streakText {
		t.Fatalf("the sub-request's stop: %+v, want the streak's", c)
	}
	if c := req.StopCause(); c != nil {
		t.Fatalf("the parent was stopped: %+v", c)
	}
	sub.End()
	if f := sub.DelegateFrame(); f.State() != reach.Cancelled {
		t.Errorf("the hand-off's frame is %v, want cancelled", f.State())
	}
	if res := call(rt, ctx, "lookup", `{"q":"a"}`); res.Status != reach.StatusSuccess {
		t.Errorf("the parent's next call: %+v", res)
	}
}
