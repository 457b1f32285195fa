package reach

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/template"
)

// BreakerPolicy configures a circuit breaker (see internal/breaker): a
// zero field takes the runtime's default (Options.Breaker), and where that
// is zero too, the default its comment states.
type BreakerPolicy = breaker.Policy

// Default breaker settings (see BreakerPolicy).
const (
	DefaultBreakerFailures = breaker.DefaultFailures
	DefaultBreakerRate     = breaker.DefaultRate
	DefaultBreakerWindow   = breaker.DefaultWindow
	DefaultBreakerMinCalls = breaker.DefaultMinCalls
	DefaultBreakerOpenFor  = breaker.DefaultOpenFor
)

// BreakerState is the state of a circuit breaker.
type BreakerState = breaker.State

// Breaker states.
const (
	BreakerClosed   = breaker.Closed   // lets every call through and counts their failures
	BreakerOpen     = breaker.Open     // fails every call at once until its probe interval ends
	BreakerHalfOpen = breaker.HalfOpen // lets one call through to probe
)

// Kinds of breakers the runtime keeps.
const (
	BreakerTool     = "tool"     // one per tool
	BreakerUpstream = "upstream" // one per upstream (Tool.Upstream), shared by its tools
)

// BreakerStatus is a breaker as /healthz, /metrics and the UI show it.
type BreakerStatus = breaker.Status

// BreakerChange is a breaker's change of state, as the Recorder is told
// (Event.Breaker) and the audit log keeps it.
type BreakerChange = breaker.Change

// Breaker is a circuit breaker (closed, open, half-open) over the calls to
// one thing: a tool, an upstream, a model endpoint. It opens after
// Failures transient failures in a row, or a failure rate of Rate over
// Window; while open it fails calls at once; after OpenFor it lets one
// call through to probe, whose success closes it. Get one with
// Runtime.Breaker; the runtime keeps those of its tools and upstreams
// itself. Safe for concurrent use.
type Breaker struct {
	rt         *Runtime
	kind, name string
	m          *breaker.Breaker // the state machine (internal/breaker)
}

// Pass is one admission through a Breaker: report how the call went with
// exactly one of Succeeded, Failed or Abandoned. The zero Pass (a breaker
// that is off) reports nothing.
type Pass struct {
	b   *Breaker
	t   breaker.Ticket
	req *Request // the request of the call, for the record of a change
}

// Breaker returns the runtime's breaker of that kind and name, made with
// policy p (over Options.Breaker) when it is first asked for; a later p
// that is not nil replaces its policy. The runtime keeps the breakers of
// its tools (kind "tool") and upstreams ("upstream") itself; other parts
// use other kinds, such as "model".
func (rt *Runtime) Breaker(kind, name string, p *BreakerPolicy) *Breaker {
	return rt.breakerOf(kind, name, p, p != nil)
}

// breakerOf returns the breaker of kind and name, made if missing; set
// says that p is its policy (else a new one gets the runtime's default
// and an existing one keeps its own).
func (rt *Runtime) breakerOf(kind, name string, p *BreakerPolicy, set bool) *Breaker {
	key := kind + ":" + name
	rt.brkMu.Lock()
	defer rt.brkMu.Unlock()
	b := rt.breakers[key]
	if b == nil {
		b = &Breaker{rt: rt, kind: kind, name: name, m: breaker.New(breaker.Resolve(p, rt.opts.Breaker), time.Now())}
		if rt.breakers == nil {
			rt.breakers = map[string]*Breaker{}
		}
		rt.breakers[key] = b
		return b
	}
	if set {
		b.m.SetPolicy(breaker.Resolve(p, rt.opts.Breaker))
	}
	return b
}

