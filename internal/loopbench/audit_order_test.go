package loopbench

import (
	"time"

	"github.com/agentreach/reach/internal/audit"
	"os"
	"path/filepath"
	"testing"
)

// TestEmptyTrace: a trace with no events is a valid file (nothing
// to refuse); the benchmark scores it instead of crashing on it.
func TestEmptyTrace(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.json": `{"id":"empty","events":[],"label":{"loop":false,"kind":"long_task"}}`,
		"b.json": `{"id":"no-events","label":{"loop":false,"kind":"long_task"}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	traces, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var r *Report
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Run panicked on a trace without events: %v", p)
			}
		}()
		r = Run(traces, nil)
	}()
	for i, f := range r.Flags["reach"] {
		if f.Flagged != nil || f.ID != traces[i].ID {
			t.Errorf("flag = %+v, want none for %s", f, traces[i].ID)
		}
	}
	if o := r.Overall("reach"); o.FalseKills != 0 || o.Traces != 2 {
		t.Errorf("overall = %+v", o)
	}
	if ds := Decisions(traces[0], nil); len(ds) != 0 {
		t.Errorf("Decisions = %+v, want none", ds)
	}
}

// TestFromAuditParentRecordedLate: an audit event's time is when
// the frame was recorded, after it ended, so the start FromAudit estimates
// (time - latency) runs late by the work done between the end and the
// record (the loop guard's look at a large result). A model call nested
// in a tool call that starts right away can then seem to start before the
// tool call: the exported trace must still nest it under the tool call,
// not cut the link.
func TestFromAuditParentRecordedLate(t *testing.T) {
	at := func(us int64) time.Time { return time.Unix(1_700_000_000, us*1000) }
	evs := []*audit.Event{
		// The turn: started at 0, ended at 10.
		{Time: at(10), Request: "r", Frame: "m1", Kind: "model", Name: "m", Decision: "completed", Tokens: 10, Latency: 10 * time.Microsecond},
		// The nested turn (started at 24) and its call (started at 26).
		{Time: at(25), Request: "r", Frame: "m2", Parent: "t1", Kind: "model", Name: "m", Decision: "completed", Tokens: 5, Latency: time.Microsecond},
		{Time: at(28), Request: "r", Frame: "t2", Parent: "m2", Kind: "tool", Name: "search", Decision: "completed",
			Args: []byte(`{"q":"x"}`), Result: `"hit"`, Latency: 2 * time.Microsecond},
		// The tool call: started at 20, ended at 30, recorded at 45.
		{Time: at(45), Request: "r", Frame: "t1", Parent: "m1", Kind: "tool", Name: "format", Decision: "completed",
			Args: []byte(`{"doc":"d"}`), Result: `"ok"`, Latency: 10 * time.Microsecond},
	}
	tr, _ := FromAudit("r", evs, nil)
	parentOf := map[string]*Event{}
	for i := range tr.Events {
		e := &tr.Events[i]
		if j := tr.Index(e.ParentID()); j >= 0 {
			parentOf[e.ID] = &tr.Events[j]
		}
	}
	// Find the events by what they are.
	find := func(typ, tool string, tokens int64) *Event {
		for i := range tr.Events {
			e := &tr.Events[i]
			if e.Type == typ && e.Tool == tool && (typ != "model" || e.Tokens == tokens) {
				return e
			}
		}
		t.Fatalf("no %s %s event in %+v", typ, tool, tr.Events)
		return nil
	}
	format, nested, search := find("tool_call", "format", 0), find("model", "", 5), find("tool_call", "search", 0)
	if p := parentOf[nested.ID]; p == nil || p.ID != format.ID {
		t.Errorf("the nested model call's parent = %v, want the format call %s: %+v", p, format.ID, tr.Events)
	}
	if p := parentOf[search.ID]; p == nil || p.ID != nested.ID {
		t.Errorf("the search call's parent = %v, want the nested model call %s", p, nested.ID)
	}
	if tr.Index(format.ID) > tr.Index(nested.ID) {
		t.Errorf("the format call comes after the model call it caused: %+v", tr.Events)
	}
}
