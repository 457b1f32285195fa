package durable

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentreach/reach/internal/policy/approval"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/records"
	"github.com/agentreach/reach/internal/store"
)

// HistoryStore is what History reads: the requests, their checkpoints and
// the audit log.
type HistoryStore interface {
	Store
	store.AuditLog
}

// History gives the runtime the requests of earlier runs back from the
// store (reach.Options.History, reach.Runtime.RestorePast): the request
// list, each request's state, usage and cause, and its call graph, rebuilt
// from its audit events (every frame that ended) and its checkpoints (the
// writes a restart cut off). Safe for concurrent use.
//
//	h := durable.NewHistory(st, logger)
//	rt := reach.New(&reach.Options{History: h.Past, ...})
//	h.Restore(ctx, rt, 1000) // the newest requests, for the list
type History struct {
	st  HistoryStore
	log *slog.Logger
}

// NewHistory returns a History over st.
func NewHistory(st HistoryStore, log *slog.Logger) *History {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &History{st: st, log: log}
}

// historyTimeout bounds one read of the history.
const historyTimeout = 10 * time.Second

// Past implements reach.Options.History: the stored request id, unless it
// is unknown or still running (a running request is its runtime's).
func (h *History) Past(id string) (*reach.PastRequest, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
	defer cancel()
	rec, err := h.st.GetRequest(ctx, id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Error("history: reading a request", "request", id, "err", err)
		}
		return nil, false
	}
	p := h.past(rec)
	return p, p != nil
}

// Restore restores the newest n root requests of earlier runs in rt (see
// reach.Runtime.RestorePast), oldest first, so that rt lists them. Their
// frames are read when they are first asked for.
func (h *History) Restore(ctx context.Context, rt *reach.Runtime, n int) error {
	recs, err := h.st.ListRequests(ctx, store.RequestFilter{Roots: true, Limit: n})
	if err != nil {
		return err
	}
	for _, rec := range slices.Backward(recs) {
		if p := h.past(rec); p != nil {
			rt.RestorePast(p)
		}
	}
	return nil
}

// pastOf is past for a History that may be nil.
func (h *History) pastOf(rec *store.Request) *reach.PastRequest {
	if h == nil {
		return nil
	}
	return h.past(rec)
}

// past converts the stored request rec, or returns nil for one running.
func (h *History) past(rec *store.Request) *reach.PastRequest {
	p := &reach.PastRequest{ID: rec.ID, Parent: rec.Parent, Principal: rec.Principal, Tenant: rec.Tenant, Roles: rec.Roles, Attributes: rec.Attrs,
		Agent: rec.Agent, Scene: rec.Scene, Started: rec.Started, Ended: rec.Ended}
	switch rec.State {
	case "ended":
		p.State = reach.RequestCompleted
	case "stopped":
		c := DecodeCause(rec.Cause)
		if c.Mode == reach.Running {
			c.Mode = reach.Cancel
		}
		p.State, p.Cause = reach.RequestState("stopped_"+c.Mode.String()), &c
	case "interrupted":
		c := DecodeCause(rec.Cause)
		p.State, p.Cause = reach.RequestInterrupted, &c
	default:
		return nil
	}
	if t, err := hex.DecodeString(rec.Trace); err == nil && len(t) == len(p.Trace) {
		copy(p.Trace[:], t)
	}
	json.Unmarshal(rec.Budget, &p.Budget)
	json.Unmarshal(rec.Usage, &p.Usage)
	if p.Usage.Wall == 0 && !rec.Ended.IsZero() {
		p.Usage.Wall = rec.Ended.Sub(rec.Started)
	}
	id := rec.ID
	p.Load = func() ([]reach.PastFrame, []*reach.PastRequest) { return h.load(id) }
	return p
}

// Frames reads back the ended frames of request id, one of this run, from
// its audit events (reach.Options.StoredFrames); flush the audit log
// first, so that they are all there.
func (h *History) Frames(id string) []reach.PastFrame {
	ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
	defer cancel()
	return h.eventFrames(ctx, id)
}