// Breakers returns the status of every breaker of the runtime, sorted by
// kind and name.
func (rt *Runtime) Breakers() []BreakerStatus {
	rt.brkMu.Lock()
	bs := make([]*Breaker, 0, len(rt.breakers))
	for _, b := range rt.breakers {
		bs = append(bs, b)
	}
	rt.brkMu.Unlock()
	now := time.Now()
	out := make([]BreakerStatus, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.status(now))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Status returns the breaker's state and counts.
func (b *Breaker) Status() BreakerStatus { return b.status(time.Now()) }

func (b *Breaker) status(now time.Time) BreakerStatus {
	s := b.m.Status(now)
	s.Kind, s.Name = b.kind, b.name
	return s
}

// State returns the breaker's state.
func (b *Breaker) State() BreakerState { return b.m.State() }

// Admit lets a call through, or returns the structured error (type
// unavailable) of an open breaker: what is down and since when, when it
// will be tried again. A call let through must report its outcome on the
// Pass.
func (b *Breaker) Admit(ctx context.Context) (Pass, *Error) {
	req, _ := position(ctx)
	p, s := b.admit(req)
	if s == nil {
		return p, nil
	}
	return p, unavailable(s, b.kind+" "+b.name, "it", time.Now())
}

// admit lets a call through, or returns the breaker's status when it is
// open (or half-open with its probe out).
func (b *Breaker) admit(req *Request) (Pass, *breaker.Status) {
	if b == nil {
		return Pass{}, nil
	}
	if b.m.State() == breaker.Closed {
		return Pass{b: b, req: req}, nil // the common case, without a call
	}
	t, s, ch := b.m.Admit(time.Now)
	if s != nil {
		return Pass{}, s
	}
	if ch != nil {
		b.changed(req, ch)
	}
	return Pass{b: b, t: t, req: req}, nil
}

// wouldAdmit reports whether a call would be let through now.
func (b *Breaker) wouldAdmit(now time.Time) bool { return b == nil || b.m.WouldAdmit(now) }

// Succeeded reports that the call went through: the thing behind the
// breaker answered (a permanent failure is an answer too). A probe's
// success closes the breaker.
func (p Pass) Succeeded() {
	if p.b != nil {
		p.succeededAt(time.Now())
	}
}

// succeededAt is Succeeded at a time the caller read already (the
// runtime's calls: when the call began, which places it in the window
// closely enough, and spares a clock read on every call).
func (p Pass) succeededAt(now time.Time) {
	if p.b == nil {
		return
	}
	if ch := p.b.m.Succeeded(p.t, now); ch != nil {
		p.b.changed(p.req, ch)
	}
}

// Failed reports a transient failure (what the runtime's classification
// calls transient: a timeout, an upstream that cannot be reached, an
// HTTP 429 or 5xx, ...). It may open the breaker; a probe's failure opens
// it again.
func (p Pass) Failed(err error) {
	b := p.b
	if b == nil {
		return
	}
	msg := ""
	if err != nil {
		msg = b.rt.opts.Redactor.RedactString(oneLine(err.Error(), 400))
	}
	b.changed(p.req, b.m.Failed(p.t, time.Now(), msg))
}

// Abandoned reports a call that ended without an answer that says
// anything of the thing behind the breaker (it was cancelled, or refused
// before it was sent): a probe's slot is freed for another call.
func (p Pass) Abandoned() {
	if p.b != nil {
		p.b.m.Abandoned(p.t)
	}
}

// changed logs and records a change of state.
func (b *Breaker) changed(req *Request, c *breaker.Change) {
	if c == nil {
		return
	}
	ch := c
	ch.Kind, ch.Name = b.kind, b.name
	rt := b.rt
	lvl := rt.log.Info
	if ch.To == BreakerOpen {
		lvl = rt.log.Warn
	}
	lvl("circuit breaker "+ch.To.String(), "breaker", b.kind, "name", b.name, "from", ch.From.String(), "reason", ch.Reason)
	if rt.opts.Recorder == nil {
		return
	}
	e := &Event{Time: ch.At, Name: b.kind + ":" + b.name, Breaker: ch}
	if req != nil {
		e.Root, e.Trace, e.Request, e.Principal, e.Tenant, e.Agent = req.root.id, req.root.trace, req.id, req.principal, req.tenant, req.agent
	}
	rt.opts.Recorder.Record(context.Background(), e)
}

// unavailable is the error of a call that an open breaker (s) fails at
// once. subject is what was called; what names what is down, as the
// model should read it ("it", "its upstream kb").
func unavailable(s *breaker.Status, subject, what string, now time.Time) *Error {
	code, msg, after := s.Explain(subject, what, now)
	return &Error{Guard: "breaker", Type: TypeUnavailable, Code: code, Message: msg, RetryAfter: after}
}

// passes are a call's admissions through its tool's and its upstream's
// breakers, for the attempt about to run.
type passes struct {
	tool, up Pass
	taken    bool
}

func (ps *passes) abandon() {
	if ps.taken {
		ps.tool.Abandoned()
		ps.up.Abandoned()
		*ps = passes{}
	}
}

// admitBreakers admits an attempt of c through its tool's breaker and its
// upstream's, or returns the error of the one that is open.
func (rt *Runtime) admitBreakers(c *Call) (passes, *Error) {
	t := c.tool
	tp, ts := t.breaker.admit(c.req)
	if ts != nil {
		return passes{}, rt.unavailableCall(c, t.breaker, ts)
	}
	up, us := t.upBreaker.admit(c.req)
	if us != nil {
		tp.Abandoned()
		return passes{}, rt.unavailableCall(c, t.upBreaker, us)
	}
	return passes{tool: tp, up: up, taken: true}, nil
}

// unavailableCall builds the error of a call that the open breaker b
// (status s) fails at once, naming what it may use instead.
func (rt *Runtime) unavailableCall(c *Call, b *Breaker, s *breaker.Status) *Error {
	what := "it"
	if b.kind == BreakerUpstream {
		what = "its upstream " + b.name
	}
	now := time.Now()
	e := unavailable(s, c.Tool, what, now)
	e.Alternatives = rt.healthyAlternatives(c, now)
	e.Suggestion = s.Suggest(c.Tool, e.Alternatives)
	return e
}

// healthy reports whether a call of t would get through its breakers now.
func (t *tool) healthy(now time.Time) bool {
	return t.breaker.wouldAdmit(now) && t.upBreaker.wouldAdmit(now)
}

// healthyAlternatives lists the tools the model may use instead of c's:
// its fallbacks, then the read tools that share a tag with it, of another
// upstream, whose breakers let calls through.
func (rt *Runtime) healthyAlternatives(c *Call, now time.Time) []string {
	var out []string
	for _, f := range c.tool.fallback {
		if ft := rt.lookup(f.Tool); ft != nil && ft.Access == Read && ft.healthy(now) {
			out = append(out, f.Tool)
		}
	}
	for _, name := range rt.alternatives(c) {
		ft := rt.lookup(name)
		if ft == nil || slices.Contains(out, name) || !ft.healthy(now) || (ft.Upstream != "" && ft.Upstream == c.tool.Upstream) {
			continue
		}
		out = append(out, name)
	}
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// breakerStage (before execute, 11): a call whose tool's or upstream's
// breaker is open fails at once, with type unavailable, and runs nothing;
// one let through carries its passes to execute, which reports each
// attempt. Inside the saga stage: a write that fails here is compensated
// for as its failure would have been.
func (rt *Runtime) breakerStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		ps, e := rt.admitBreakers(c)
		if e != nil {
			return &Result{Status: StatusError, Error: e}, nil
		}
		c.passes = ps
		res, err := next(ctx, c)
		c.passes.abandon() // a middleware that did not run the tool
		return res, err
	}
}

