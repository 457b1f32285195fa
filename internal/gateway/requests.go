package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// requests begins, finds and ends the reach requests that the gateway's
// clients work in. A request the gateway began ends after idleGap without
// calls (never while a call is in flight).
type requests struct {
	rt      *reach.Runtime
	base    context.Context
	gap     time.Duration
	def     *reach.Budget
	budgets map[string]reach.Budget
	now     func() time.Time

	mu    sync.Mutex
	owned map[string]*owned
}

type owned struct {
	req      *reach.Request
	last     time.Time
	inflight int
}

func newRequests(base context.Context, rt *reach.Runtime, cfg *Config) *requests {
	q := &requests{rt: rt, base: base, gap: cfg.idleGap(), def: cfg.defaultBudget(),
		budgets: map[string]reach.Budget{}, now: time.Now, owned: map[string]*owned{}}
	for name, b := range cfg.Budgets {
		q.budgets[name] = b.Budget()
	}
	return q
}

// budgetSpec is what a client asked for: a configured budget's name, or
// amounts (each capped at the default budget's, so a client may narrow its
// budget but never widen it).
type budgetSpec struct {
	Name   string
	Budget *reach.Budget
}

// parseBudgetSpec reads a "reach/budget" value: "name" or {"turns": ...}.
func parseBudgetSpec(v any) (*budgetSpec, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &budgetSpec{Name: x}, nil
	case map[string]any:
		b, _ := json.Marshal(x)
		var bc struct {
			Turns     int     `json:"turns"`
			Depth     int     `json:"depth"`
			ToolCalls int     `json:"tool_calls"`
			Tokens    int64   `json:"tokens"`
			Cost      float64 `json:"cost"`
			Wall      string  `json:"wall"`
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&bc); err != nil {
			return nil, fmt.Errorf(`reach/budget: %v; send a budget name or {"turns", "depth", "tool_calls", "tokens", "cost", "wall": "10m"}`, err)
		}
		rb := reach.Budget{Turns: bc.Turns, Depth: bc.Depth, ToolCalls: bc.ToolCalls, Tokens: bc.Tokens, Cost: bc.Cost}
		if bc.Wall != "" {
			d, err := time.ParseDuration(bc.Wall)
			if err != nil {
				return nil, fmt.Errorf("reach/budget: wall %q is not a duration such as \"10m\"", bc.Wall)
			}
			rb.Wall = d
		}
		if rb.Turns < 0 || rb.Depth < 0 || rb.ToolCalls < 0 || rb.Tokens < 0 || rb.Cost < 0 || rb.Wall < 0 {
			return nil, errors.New("reach/budget: amounts must not be negative; leave one out (or 0) for the default's, or send a smaller positive one")
		}
		return &budgetSpec{Budget: &rb}, nil
	}
	return nil, fmt.Errorf("reach/budget: want a budget name or an object, got %T", v)
}

// budget resolves a spec to the budget a new request gets (nil: the runtime's default).
func (q *requests) budget(s *budgetSpec) (*reach.Budget, error) {
	if s == nil {
		return q.def, nil
	}
	if s.Name != "" {
		b, ok := q.budgets[s.Name]
		if !ok {
			names := make([]string, 0, len(q.budgets))
			for n := range q.budgets {
				names = append(names, n)
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("there is no budget named %q; none are configured (budgets: in the configuration)", s.Name)
			}
			return nil, fmt.Errorf("there is no budget named %q; configured budgets: %s", s.Name, strings.Join(names, ", "))
		}
		return &b, nil
	}
	b := *s.Budget
	d := q.def
	if d == nil { // no default configured: the runtime's caps
		rd := q.rt.DefaultBudget()
		d = &rd
	}
	b.Turns = capInt(b.Turns, d.Turns)
	b.Depth = capInt(b.Depth, d.Depth)
	b.ToolCalls = capInt(b.ToolCalls, d.ToolCalls)
	b.Tokens = int64(capInt(int(b.Tokens), int(d.Tokens)))
	b.Wall = time.Duration(capInt(int(b.Wall), int(d.Wall)))
	if d.Cost > 0 && (b.Cost == 0 || b.Cost > d.Cost) {
		b.Cost = d.Cost
	}
	return &b, nil
}

