package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
)

// TestStopIsDurable: a stop is stored when Stop returns, with its cause
// and mode, before the request ends; the stopped request keeps its state
// when it ends; and after a restart its id starts no new work: Begin is
// refused with the stop's code and cause.
func TestStopIsDurable(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	rt := durableRuntime(st, bookTools(func(string) {})...)
	_, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "trip", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	req.Stop(reach.Isolate, "bob", "wrong city")
	stored, err := st.GetRequest(ctx, "trip")
	if err != nil || stored.State != "stopped" || !stored.Ended.IsZero() || DecodeCause(stored.Cause).Mode != reach.Isolate ||
		!strings.Contains(string(stored.Cause), "wrong city") {
		t.Fatalf("after Stop, the store has %+v (%v); want it stopped (isolate), not ended, with its cause", stored, err)
	}
	req.End()
	if stored, _ = st.GetRequest(ctx, "trip"); stored.State != "stopped" || stored.Ended.IsZero() {
		t.Fatalf("after End: %+v; want stopped and ended", stored)
	}
	later := durableRuntime(st, bookTools(func(string) {})...)
	if _, err := Recover(ctx, st, later, nil); err != nil {
		t.Fatal(err)
	}
	_, _, err = later.Begin(ctx, &reach.RequestOptions{ID: "trip", Principal: "alice"})
	e, ok := errors.AsType[*reach.Error](err)
	if !ok || e.Code != "stopped_isolate" || !strings.Contains(e.Message, "bob") || !strings.Contains(e.Message, "wrong city") {
		t.Fatalf("Begin(trip) after a restart = %v; want it refused as stopped (isolate) by bob", err)
	}
	if again, _ := st.GetRequest(ctx, "trip"); again.State != "stopped" {
		t.Errorf("the refused Begin changed the stored request: %+v", again)
	}
}

