package loopbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// The bar of the issue: detection >= 0.95 and no false kills.
func checkBar(t *testing.T, r *Report) {
	t.Helper()
	var buf bytes.Buffer
	r.WriteTable(&buf)
	t.Log("\n" + buf.String())
	for i, tr := range r.Traces {
		o := Score(tr, r.Flags["reach"][i])
		if o.FalseKill {
			t.Errorf("%s (%s): false kill at %v: %s", tr.ID, tr.Label.Kind, *r.Flags["reach"][i].Flagged, r.Flags["reach"][i].Reason)
		}
		if o.Missed {
			t.Logf("%s (%s): missed", tr.ID, tr.Label.Kind)
		}
	}
	if o := r.Overall("reach"); o.Detection < 0.95 {
		t.Errorf("detection %.2f < 0.95", o.Detection)
	}
}

// The project's own traces: the graph kinds here, the loop kinds beside the
// detectors.
func TestOwnTraces(t *testing.T) {
	var traces []*Trace
	for _, dir := range []string{"testdata", "../loops/testdata"} {
		ts, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, ts...)
	}
	checkBar(t, Run(traces, nil))
}

// The public traces, when the shared folder is beside the clone.
func TestPublicTraces(t *testing.T) {
	dir := "../../../shared/loopbench/traces"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no public traces at", dir)
	}
	traces, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := Run(traces, nil)
	checkBar(t, r)
	// The baselines each catch at most a third: reach must beat them.
	for _, b := range Baselines {
		if o := r.Overall(b.Name); o.Detection >= r.Overall("reach").Detection {
			t.Errorf("baseline %s detects %.2f, reach no better", b.Name, o.Detection)
		}
	}
}

func ev(id, parent, typ string, f func(*Event)) Event {
	e := Event{ID: id, Type: typ}
	if parent != "" {
		e.Parent = &parent
	}
	if f != nil {
		f(&e)
	}
	return e
}