// capInt caps v at limit, where zero means unlimited for both (a
// negative v, refused before, counts as unlimited too).
func capInt(v, limit int) int {
	if limit == 0 {
		return v
	}
	if v <= 0 || v > limit {
		return limit
	}
	return v
}

// begin starts a request the gateway owns for a call linked by l, and
// tracks it (inflight 1): l's agent and scene, the caller's trace when l
// has one.
func (q *requests) begin(id string, l link, b *reach.Budget, who *auth.Identity) (*reach.Request, error) {
	o := &reach.RequestOptions{ID: id, Principal: localPrincipal, Agent: l.Agent, Scene: l.Scene, Budget: b, Trace: l.TraceID}
	if who != nil {
		who.Apply(o)
	}
	_, r, err := q.rt.Begin(q.base, o)
	if err != nil {
		return nil, err
	}
	q.owned[r.ID()] = &owned{req: r, last: q.now(), inflight: 1}
	return r, nil
}

// named returns the request l names for one call (release it when the
// call is done): a running or stopped request of that id, or a new one
// with l's budget spec when there is none or it has completed.
func (q *requests) named(l link, who *auth.Identity) (*reach.Request, func(), error) {
	id := l.Request
	q.mu.Lock()
	defer q.mu.Unlock()
	if r, ok := q.rt.Lookup(id); ok {
		if err := checkOwner(who, r); err != nil {
			return nil, nil, err
		}
		if r.State() != "completed" {
			return r, q.holdLocked(r), nil
		}
	}
	b, err := q.budget(l.Budget)
	if err != nil {
		return nil, nil, err
	}
	r, err := q.begin(id, l, b, who)
	if err != nil {
		return nil, nil, err
	}
	return r, q.releaser(r), nil
}

// fresh begins a new request with a random id for one call.
func (q *requests) fresh(l link, who *auth.Identity) (*reach.Request, func(), error) {
	b, err := q.budget(l.Budget)
	if err != nil {
		return nil, nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	r, err := q.begin(newRequestID(), l, b, who)
	if err != nil {
		return nil, nil, err
	}
	return r, q.releaser(r), nil
}

// session returns the request of an MCP session for one call: the
// session's current request while it is running or stopped and has been
// idle less than the gap, otherwise a new one, recorded in *cur.
func (q *requests) session(cur *string, l link, who *auth.Identity) (*reach.Request, func(), error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if *cur != "" {
		if o, ok := q.owned[*cur]; ok && o.req.State() != "completed" && (o.inflight > 0 || q.now().Sub(o.last) < q.gap) {
			if err := checkOwner(who, o.req); err != nil {
				return nil, nil, err
			}
			return o.req, q.holdLocked(o.req), nil
		}
	}
	b, err := q.budget(l.Budget)
	if err != nil {
		return nil, nil, err
	}
	r, err := q.begin(newRequestID(), l, b, who)
	if err != nil {
		return nil, nil, err
	}
	*cur = r.ID()
	return r, q.releaser(r), nil
}

// hold marks one more call in flight on r (if the gateway owns it).
func (q *requests) hold(r *reach.Request) func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.holdLocked(r)
}

func (q *requests) holdLocked(r *reach.Request) func() {
	o, ok := q.owned[r.ID()]
	if !ok || o.req != r {
		return func() {}
	}
	o.inflight++
	o.last = q.now()
	return q.releaser(r)
}

func (q *requests) releaser(r *reach.Request) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			if o, ok := q.owned[r.ID()]; ok && o.req == r {
				o.inflight--
				o.last = q.now()
			}
		})
	}
}

// sweep ends the owned requests idle for longer than the gap and forgets
// ended ones.
func (q *requests) sweep() {
	q.mu.Lock()
	var ending []*reach.Request
	now := q.now()
	for id, o := range q.owned {
		if o.inflight > 0 || now.Sub(o.last) < q.gap {
			continue
		}
		ending = append(ending, o.req)
		delete(q.owned, id)
	}
	q.mu.Unlock()
	for _, r := range ending {
		r.End()
	}
}

