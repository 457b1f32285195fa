// Package render is the one projection of a request tree: Frames walks a
// request and its sub-requests into Frame values, which are the call graph
// the HTTP API answers with (GET /v1/requests/{id}/graph), the rows of the
// web UI, and what SVG and DOT draw for the API, the UI and the CLI.
//
//	frames := render.Frames(req)
//	w.Write(render.SVG(frames))
package render

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentreach/reach"
)

// Frame is one frame of a request's call graph.
type Frame struct {
	ID        reach.FrameID   `json:"id"`
	Parent    *reach.FrameID  `json:"parent"`
	Request   string          `json:"request"`
	Kind      string          `json:"kind"` // model, tool, delegate
	Name      string          `json:"name"`
	CallID    string          `json:"call_id,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	Depth     int             `json:"depth"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // a tool call's; a delegation's task as a JSON string
	Status    string          `json:"status"`              // completed, failed, refused, awaiting_approval, cancelled, executing, ...
	Error     *reach.Error    `json:"error,omitempty"`
	Why       string          `json:"why,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	CycleTo   *reach.FrameID  `json:"cycle_to,omitempty"` // the frame a refused call would have re-entered
	Started   time.Time       `json:"started"`
	Ended     *time.Time      `json:"ended"`
	Tokens    int64           `json:"tokens"`
	// Folded counts the frames under this one that a viewer folded away
	// (Fold; drawn as "+N" on its box).
	Folded int `json:"folded,omitempty"`
	// AuditLost says that an event of the frame never reached the audit
	// log (dropped: its queue was full; or its commit failed): the frame
	// is shown from memory, and the log lacks it.
	AuditLost bool `json:"audit_lost,omitempty"`

	ran time.Duration // Ended - Started on this process's monotonic clock, when Of made it
}

// Graph is a request's call graph as the API answers it.
type Graph struct {
	Request string `json:"request"`
	// Priority is the request's priority for the rate limits (R8), left
	// out when it is the default, 0.
	Priority int     `json:"priority,omitempty"`
	Frames   []Frame `json:"frames"`
}

// GraphOf returns r's call graph.
func GraphOf(r *reach.Request) Graph {
	return Graph{Request: r.ID(), Priority: r.Priority(), Frames: Frames(r)}
}

// Caption is the line the drawings of r's graph show above its frames
// (SVGOptions.Caption, DOTWith): what of the request itself is not the
// default, its priority; "" when nothing is.
func Caption(r *reach.Request) string {
	if p := r.Priority(); p != 0 {
		return "request " + r.ID() + ": priority " + strconv.Itoa(p)
	}
	return ""
}

// Frames lists the frames of r and of its sub-requests, each request's in
// creation order, parents before children; never nil.
func Frames(r *reach.Request) []Frame {
	out := []Frame{}
	var walk func(*reach.Request)
	walk = func(q *reach.Request) {
		for _, f := range q.Frames() {
			out = append(out, Of(f))
		}
		for _, c := range q.Children() {
			walk(c)
		}
	}
	walk(r)
	return out
}

// Of projects one frame.
func Of(f *reach.Frame) Frame {
	j := Frame{ID: f.ID, Request: f.Request.ID(), Kind: f.Kind.String(), Name: f.Name, CallID: f.CallID,
		Agent: f.Agent, Depth: f.Depth, Status: f.State().String(), Error: f.Err(), Why: f.Why(),
		Summary: f.Summary(), Started: f.Started.UTC(), Tokens: f.Tokens(), AuditLost: f.AuditLost()}
	if a := f.ShownArgs(); len(a) > 0 && json.Valid(a) {
		j.Arguments = a
	}
	if f.Parent != nil {
		id := f.Parent.ID
		j.Parent = &id
	}
	if c := f.CycleTo(); c != nil {
		id := c.ID
		j.CycleTo = &id
	}
	if e := f.Ended(); !e.IsZero() {
		j.ran = e.Sub(f.Started)
		e = e.UTC()
		j.Ended = &e
	}
	return j
}

// Latency is how long the frame ran, to 10 µs (zero while it runs).
func (f *Frame) Latency() time.Duration {
	d := f.ran
	if d == 0 && f.Ended != nil {
		d = f.Ended.Sub(f.Started)
	}
	return d.Round(10 * time.Microsecond)
}

// ArgumentsText is the frame's arguments as the drawings show them: a tool
// call's JSON, a delegation's task, nothing for a model turn.
func (f *Frame) ArgumentsText() string {
	switch f.Kind {
	case "tool":
		return string(f.Arguments)
	case "delegate":
		var task string
		json.Unmarshal(f.Arguments, &task)
		return task
	}
	return ""
}

// ErrorText is the message of the frame's error, if it has one.
func (f *Frame) ErrorText() string {
	if f.Error == nil {
		return ""
	}
	return f.Error.Message
}
