package loopbench

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/agentreach/reach/internal/audit"
)

// FromAudit turns a request's audit events into a trace (format v1), so a
// recorded request can be replayed through the benchmark and under another
// configuration. Frames become events in the order they started; a refused
// or failed call is an event with status "error" and its code as the error
// type. Tool contracts are not in the audit log: tools default to
// read/reentrant unless contracts names them. The label is left for a
// person to fill in. It also returns, per event id, what the runtime
// decided when it was recorded: Allowed, Refused, or Held (for approval).
func FromAudit(request string, evs []*audit.Event, contracts map[string]ToolContract) (*Trace, map[string]Verdict) {
	type frame struct {
		e     *audit.Event
		start time.Time
	}
	var fs []frame
	for _, e := range evs {
		switch e.Kind {
		case "tool", "model", "delegate":
			if e.Frame != "" {
				fs = append(fs, frame{e, e.Time.Add(-e.Latency)})
			}
		}
	}
	slices.SortStableFunc(fs, func(a, b frame) int { return a.start.Compare(b.start) })
	// The start is an estimate that runs late by the work done between a
	// frame's end and its record: a tool call that returned a large result
	// often seems to start after a model call nested in it. A parent still
	// goes before its children.
	at := make(map[string]int, len(fs))
	for i, f := range fs {
		at[f.e.Frame] = i
	}
	placed := make([]bool, len(fs))
	ordered := make([]frame, 0, len(fs))
	var place func(i int)
	place = func(i int) {
		if placed[i] {
			return
		}
		placed[i] = true
		if p, ok := at[fs[i].e.Parent]; ok {
			place(p)
		}
		ordered = append(ordered, fs[i])
	}
	for i := range fs {
		place(i)
	}
	fs = ordered
	ids := map[string]string{}
	for i, f := range fs {
		ids[f.e.Frame] = "e" + strconv.Itoa(i+1)
	}
	t := &Trace{ID: request, Description: "exported from the audit log", Tools: map[string]ToolContract{}, Label: Label{Kind: "unlabelled"}}
	recorded := map[string]Verdict{}
	for _, f := range fs {
		e := f.e
		if t.Principal == "" && e.Principal != "" {
			t.Principal, t.Tenant = e.Principal, e.Tenant
		}
		ev := Event{ID: ids[e.Frame], Agent: e.Agent}
		if p, ok := ids[e.Parent]; ok {
			ev.Parent = &p
		}
		switch e.Kind {
		case "model":
			ev.Type, ev.Tokens = "model", e.Tokens
		case "delegate":
			ev.Type, ev.To = "delegate", e.Name
			ev.Task = string(e.Args)
			json.Unmarshal(e.Args, &ev.Task)
		default:
			ev.Type, ev.Tool, ev.Args, ev.Status = "tool_call", e.Name, e.Args, "ok"
			if len(ev.Args) == 0 {
				ev.Args = json.RawMessage("{}")
			}
			if json.Valid([]byte(e.Result)) && e.Result != "" {
				ev.Result = json.RawMessage(e.Result)
			} else {
				ev.Result, _ = json.Marshal(e.Result)
			}
			if e.Decision != "completed" {
				ev.Status, ev.ErrorType = "error", e.Code
				ev.Result, _ = json.Marshal(e.Message)
			}
			if _, ok := t.Tools[e.Name]; !ok {
				c, ok := contracts[e.Name]
				if !ok {
					c = ToolContract{Access: "read", Reentrancy: "reentrant"}
				}
				if c.Upstream == "" {
					c.Upstream = e.Upstream
				}
				t.Tools[e.Name] = c
			} else if c := t.Tools[e.Name]; c.Upstream == "" && e.Upstream != "" {
				c.Upstream = e.Upstream // a later call recorded it (an older one, before reach recorded it, did not)
				t.Tools[e.Name] = c
			}
		}
		switch e.Decision {
		case "refused", "cancelled":
			recorded[ev.ID] = Refused
		case "awaiting_approval":
			recorded[ev.ID] = Held
		default:
			recorded[ev.ID] = Allowed
		}
		t.Events = append(t.Events, ev)
	}
	if len(t.Events) > 0 && t.check() != nil {
		// Parents recorded after their children (a clock step): keep the
		// events but detach what cannot be linked.
		seen := map[string]bool{}
		for i := range t.Events {
			if p := t.Events[i].ParentID(); p != "" && !seen[p] {
				t.Events[i].Parent = nil
			}
			seen[t.Events[i].ID] = true
		}
		t.check()
	}
	return t, recorded
}

// Verdict is what the runtime decided on a call.
type Verdict string

const (
	Allowed Verdict = "allowed"
	Refused Verdict = "refused"
	Held    Verdict = "held for approval"
)

// VerdictOf is the outcome of a replayed decision.
func VerdictOf(d Decision) Verdict {
	switch {
	case !d.Refused:
		return Allowed
	case d.Code == "approval_required":
		return Held
	}
	return Refused
}