// current reports whether a session's request (*cur) is still one the
// gateway owns, or, for a session without one yet, whether it was made
// within the idle gap.
func (q *requests) current(cur *string, made time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if *cur == "" {
		return q.now().Sub(made) < q.gap
	}
	_, ok := q.owned[*cur]
	return ok
}

// janitor sweeps until the gateway closes, calling after after each sweep.
func (q *requests) janitor(after func()) {
	every := min(max(q.gap/10, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-q.base.Done():
			return
		case <-t.C:
			q.sweep()
			after()
		}
	}
}

// endAll ends every request the gateway owns.
func (q *requests) endAll() {
	q.mu.Lock()
	rs := make([]*reach.Request, 0, len(q.owned))
	for id, o := range q.owned {
		rs = append(rs, o.req)
		delete(q.owned, id)
	}
	q.mu.Unlock()
	for _, r := range rs {
		r.End()
	}
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// link says where a call from a client goes: which request, under which
// frame. The zero link means "the caller's default request, at its top".
type link struct {
	Request string        // a named request
	Parent  reach.FrameID // an explicit parent frame (Reach-Parent, reach/parent)
	Trace   reach.FrameID // the parent span of a traceparent: a frame if it is one of ours
	TraceID [16]byte      // the traceparent's trace, which a request begun for the call continues
	Chosen  *reach.Frame  // the model frame that chose this call (by its tool_call id), if known
	Budget  *budgetSpec   // for a new request
	Scene   string        // for a new request: the conversation's scene
	Agent   string
}

// checkScene checks a scene a client names: a short word, as policies
// compare it (context.scene == "chitchat").
func checkScene(s string) error {
	if len(s) > 64 {
		return errors.New("a scene is at most 64 characters")
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("scene %q: use letters, digits, '_', '-' or '.'", s)
		}
	}
	return nil
}

// chosen returns the model frame that chose the call, when it belongs to
// the request the link names (or it names none).
func (l link) chosen() *reach.Frame {
	f := l.Chosen
	if f == nil {
		return nil
	}
	if l.Request != "" {
		for r := f.Request; ; r = r.Parent() {
			if r == nil {
				return nil
			}
			if r.ID() == l.Request {
				break
			}
		}
	}
	return f
}

// linkError is a client's mistake in linking a call.
type linkError struct {
	Status     int
	Code       string
	Message    string
	Suggestion string
}

func (e *linkError) Error() string { return e.Message + " " + e.Suggestion }

