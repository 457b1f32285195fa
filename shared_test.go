package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// A call placed under a frame of another runtime (through its Ancestry, as
// another gateway instance stored it) is checked against that frame's
// ancestors: the same tool with the same arguments is a cycle, a
// non-reentrant tool among them a re-entry, and their depth counts.
func TestAdoptedAncestryRefusesCycles(t *testing.T) {
	echo := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil }
	tools := func() []reach.Tool {
		return []reach.Tool{
			{Name: "relay", Reentrancy: reach.Reentrant, Func: echo},
			{Name: "lock", Func: echo}, // non-reentrant
			{Name: "leaf", Reentrancy: reach.Reentrant, Func: echo},
		}
	}
	// Instance A: relay {"to":"b"} -> model -> lock {}, and the stack there.
	a := reach.New(nil)
	var stack []byte
	for _, tl := range tools() {
		if tl.Name == "lock" {
			tl.Func = func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				f, _ := reach.FrameFrom(ctx)
				stack, _ = json.Marshal(f.Ancestry())
				return json.RawMessage(`"held"`), nil
			}
		}
		if tl.Name == "relay" {
			tl.Func = nested(a, func(ctx context.Context, _ json.RawMessage) *reach.Result { return call(a, ctx, "lock", `{}`) })
		}
		a.MustRegister(tl)
	}
	actx, _ := begin(t, a, &reach.RequestOptions{ID: "r1"})
	turn(t, a, actx, func(ctx context.Context) {
		if res := call(a, ctx, "relay", `{"to": "b"}`); res.IsError() {
			t.Fatalf("relay on A: %s", res.ModelText())
		}
	})
	if stack == nil {
		t.Fatal("no stack taken")
	}
	// Instance B: calls placed under A's lock frame.
	b := reach.New(&reach.Options{DefaultBudget: &reach.Budget{Depth: 3}})
	b.MustRegister(tools()...)
	bctx, breq := begin(t, b, &reach.RequestOptions{ID: "r1"})
	var anc []reach.Ancestor
	if err := json.Unmarshal(stack, &anc); err != nil {
		t.Fatal(err)
	}
	under, err := b.AdoptAncestry(breq, anc)
	if err != nil {
		t.Fatal(err)
	}
	if under.Name != "lock" || under.Depth != 2 || under.Parent == nil || under.Parent.Kind != reach.ModelFrame {
		t.Fatalf("the adopted frame is %s at depth %d under %v", under.Name, under.Depth, under.Parent)
	}
	pctx := reach.WithParent(bctx, under)
	tests := []struct {
		tool, args string
		code       string
	}{
		{"relay", `{ "to" : "b" }`, "cycle"},   // on A's stack, with these arguments (normalized)
		{"lock", `{"other": 1}`, "reentrancy"}, // non-reentrant, and on A's stack
		{"relay", `{"to": "c"}`, ""},           // other arguments: no cycle
	}
	for _, tt := range tests {
		res := call(b, pctx, tt.tool, tt.args)
		got := ""
		if res.Error != nil {
			got = res.Error.Code
		}
		if got != tt.code {
			t.Errorf("%s %s under A's stack: %q (%s), want %q", tt.tool, tt.args, got, res.ModelText(), tt.code)
		}
	}
	// Depth: A's stack is 2 deep; B's budget allows 3; leaf under relay under it would be 4.
	b.MustRegister(reach.Tool{Name: "deep", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		res := call(b, ctx, "leaf", `{}`)
		if res.Error != nil {
			return nil, errors.New(res.Error.Code)
		}
		return res.Data, nil
	}})
	if res := call(b, pctx, "deep", `{}`); res.Error == nil || res.Error.Message == "" || !strings.Contains(res.Error.Message, "budget_depth") {
		t.Errorf("a call 4 deep across both instances = %s, want budget_depth", res.ModelText())
	}
}

// joiner joins every request to one begun earlier elsewhere.
type joiner struct {
	began  time.Time
	budget reach.Budget
	began2 []string
}

func (j *joiner) JoinRequest(_ context.Context, o *reach.RequestOptions) (time.Time, error) {
	if o.ID == "final" {
		return time.Time{}, &reach.StopError{Cause: reach.Cause{Mode: reach.Cancel, By: "op", Reason: "enough"}}
	}
	o.Principal, o.Tenant, o.Budget = "alice", "acme", &j.budget
	return j.began, nil
}
func (j *joiner) RequestBegan(_ context.Context, r *reach.Request) error {
	j.began2 = append(j.began2, r.ID())
	return nil
}
func (j *joiner) RequestStopped(context.Context, *reach.Request, reach.Cause) {}
func (j *joiner) RequestEnded(context.Context, *reach.Request)                {}