// TestRecoverStoppedRequest: a request stopped (not ended) when the
// gateway died stays stopped after the restart, with its cause, and the
// restart runs the undos its stop had not run.
func TestRecoverStoppedRequest(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	var undone []string
	old := durableRuntime(st, bookTools(func(ref string) { undone = append(undone, ref) })...)
	rctx, req, err := old.Begin(ctx, &reach.RequestOptions{ID: "trip", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := old.Call(rctx, &reach.Call{ID: "b1", Tool: "book", Arguments: json.RawMessage(`{"ref":"x"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// Soft: nothing is compensated by the stop itself; the gateway dies
	// before the request ends.
	req.Stop(reach.Soft, "bob", "enough")
	rt := durableRuntime(st, bookTools(func(ref string) { undone = append(undone, ref) })...)
	rep, err := Recover(ctx, st, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Stopped, rep.Interrupted, undone) != "[trip] [] [x]" {
		t.Errorf("recover: stopped %v, interrupted %v, undone %v; want trip stopped, its booking undone", rep.Stopped, rep.Interrupted, undone)
	}
	stored, _ := st.GetRequest(ctx, "trip")
	if stored.State != "stopped" || stored.Ended.IsZero() || !strings.Contains(string(stored.Cause), "enough") {
		t.Errorf("stored after recover: %+v; want stopped, ended, with the stop's cause", stored)
	}
	if _, err := Recover(ctx, st, durableRuntime(st, bookTools(func(ref string) { undone = append(undone, ref) })...), nil); err != nil || len(undone) != 1 {
		t.Errorf("a second restart: %v, undone %v; want nothing undone again", err, undone)
	}
}

// TestHistoryRebuildsRequests: after a restart, the requests of the
// earlier run come back from the store, with their state, usage and call
// graph (every frame, with its parent, state and error) as the runtime
// showed them before; frames are read when first asked for; a stopped one
// refuses new work.
func TestHistoryRebuildsRequests(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := New(st, nil, nil)
	tools := []reach.Tool{
		{Name: "search", Access: reach.Read, Reentrancy: reach.Reentrant,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"hits":3}`), nil
			}},
		{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, InputSchema: json.RawMessage(`{"type":"object","required":["ref"]}`),
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }},
	}
	old := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, Recorder: log, DefaultBudget: &reach.Budget{}})
	old.MustRegister(tools...)
	rctx, req, err := old.Begin(ctx, &reach.RequestOptions{ID: "trip", Principal: "alice", Scene: "travel"})
	if err != nil {
		t.Fatal(err)
	}
	mctx, turn, err := old.BeginModel(rctx, "gpt")
	if err != nil {
		t.Fatal(err)
	}
	old.Call(mctx, &reach.Call{ID: "s1", Tool: "search", Arguments: json.RawMessage(`{"q":"rome"}`)})
	old.Call(mctx, &reach.Call{ID: "b1", Tool: "book", Arguments: json.RawMessage(`{"ref":"R1"}`)})
	old.Call(mctx, &reach.Call{ID: "b2", Tool: "book", Arguments: json.RawMessage(`{}`)}) // refused: no ref
	turn.EndModel(reach.TokenUsage{Input: 100, Output: 20})
	req.End()
	_, halted, _ := old.Begin(ctx, &reach.RequestOptions{ID: "halted", Principal: "bob"})
	halted.Stop(reach.Cancel, "ops", "runaway")
	halted.End()
	want := map[string]string{}
	for _, f := range req.Frames() {
		want[f.ID.String()] = frameLine(f)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	// The restart.
	h := NewHistory(st, nil)
	loads := 0
	past := func(id string) (*reach.PastRequest, bool) {
		p, ok := h.Past(id)
		if ok {
			load := p.Load
			p.Load = func() ([]reach.PastFrame, []*reach.PastRequest) { loads++; return load() }
		}
		return p, ok
	}
	cp2 := New(st, nil, nil)
	rt := reach.New(&reach.Options{Checkpoints: cp2, Requests: cp2, History: past, DefaultBudget: &reach.Budget{}})
	rt.MustRegister(tools...)
	if err := h.Restore(ctx, rt, 100); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range rt.Requests() {
		listed = append(listed, r.ID()+" "+string(r.State()))
	}
	if fmt.Sprint(listed) != "[halted stopped_cancel trip completed]" {
		t.Errorf("the request list after a restart: %v", listed)
	}
	if _, ok := rt.Lookup("nope"); ok {
		t.Error("Lookup of an unknown request found one")
	}
	rt2 := reach.New(&reach.Options{History: past})
	r, ok := rt2.Lookup("trip")
	if !ok || r.State() != "completed" || r.Scene() != "travel" || r.Principal() != "alice" {
		t.Fatalf("Lookup(trip) = %v, %v", r, ok)
	}
	if u := r.Usage(); u.ToolCalls != 3 || u.Tokens != 120 || u.Turns != 1 {
		t.Errorf("trip's usage after a restart: %+v", u)
	}
	if loads != 0 {
		t.Errorf("Lookup read the frames (%d loads); they are read when first asked for", loads)
	}
	got := map[string]string{}
	for _, f := range r.Frames() {
		got[f.ID.String()] = frameLine(f)
	}
	r.Frames()
	if loads != 1 {
		t.Errorf("the frames were read %d times, want once", loads)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("frame %s after a restart:\n got  %s\n want %s", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d frames after a restart, want %d", len(got), len(want))
	}
	h2, _ := rt2.Lookup("halted")
	res := rt2.Call(h2.Context(), &reach.Call{ID: "x", Tool: "search", Arguments: json.RawMessage(`{}`)})
	if res.Error == nil || res.Error.Code != "stopped_cancel" {
		t.Errorf("a call in the stopped request of an earlier run: %+v", res.Error)
	}
	if _, _, err := rt2.Begin(ctx, &reach.RequestOptions{ID: "halted"}); err == nil || !strings.Contains(err.Error(), "runaway") {
		t.Errorf("Begin(halted) = %v; want it refused as stopped", err)
	}
}

// frameLine is what the graph shows of a frame.
func frameLine(f *reach.Frame) string {
	parent := ""
	if f.Parent != nil {
		parent = f.Parent.ID.String()
	}
	code := ""
	if e := f.Err(); e != nil {
		code = e.Code
	}
	return strings.Join([]string{f.Kind.String(), f.Name, f.CallID, parent, f.State().String(), code, string(f.Args),
		fmt.Sprint(f.Depth, " ", f.Tokens()), f.Started.Round(time.Millisecond).UTC().Format(time.StampMilli)}, " | ")
}