// place returns the context a call from a client runs in: under the frame
// it names (Reach-Parent, reach/parent, or the parent span of a
// traceparent when that is one of ours), found with [reach.Request.Frame]
// and entered with [reach.WithParent], so that any frame of a kept request
// can be a parent: a running tool call, a model turn, an ended call. A call
// naming no frame runs at the top of its request (found or begun by def
// when the link names none). The returned context ends when the parent's
// request or ctx does. Call done when the call is over.
func (g *Gateway) place(ctx context.Context, l link, def func() (*reach.Request, func(), error)) (context.Context, *reach.Request, func(), error) {
	who, _ := auth.IdentityFrom(ctx)
	if len(l.Request) > maxRequestID { // however it came: _meta, a header, baggage
		return nil, nil, nil, &linkError{Status: http.StatusBadRequest, Code: "bad_request_id",
			Message: fmt.Sprintf("The request id is longer than %d characters.", maxRequestID), Suggestion: "Use a shorter id."}
	}
	if !utf8.ValidString(l.Request) || strings.ContainsFunc(l.Request, unicode.IsControl) { // it is shown to operators
		return nil, nil, nil, &linkError{Status: http.StatusBadRequest, Code: "bad_request_id",
			Message: "The request id has a control character or is not UTF-8.", Suggestion: "Use printable characters only."}
	}
	if id := l.Parent; id != 0 || l.Trace != 0 {
		if id == 0 {
			id = l.Trace
		}
		f := g.findFrame(l.Request, id)
		if f == nil && l.Request != "" {
			if g.findFrame("", id) != nil {
				return nil, nil, nil, &linkError{Status: 409, Code: "parent_mismatch",
					Message:    fmt.Sprintf("Frame %s does not belong to request %s.", id, l.Request),
					Suggestion: "Send the request id of the parent frame, or drop one of the two."}
			}
		}
		if f == nil && l.Parent != 0 {
			where := "any request kept here"
			if l.Request != "" {
				where = "request " + l.Request
			}
			return nil, nil, nil, &linkError{Status: 400, Code: "unknown_parent",
				Message:    fmt.Sprintf("There is no frame %s in %s.", l.Parent, where),
				Suggestion: "Send the id of a frame (reach graph REQUEST --format json, or GET /v1/requests/{id}/graph, lists them), or omit the parent."}
		}
		if f == nil {
			// Not a frame of ours: the call is linked as if it named none
			// (below), by the model turn that chose it, if its caller's.
			if c := l.chosen(); c != nil && checkOwner(who, c.Request) == nil {
				f = c
			}
		}
		if f != nil {
			if err := checkOwner(who, f.Request); err != nil {
				return nil, nil, nil, err
			}
			in := f.Request
			if s := f.SubRequest(); s != nil { // a delegation: the agent's work is its sub-request's
				in = s
			}
			release := g.reqs.hold(f.Request.Root())
			cctx, stop := mergeCancel(in.Context(), ctx)
			return reach.WithParent(cctx, f), in, func() { stop(); release() }, nil
		}
		// A traceparent from another tracer: not a frame of ours.
	}
	if f := l.chosen(); f != nil && checkOwner(who, f.Request) == nil {
		release := g.reqs.hold(f.Request.Root())
		cctx, stop := mergeCancel(f.Request.Context(), ctx)
		return reach.WithParent(cctx, f), f.Request, func() { stop(); release() }, nil
	}
	var r *reach.Request
	var release func()
	var err error
	if l.Request != "" {
		r, release, err = g.reqs.named(l, who)
	} else {
		r, release, err = def()
	}
	var le *linkError
	if errors.As(err, &le) {
		return nil, nil, nil, err
	}
	if re, ok := errors.AsType[*reach.Error](err); ok {
		// A refusal of the id (an interrupted request's, kept by the store
		// only): as structured as a call's.
		return nil, nil, nil, &linkError{Status: http.StatusConflict, Code: re.Code, Message: re.Message, Suggestion: re.Suggestion}
	}
	if err != nil {
		return nil, nil, nil, &linkError{Status: 400, Code: "bad_request_spec", Message: err.Error() + ".",
			Suggestion: "Fix the request id or budget, or leave them out."}
	}
	cctx, stop := mergeCancel(r.Context(), ctx)
	if l.Trace != 0 && l.TraceID != ([16]byte{}) {
		// Another tracer's span called: in its trace, the call's span is
		// that span's child (the runtime checks the request is in it).
		var span [8]byte
		binary.BigEndian.PutUint64(span[:], uint64(l.Trace))
		cctx = reach.WithRemoteParent(cctx, l.TraceID, span)
	}
	return cctx, r, func() { stop(); release() }, nil
}

// end ends the owned request id now (an MCP session closed).
func (q *requests) end(id string) {
	q.mu.Lock()
	o, ok := q.owned[id]
	if ok {
		delete(q.owned, id)
	}
	q.mu.Unlock()
	if ok {
		o.req.End()
	}
}

// findFrame looks a frame up by id in request reqID (its whole tree), or
// in every kept request when reqID is empty.
func (g *Gateway) findFrame(reqID string, id reach.FrameID) *reach.Frame {
	if reqID != "" {
		r, ok := g.rt.Lookup(reqID)
		if !ok {
			return nil
		}
		f, _ := r.Root().Frame(id)
		return f
	}
	for _, r := range g.rt.Requests() {
		if r.Root() != r {
			continue // searched from its root
		}
		if f, ok := r.Frame(id); ok {
			return f
		}
	}
	return nil
}

// maxRequestID bounds a request id a client names.
const maxRequestID = 128

// mergeCancel returns a context with vals' values that ends when either
// vals or cancelOn ends (with that one's cause). Call stop when done.
func mergeCancel(vals, cancelOn context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(vals)
	unhook := context.AfterFunc(cancelOn, func() { cancel(context.Cause(cancelOn)) })
	return ctx, func() { unhook(); cancel(nil) }
}
