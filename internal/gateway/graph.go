package gateway

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
)

// frameJSON is one frame of a request's call graph.
type frameJSON struct {
	ID        reach.FrameID   `json:"id"`
	Parent    *reach.FrameID  `json:"parent"`
	Request   string          `json:"request"`
	Kind      string          `json:"kind"`
	Name      string          `json:"name"`
	CallID    string          `json:"call_id,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	Depth     int             `json:"depth"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Status    string          `json:"status"`
	Error     *reach.Error    `json:"error,omitempty"`
	Why       string          `json:"why,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	CycleTo   *reach.FrameID  `json:"cycle_to,omitempty"`
	Started   time.Time       `json:"started"`
	Ended     *time.Time      `json:"ended"`
	Tokens    int64           `json:"tokens"`
}

// graphJSON is GET /v1/requests/{id}/graph?format=json.
type graphJSON struct {
	Request string      `json:"request"`
	Frames  []frameJSON `json:"frames"`
}

func graphOf(r *reach.Request) graphJSON {
	return graphJSON{Request: r.ID(), Frames: graphFrames(r)}
}

// graphFrames lists the frames of r and of its sub-requests, each request's
// in creation order, parents before children.
func graphFrames(r *reach.Request) []frameJSON {
	out := []frameJSON{}
	var walk func(*reach.Request)
	walk = func(q *reach.Request) {
		for _, f := range q.Frames() {
			out = append(out, frameOf(f))
		}
		for _, c := range q.Children() {
			walk(c)
		}
	}
	walk(r)
	return out
}

func frameOf(f *reach.Frame) frameJSON {
	j := frameJSON{ID: f.ID, Request: f.Request.ID(), Kind: f.Kind.String(), Name: f.Name, CallID: f.CallID,
		Agent: f.Agent, Depth: f.Depth, Status: f.State().String(), Error: f.Err(), Why: f.Why(),
		Summary: f.Summary(), Started: f.Started.UTC(), Tokens: f.Tokens()}
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
		e = e.UTC()
		j.Ended = &e
	}
	return j
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