// eventFrames reads the frames of request id from its audit events, read
// framePage at a time up to the log's head when it began: what is held is
// the frames and a page, not every event too (a request of 100,000
// events held 153-179 MB read whole).
func (h *History) eventFrames(ctx context.Context, id string) []reach.PastFrame {
	head, _, err := h.st.AuditHead(ctx)
	page := framePage
	if _, ok := h.st.(store.RequestsAuditor); !ok {
		page = math.MaxInt // a store that reads no page alone: its whole log, once
	}
	var out []reach.PastFrame
	var settled []*audit.Event // approval events that settle a waiting frame, of any page
	for after := int64(0); err == nil; {
		var evs []*audit.Event
		if evs, err = audit.ShowRequests(ctx, h.st, []string{id}, after, head, page); err != nil {
			break
		}
		if len(evs) > 0 && evs[0].Seq <= after {
			err = fmt.Errorf("the store read events after %d from %d", after, evs[0].Seq)
			break
		}
		fs, st := pastFrames(evs)
		out, settled = append(out, fs...), append(settled, st...)
		if len(evs) < page {
			return h.settle(ctx, id, out, settled)
		}
		after = evs[len(evs)-1].Seq
	}
	h.log.Error("history: reading a request's audit events", "request", id, "err", err)
	return h.settle(ctx, id, out, settled)
}

// framePage is how many of a request's audit events eventFrames reads at
// a time.
const framePage = 1000

// load reads the frames and sub-requests of the stored request id.
func (h *History) load(id string) ([]reach.PastFrame, []*reach.PastRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
	defer cancel()
	frames := h.eventFrames(ctx, id)
	// The writes a restart cut off have a checkpoint and no event.
	cps, err := h.st.RequestFrames(ctx, id)
	if err != nil {
		h.log.Error("history: reading a request's checkpoints", "request", id, "err", err)
	}
	seen := map[reach.FrameID]bool{}
	for _, f := range frames {
		seen[f.ID] = true
	}
	for _, cp := range cps {
		fid, err := reach.ParseFrameID(cp.Frame)
		if err != nil || seen[fid] || cp.Kind == "delegate" {
			// A delegate frame's row (Checkpoints.Delegated) keeps its
			// stack for other instances: the frame is its parent
			// request's, whose events show it.
			continue
		}
		pf := reach.PastFrame{ID: fid, Kind: reach.ToolFrame, Name: cp.Name, CallID: cp.CallID, Args: cp.Args,
			Started: cp.Started, Ended: cp.Updated, State: reach.Cancelled}
		pf.State.UnmarshalText([]byte(cp.State))
		pf.Parent, _ = reach.ParseFrameID(cp.Parent)
		if len(cp.Error) > 0 {
			var e reach.Error
			if json.Unmarshal(cp.Error, &e) == nil {
				pf.Error = &e
			}
		}
		frames = append(frames, pf)
	}
	records.SortPast(frames) // parents first: a depth is its parent's
	setDepths(frames)
	subs, err := h.st.ListRequests(ctx, store.RequestFilter{Parent: id, Limit: 100000})
	if err != nil {
		h.log.Error("history: reading a request's sub-requests", "request", id, "err", err)
	}
	var children []*reach.PastRequest
	for _, rec := range slices.Backward(subs) { // oldest first
		if p := h.past(rec); p != nil {
			children = append(children, p)
		}
	}
	return frames, children
}

// pastFrames converts the frame events of a request (tool calls, model
// calls, delegations), and returns apart the approval events that settle
// a waiting frame (settle).
func pastFrames(events []*audit.Event) ([]reach.PastFrame, []*audit.Event) {
	var out []reach.PastFrame
	var settled []*audit.Event
	for _, e := range events {
		var kind reach.FrameKind
		switch e.Kind {
		case "approval":
			if e.Frame != "" {
				settled = append(settled, e)
			}
			continue
		case "tool":
			kind = reach.ToolFrame
		case "model":
			kind = reach.ModelFrame
		case "delegate":
			kind = reach.DelegateFrame
		default:
			continue
		}
		id, err := reach.ParseFrameID(e.Frame)
		if err != nil || id == 0 {
			continue
		}
		pf := reach.PastFrame{ID: id, Kind: kind, Name: e.Name, CallID: e.CallID, Agent: e.Agent, Why: e.Why,
			Summary: e.Result, Tokens: e.Tokens, Started: e.Time.Add(-e.Latency), Ended: e.Time, State: reach.Completed}
		if json.Valid(e.Args) {
			pf.Args = e.Args
		}
		if err := pf.State.UnmarshalText([]byte(e.Decision)); err != nil {
			pf.State = reach.Cancelled
		}
		pf.Parent, _ = reach.ParseFrameID(e.Parent)
		if e.Code != "" || e.Message != "" {
			pf.Error = &reach.Error{Guard: e.Guard, Type: e.Reason, Code: e.Code, Message: e.Message}
		}
		out = append(out, pf)
	}
	return out, settled
}