func mustTrace(t *testing.T, tr *Trace) *Trace {
	t.Helper()
	if err := tr.check(); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestBaselines(t *testing.T) {
	call := func(tool, args string) func(*Event) {
		return func(e *Event) {
			e.Tool, e.Args, e.Status, e.Result = tool, json.RawMessage(args), "ok", json.RawMessage(`"r"`)
		}
	}
	var evs []Event
	for i := range 14 {
		m := fmt.Sprintf("m%d", i)
		evs = append(evs, ev(m, "", "model", nil), ev(fmt.Sprintf("c%d", i), m, "tool_call", call("get", fmt.Sprintf(`{"i":%d}`, i))))
	}
	long := mustTrace(t, &Trace{ID: "long", Events: evs, Label: Label{Kind: "long_task"}})
	if f := recursionLimit(long); f.Flagged == nil || *f.Flagged != evs[25].ID {
		t.Errorf("recursion_limit flagged %v, want the 26th event", f.Flagged)
	}
	rep := mustTrace(t, &Trace{ID: "rep", Events: []Event{
		ev("m1", "", "model", nil), ev("c1", "m1", "tool_call", call("get", `{"a":1,"b":2}`)),
		ev("m2", "", "model", nil), ev("c2", "m2", "tool_call", call("get", `{"b":2, "a":1}`)),
		ev("m3", "", "model", nil), ev("c3", "m3", "tool_call", call("get", `{"a":1,"b":2}`)),
	}, Label: Label{Kind: "x"}})
	if f := consecutive3(rep); f.Flagged == nil || *f.Flagged != "c3" {
		t.Errorf("consecutive_3 flagged %v, want c3", f.Flagged)
	}
	nest := mustTrace(t, &Trace{ID: "nest", Events: []Event{
		ev("m1", "", "model", nil), ev("c1", "m1", "tool_call", call("plan", `{"t":1}`)),
		ev("m2", "c1", "model", nil), ev("c2", "m2", "tool_call", call("plan", `{"t":2}`)),
	}, Label: Label{Kind: "x"}})
	if f := nameStack(nest); f.Flagged == nil || *f.Flagged != "c2" {
		t.Errorf("name_stack flagged %v, want c2", f.Flagged)
	}
}

func TestScore(t *testing.T) {
	var evs []Event
	for i := 1; i <= 6; i++ {
		evs = append(evs, ev(fmt.Sprintf("e%d", i), "", "model", func(e *Event) { e.Tokens = 100 }))
	}
	loop := mustTrace(t, &Trace{ID: "l", Events: evs, Label: Label{Loop: true, Kind: "k", Earliest: "e3", Onset: "e4"}})
	at := func(id string) Flag { return Flag{ID: "l", Flagged: &id} }
	for _, tc := range []struct {
		f    Flag
		want Outcome
	}{
		{at("e2"), Outcome{Kind: "k", Loop: true, FalseKill: true}},
		{at("e3"), Outcome{Kind: "k", Loop: true, Detected: true, Delay: -1, TokensLate: 0}},
		{at("e5"), Outcome{Kind: "k", Loop: true, Detected: true, Delay: 1, TokensLate: 200}},
		{Flag{ID: "l"}, Outcome{Kind: "k", Loop: true, Missed: true, TokensLate: 300}},
	} {
		if got := Score(loop, tc.f); got != tc.want {
			t.Errorf("Score(%v) = %+v, want %+v", tc.f.Flagged, got, tc.want)
		}
	}
	clean := mustTrace(t, &Trace{ID: "c", Events: evs, Label: Label{Kind: "k"}})
	if o := Score(clean, at("e6")); !o.FalseKill {
		t.Error("a flag on a no-loop trace is not a false kill")
	}
}

func TestDecodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"events":[]}`: "no id",
		`{"id":"x","events":[{"id":"e1","parent":"e0","type":"model"}]}`:                        "not an earlier event",
		`{"id":"x","events":[{"id":"e1","type":"thinking"}]}`:                                   "unknown type",
		`{"id":"x","events":[{"id":"e1","type":"model"},{"id":"e1","type":"model"}]}`:           "used twice",
		`{"id":"x","events":[{"id":"e1","type":"model"}],"label":{"loop":true,"kind":"k"}}`:     "needs earliest",
		`{"id":"x","events":[{"id":"e1","type":"model"}],"label":{"earliest":"e9","kind":"k"}}`: "not in the trace",
	} {
		if _, err := Decode([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want %q", in, err, want)
		}
	}
}

// Export writes a live request in the trace format; replaying the export
// reaches the same verdict as the live run.
func TestExportRoundTrip(t *testing.T) {
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}})
	status := 0
	rt.MustRegister(reach.Tool{Name: "job_status", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		status++
		if status > 2 {
			status = 2 // the job stalls
		}
		return json.Marshal(map[string]any{"state": "running", "progress": status * 10})
	}})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "live"})
	var refusedAt int
	for i := 1; i <= 6 && refusedAt == 0; i++ {
		mctx, m, err := rt.BeginModel(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		res := rt.Call(mctx, &reach.Call{ID: fmt.Sprint(i), Tool: "job_status", Arguments: json.RawMessage(`{"job":"j1"}`)})
		m.EndModel(reach.TokenUsage{Input: 50, Text: "checking"})
		if res.Status == reach.StatusRefused {
			refusedAt = i
		}
	}
	req.End()
	if refusedAt == 0 {
		t.Fatal("the stalled poll was never refused")
	}
	tr := Export(req, rt.Tools())
	if n := len(tr.Events); n != 2*refusedAt {
		t.Fatalf("exported %d events, want %d", n, 2*refusedAt)
	}
	last := tr.Events[len(tr.Events)-1]
	if last.Type != "tool_call" || last.Status != "error" || !strings.HasPrefix(last.ErrorType, "loop_") {
		t.Fatalf("last event = %+v, want the refused call", last)
	}
	// Replay everything before the refusal: the replay refuses the same event.
	tr.Events[len(tr.Events)-1].Status, tr.Events[len(tr.Events)-1].ErrorType = "ok", ""
	tr.Events[len(tr.Events)-1].Result = tr.Events[len(tr.Events)-3].Result
	data, _ := json.Marshal(tr)
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	f := Replay(back, nil)
	if f.Flagged == nil || *f.Flagged != last.ID {
		t.Fatalf("replay flagged %v, want %s", f.Flagged, last.ID)
	}
}
