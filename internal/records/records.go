// Package records holds what the runtime writes down for others to keep:
// the Result of a call (as the caller, the model and an idempotency
// record see it), the Event of a frame that ended (or of a stop, or a
// breaker's change), the Checkpoint of a tool call, and a request of an
// earlier run as a store kept it (PastRequest, PastFrame), with the
// states of a request.
// Package reach re-exports them; the recorders, the store and the audit
// log read them. This room only describes.
package records

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
)

// Event is what a reach.Recorder is told about a frame when it ends.
type Event struct {
	Time      time.Time // when the frame ended (or the stop happened)
	Started   time.Time // when the frame started
	Root      string    // the root request of the tree
	Trace     [16]byte  // the tree's trace id (reach.Request.Trace)
	Request   string
	Principal string
	Tenant    string // the principal's tenant
	Priority  int    // the request's priority (R8)
	Frame     frames.ID
	Parent    frames.ID // zero for a root frame
	// RemoteParent is the span in another process that a root frame is
	// the child of in the trace (reach.WithRemoteParent), or zero.
	RemoteParent [8]byte
	Kind         frames.Kind
	Name         string
	CallID       string
	Agent        string
	Args         []byte
	State        frames.State
	Error        *fault.Error
	Summary      string
	Result       []byte // the start of the data returned to the model (at most 1 KiB), tool frames only
	Why          string // the caller's reason for the call
	// Upstream is, for a tool frame, the upstream of the tool as the call
	// was dispatched (Tool.Upstream), whatever a reload placed since.
	Upstream string
	Tokens   int64
	// Model frames: the tokens in and out (as charged), the cost charged,
	// and the model that answered when it named one.
	InputTokens, OutputTokens int64
	Cost                      float64
	ResponseModel             string
	// Route is the HTTP route a model frame was served at (reach.WithRoute:
	// the model proxy's "/v1/responses"), or "" (chat completions).
	Route     string
	Latency   time.Duration
	Remaining budget.Budget
	// Replayed is set on a tool frame's event when the call was answered
	// from the idempotency record of an earlier run: its tool did not run
	// again (Result.Replayed).
	Replayed bool
	// Stop is set on the event of a request being stopped (no frame).
	Stop *fault.Cause
	// Breaker is set on the event of a circuit breaker changing state (no
	// frame; Name is "kind:name", and the request fields are those of the
	// call that moved it, if one did).
	Breaker *breaker.Change
}

// Checkpoint is the durable record of one tool call (C5), written before
// it executes and again when it ends, so that a restarted gateway knows
// what ran, what may have run, and what must be compensated.
type Checkpoint struct {
	Request        string
	Root           string
	Frame          frames.ID
	Parent         frames.ID
	Tool           string
	CallID         string
	IdempotencyKey string       // the key of the call's idempotency record, if it has one
	State          frames.State // Executing, then the final state
	Args           json.RawMessage
	// Stored is what the Checkpointer stored of the "executing" checkpoint
	// (its row, with Args masked): set by it when it writes the record (or
	// turns it into the row an idempotency claim writes), and kept in the
	// record of the call's end (Ended copies the record), so that it makes
	// the end's row of it, without masking Args again or spelling the ids
	// anew. The runtime leaves it nil.
	Stored any
	// Entities are the keys, in a store of entity versions that runtimes
	// share (reach.Options.Entities), of the entities the call writes, as
	// it claims them: a name that shows as it is, the SHA-256 of one named
	// from a secret ("sha256:..."). The recovery of a call cut off while it
	// may have run moves them on: its masked arguments cannot name an
	// entity named from a secret. Never the secret itself.
	Entities []string
	// Undo is the compensation registered by a completed write: the undo
	// tool, its arguments and idempotency key, as JSON {"tool","arguments","key"}.
	// The calls of a request that runs undos (a compensation's, or a dead
	// letter's retry) register none: an undo is not undone.
	Undo json.RawMessage
	// ResultDigest is the SHA-256 of a completed call's result data.
	ResultDigest string
	Error        *fault.Error
	Started      time.Time
	// Node is the call's frame (a *reach.Frame), for a Checkpointer whose
	// store other runtimes share: its Ancestry is kept with the
	// checkpoint, so that a call placed under this one elsewhere sees its
	// ancestors.
	Node any
}

// RequestState is where a request is in its life (reach.Request.State). Its
// values are stable names, as the API, the UI and the audit log show them.
type RequestState string

// The states of a request.
const (
	RequestRunning        RequestState = "running"
	RequestStoppedSoft    RequestState = "stopped_soft"    // stopped: what is in flight finishes
	RequestStoppedCancel  RequestState = "stopped_cancel"  // stopped: what is in flight is cancelled
	RequestStoppedIsolate RequestState = "stopped_isolate" // stopped: late results are refused too
	RequestCompleted      RequestState = "completed"       // ended
	RequestInterrupted    RequestState = "interrupted"     // a restart cut it off (see reach.Runtime.RestoreInterrupted)
)