// fallbackStage (between 9 and 10, on the way back): a read whose call
// failed transiently after its retries, or met an open breaker, is
// answered by its first healthy fallback that succeeds.
func (rt *Runtime) fallbackStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		if err != nil || res == nil || res.Status != StatusError || len(c.tool.fallback) == 0 || c.tool.Access != Read ||
			res.Error == nil || (res.Error.Type != TypeUnavailable && res.Error.Type != TypeTransient) || ctx.Err() != nil {
			return res, err
		}
		return rt.fallback(ctx, c, res), nil
	}
}

// fallback calls c's fallbacks in order, skipping those whose breakers are
// open, each as a call of its own under c's frame, and returns the first
// success, marked as the fallback's; if none succeeds, failed, with a note
// of what was tried.
func (rt *Runtime) fallback(ctx context.Context, c *Call, failed *Result) *Result {
	var tried []string
	fctx := withFrame(ctx, c.frame)
	for i, f := range c.tool.fallback {
		ft := rt.lookup(f.Tool)
		switch {
		case ft == nil:
			tried = append(tried, f.Tool+" (no such tool)")
			continue
		case ft.Access != Read:
			tried = append(tried, f.Tool+" (not a read)")
			continue
		case !ft.healthy(time.Now()):
			tried = append(tried, f.Tool+" (unavailable too)")
			continue
		}
		args := c.args
		if f.Args != nil {
			a, err := f.Args.JSON(template.NewScope(c.args, nil))
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s (its arguments could not be built: %v)", f.Tool, err))
				continue
			}
			args = a
		}
		res := rt.Call(fctx, &Call{ID: fmt.Sprintf("%s/fallback/%d", c.ID, i+1), Tool: f.Tool, Arguments: args, Why: "fallback of " + c.Tool})
		if res.Status == StatusSuccess {
			out := &Result{Status: StatusSuccess, Data: res.Data, Fallback: f.Tool,
				Summary: cmp.Or(res.Summary, "answered by its fallback "+f.Tool)}
			out.Notes = append(out.Notes, effects.FallbackNote(c.Tool, f.Tool, failed.Error))
			out.Notes = append(out.Notes, res.Notes...)
			return out
		}
		if res.Status == StatusCancelled || ctx.Err() != nil {
			return res
		}
		why := string(res.Status)
		if res.Error != nil {
			why = res.Error.Code
		}
		tried = append(tried, f.Tool+" ("+why+")")
	}
	failed.Notes = append(failed.Notes, "its fallbacks did not answer either: "+strings.Join(tried, ", "))
	return failed
}

// compileFallbacks compiles a read tool's fallbacks (effects.CompileFallbacks).
func compileFallbacks(t *Tool) ([]*effects.Followup, error) {
	fs := make([]effects.Call, len(t.Fallback))
	for i, f := range t.Fallback {
		fs[i] = effects.Call{Tool: f.Tool, Args: f.Args}
	}
	return effects.CompileFallbacks(t.Name, t.Access == Read, string(t.Access), fs)
}