// settle ends the frames that waited for an approval (awaiting_approval)
// as the running gateway did once it was denied, expired, or used by the
// repeated call: each frame as its approval stands in the store (every
// frame the approval kept, in this request or another that repeated the
// call by its idempotency key; a denial with who denied it and why), and
// then, for an approval the store no longer keeps, the frame its
// decision's audit event names. An expiry at or after the stop of
// request id (the stop expires the approvals it leaves) ends the frame
// with the stop's refusal, as the running gateway did
// (reach.Request.SettleAwaiting).
func (h *History) settle(ctx context.Context, id string, frames []reach.PastFrame, events []*audit.Event) []reach.PastFrame {
	stop, read := (*reach.Cause)(nil), false
	end := func(f *reach.PastFrame, s reach.State, er *reach.Error, summary string, ended time.Time) {
		if s == reach.Cancelled { // expired
			if !read {
				read, stop = true, h.stopOf(ctx, id)
			}
			if stop != nil && !ended.Before(stop.At) {
				er = (&reach.StopError{Cause: *stop}).Refusal()
				er.Guard, summary = "authorize", f.Summary
			}
		}
		f.State, f.Summary, f.Ended, f.Error = s, summary, ended, er
	}
	if st, ok := h.st.(store.Approvals); ok {
		type stored struct {
			a     *approval.Approval
			ended time.Time
		}
		read := map[string]stored{}
		for i := range frames {
			f := &frames[i]
			id := ""
			if f.State == reach.AwaitingApproval {
				id = approval.WaitsFor(f.Error)
			}
			if id == "" {
				continue
			}
			got, ok := read[id]
			if !ok {
				var err error
				if got.a, got.ended, err = approval.Stored(ctx, st, id); err != nil && !errors.Is(err, store.ErrNotFound) {
					h.log.Warn("history: reading the approval a frame waited for", "approval", id, "frame", f.ID, "err", err)
				}
				read[id] = got
			}
			if got.a == nil {
				continue // its error names the approval: listed in its frames or not (past their bound)
			}
			if s, er, summary, ok := approval.Settled(got.a, string(got.a.Status), ""); ok {
				end(f, s, er, summary, got.ended)
			}
		}
	}
	for _, e := range events {
		id, err := reach.ParseFrameID(e.Frame)
		if err != nil {
			continue
		}
		// The event's message begins "approval <id> (<requires>)"; a used
		// one's result is "ran as frame <id>".
		a := &approval.Approval{RanIn: strings.TrimPrefix(e.Result, "ran as frame ")}
		a.ID, _, _ = strings.Cut(strings.TrimPrefix(e.Message, "approval "), " ")
		s, er, summary, ok := approval.Settled(a, e.Decision, "")
		if !ok {
			continue
		}
		for i := range frames {
			f := &frames[i]
			if f.ID != id || f.State != reach.AwaitingApproval {
				continue
			}
			end(f, s, er, summary, e.Time)
		}
	}
	return frames
}

// stopOf returns the stop of the stored request id, or nil: one not
// stopped, or not read.
func (h *History) stopOf(ctx context.Context, id string) *reach.Cause {
	rec, err := h.st.GetRequest(ctx, id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Warn("history: reading the request of a frame settled by an expiry", "request", id, "err", err)
		}
		return nil
	}
	if rec.State != "stopped" {
		return nil
	}
	c := DecodeCause(rec.Cause)
	if c.Mode == reach.Running {
		c.Mode = reach.Cancel
	}
	return &c
}

// setDepths sets each frame's depth, the tool calls on its stack, from
// its parent's (frames listed in the order they started; a parent outside
// the list counts as the top).
func setDepths(frames []reach.PastFrame) {
	depth := make(map[reach.FrameID]int, len(frames))
	for i := range frames {
		f := &frames[i]
		f.Depth = depth[f.Parent]
		if f.Kind == reach.ToolFrame {
			f.Depth++
		}
		depth[f.ID] = f.Depth
	}
}