// Stopped reports whether the request was stopped, in any mode.
func (s RequestState) Stopped() bool {
	return s == RequestStoppedSoft || s == RequestStoppedCancel || s == RequestStoppedIsolate
}

// PastRequest is a request of an earlier run of the process, as a store
// kept it: restored (reach.Runtime.RestorePast, or reach.Options.History on a Lookup),
// it is listed and looked up like a request of this run, with its state,
// usage and call graph, but nothing runs in it any more.
type PastRequest struct {
	ID string
	// Parent is the id of the request it was a sub-request of (a
	// hand-off's), "" for a root.
	Parent     string
	Principal  string
	Tenant     string
	Roles      []string
	Attributes map[string]string
	Agent      string
	Scene      string
	Trace      [16]byte
	// State is how it ended: RequestCompleted, a stopped state (Cause
	// says who stopped it and why) or RequestInterrupted (a restart cut it
	// off; Cause says when).
	State   RequestState
	Cause   *fault.Cause
	Budget  budget.Budget
	Usage   budget.Usage // Wall is what it took
	Started time.Time
	Ended   time.Time
	// Load, if not nil, returns its frames (in the order they started)
	// and its sub-requests, when they are first asked for.
	Load func() ([]PastFrame, []*PastRequest)
}

// PastFrame is a frame of a PastRequest.
type PastFrame struct {
	ID      frames.ID
	Parent  frames.ID // zero for a top frame; may be a frame of the parent request
	Kind    frames.Kind
	Name    string
	CallID  string
	Agent   string
	Depth   int
	Args    json.RawMessage
	State   frames.State
	Error   *fault.Error
	Why     string
	Summary string
	Tokens  int64
	Started time.Time
	Ended   time.Time
}

// Status is the outcome of a call in the envelope (R3).
type Status string

// Statuses.
const (
	StatusSuccess   Status = "success"
	StatusError     Status = "error"     // the tool ran and failed
	StatusPending   Status = "pending"   // waiting for approval
	StatusRefused   Status = "refused"   // a guard refused it
	StatusCancelled Status = "cancelled" // stopped, cancelled or out of time
)

// Result is the outcome of one call (R3).
type Result struct {
	CallID   string          `json:"call_id"`
	Status   Status          `json:"status"`
	Data     json.RawMessage `json:"data,omitempty"`
	Error    *fault.Error    `json:"error,omitempty"`
	Summary  string          `json:"summary,omitempty"`
	Notes    []string        `json:"notes,omitempty"`    // for the model: truncation, low budget, warnings
	Replayed bool            `json:"replayed,omitempty"` // returned from the idempotency record
	// Fallback names the tool that answered in place of the one called
	// (reach.Tool.Fallback), when one did.
	Fallback string    `json:"fallback,omitempty"`
	Frame    frames.ID `json:"frame,omitzero"`
}

// IsError reports whether the call did not succeed.
func (r *Result) IsError() bool { return r.Status != StatusSuccess }

// Err returns the result's error as an error value, or nil.
func (r *Result) Err() error {
	if r.Error == nil {
		return nil
	}
	return r.Error
}

// ModelText renders the result as the text a model reads.
func (r *Result) ModelText() string {
	var b strings.Builder
	if r.Error != nil {
		b.WriteString(r.Error.ModelText())
	} else {
		b.Write(r.Data)
	}
	for _, n := range r.Notes {
		b.WriteString("\n[reach] ")
		b.WriteString(n)
	}
	return b.String()
}

// End says how p ended, as the request restored from it keeps it: the
// cause of its end, with p's id, and whether a restart interrupted it or
// it was stopped. A stop's mode is the one its state names, else its
// cause's, else cancel. A request that ended (neither) ended by the
// runtime at p.Ended.
func (p *PastRequest) End() (c fault.Cause, interrupted, stopped bool) {
	mode, stopped := strings.CutPrefix(string(p.State), "stopped_")
	switch {
	case p.State == RequestInterrupted, stopped:
		c = fault.Cause{By: "reach", Reason: string(p.State)}
		if p.Cause != nil {
			c = *p.Cause
		}
		c.Request = p.ID
		if p.State == RequestInterrupted {
			return c, true, false
		}
		if m, err := fault.ParseStopMode(mode); err == nil {
			c.Mode = m
		} else if c.Mode == fault.Running {
			c.Mode = fault.Cancel
		}
		return c, false, true
	}
	return fault.Cause{Mode: fault.Cancel, By: "runtime", Reason: "request ended", At: p.Ended, Request: p.ID}, false, false
}