// A request joined from another runtime is that request: its principal,
// budget and start (its wall clock counts from there); a refusal of the
// joiner refuses the Begin.
func TestBeginJoins(t *testing.T) {
	j := &joiner{began: time.Now().Add(-time.Hour), budget: reach.Budget{ToolCalls: 2, Wall: 2 * time.Hour}}
	rt := reach.New(&reach.Options{Requests: j})
	_, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Principal: "bob", Budget: &reach.Budget{ToolCalls: 99}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	if r.Principal() != "alice" || r.Tenant() != "acme" || r.Budget() != j.budget || !r.Started().Equal(j.began) {
		t.Errorf("joined request: %s/%s, budget %+v, started %s", r.Principal(), r.Tenant(), r.Budget(), r.Started())
	}
	if left := r.Remaining().Wall; left > time.Hour+time.Minute || left < 59*time.Minute {
		t.Errorf("wall clock left %s, want about an hour (it began an hour ago)", left)
	}
	if len(j.began2) != 1 || j.began2[0] != "r1" {
		t.Errorf("RequestBegan was told %v", j.began2)
	}
	_, _, err = rt.Begin(t.Context(), &reach.RequestOptions{ID: "final"})
	var e *reach.Error
	if !errors.As(err, &e) || e.Code != "stopped_cancel" {
		t.Fatalf("Begin of a request stopped elsewhere = %v, want stopped_cancel", err)
	}
}

// StopWith keeps the cause as given.
func TestStopWith(t *testing.T) {
	rt := reach.New(nil)
	ctx, r := begin(t, rt, nil)
	at := time.Now().Add(-time.Second)
	r.StopWith(reach.Cause{Mode: reach.Cancel, By: "budget", Budget: "tool_calls", Reason: "3 of 3", At: at})
	c := r.StopCause()
	if c == nil || c.By != "budget" || c.Budget != "tool_calls" || !c.At.Equal(at) || c.Request != r.ID() || ctx.Err() == nil {
		t.Fatalf("StopWith: cause %+v, context %v", c, ctx.Err())
	}
	if res := call(rt, ctx, "x", `{}`); res.Error == nil || res.Error.Code != "budget_tool_calls" {
		t.Fatalf("a call after a budget stop from elsewhere: %s", res.ModelText())
	}
}

// A stop another runtime applied after this runtime's part of the request
// ended is noted on the part kept here (NoteStop): its state and cause, and
// its sub-requests', become the stop's, for the views; a running request,
// a stronger stop, or a request not kept ended is left as it is.
func TestNoteStop(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "t", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
	ctx, r, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "help"})
	if err != nil {
		t.Fatal(err)
	}
	_, running, _ := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r2"})
	if rt.KeptEnded("r1") != nil || rt.KeptEnded("nobody") != nil {
		t.Fatal("KeptEnded of a running request, or of one not kept")
	}
	at := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	c := reach.Cause{Mode: reach.Cancel, By: "api", Reason: "enough", At: at, Request: "r1"}
	if running.NoteStop(c) || running.State() != reach.RequestRunning {
		t.Fatalf("NoteStop stopped a running request: %s", running.State())
	}
	sub.End()
	r.End()
	kept := rt.KeptEnded("r1")
	if kept != r || r.State() != reach.RequestCompleted {
		t.Fatalf("KeptEnded(r1) = %v, state %s", kept, r.State())
	}
	if !kept.NoteStop(c) {
		t.Fatal("NoteStop did not note the stop of an ended request")
	}
	for _, q := range []*reach.Request{r, sub} {
		if q.State() != reach.RequestState("stopped_cancel") || q.StopCause() == nil || q.StopCause().By != "api" || !q.StopCause().At.Equal(at) {
			t.Errorf("request %s after NoteStop: %s, %+v; want stopped_cancel by api at %s", q.ID(), q.State(), q.StopCause(), at)
		}
	}
	if rt.KeptEnded("r1") != nil {
		t.Error("KeptEnded of a request noted stopped")
	}
	if r.NoteStop(reach.Cause{Mode: reach.Soft, By: "other"}) || r.StopCause().By != "api" {
		t.Errorf("a weaker stop replaced the noted one: %+v", r.StopCause())
	}
}
