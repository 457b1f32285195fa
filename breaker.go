package reach

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// BreakerPolicy configures a circuit breaker: a tool's, an upstream's, or
// one a caller makes with Runtime.Breaker (the gateway's model endpoints).
// A zero field takes the runtime's default (Options.Breaker), and where
// that is zero too, the default its comment states.
type BreakerPolicy struct {
	// Failures is how many transient failures in a row open the breaker;
	// if zero, 5. Each attempt counts: a call retried three times is three.
	Failures int `json:"failures,omitempty"`
	// Rate opens the breaker when at least this fraction of the attempts
	// made in Window failed transiently, once MinCalls were made; if zero,
	// 0.5.
	Rate float64 `json:"rate,omitempty"`
	// Window is the span of time the failure rate is taken over; if zero,
	// one minute.
	Window time.Duration `json:"window,omitempty"`
	// MinCalls is how many attempts Window must hold before its failure
	// rate may open the breaker; if zero, 20.
	MinCalls int `json:"min_calls,omitempty"`
	// OpenFor is the probe interval: how long an open breaker fails every
	// call at once before it lets one call through to probe; if zero, 10s.
	OpenFor time.Duration `json:"open_for,omitempty"`
	// Disabled turns the breaker off: every call goes through.
	Disabled bool `json:"disabled,omitempty"`
}

// Default breaker settings (see BreakerPolicy).
const (
	DefaultBreakerFailures = 5
	DefaultBreakerRate     = 0.5
	DefaultBreakerWindow   = time.Minute
	DefaultBreakerMinCalls = 20
	DefaultBreakerOpenFor  = 10 * time.Second
)

// Check returns an error naming the first field of p out of range.
func (p *BreakerPolicy) Check() error {
	switch {
	case p == nil:
		return nil
	case p.Failures < 0, p.MinCalls < 0, p.Window < 0, p.OpenFor < 0:
		return fmt.Errorf("breaker: failures, min_calls, window and open_for must not be negative (zero means the default)")
	case p.Rate < 0 || p.Rate > 1:
		return fmt.Errorf("breaker: rate is a fraction of the attempts, from 0 to 1 (zero means the default %v); got %v", DefaultBreakerRate, p.Rate)
	}
	return nil
}

// resolve returns p with every zero field taken from def, then from the
// defaults.
func (p *BreakerPolicy) resolve(def *BreakerPolicy) BreakerPolicy {
	var out, d BreakerPolicy
	if p != nil {
		out = *p
	}
	if def != nil {
		d = *def
	}
	out.Failures = cmp.Or(out.Failures, d.Failures, DefaultBreakerFailures)
	out.Rate = cmp.Or(out.Rate, d.Rate, DefaultBreakerRate)
	out.Window = cmp.Or(out.Window, d.Window, DefaultBreakerWindow)
	out.MinCalls = cmp.Or(out.MinCalls, d.MinCalls, DefaultBreakerMinCalls)
	out.OpenFor = cmp.Or(out.OpenFor, d.OpenFor, DefaultBreakerOpenFor)
	out.Disabled = out.Disabled || d.Disabled
	return out
}

// BreakerState is the state of a circuit breaker.
type BreakerState int32

// Breaker states.
const (
	// BreakerClosed lets every call through and counts their failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen fails every call at once until its probe interval ends.
	BreakerOpen
	// BreakerHalfOpen lets one call through to probe: its success closes
	// the breaker, its failure opens it again.
	BreakerHalfOpen
)

var breakerStateNames = [...]string{"closed", "open", "half_open"}

func (s BreakerState) String() string {
	if s >= 0 && int(s) < len(breakerStateNames) {
		return breakerStateNames[s]
	}
	return "unknown"
}

// MarshalText writes the state's name.
func (s BreakerState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *BreakerState) UnmarshalText(b []byte) error {
	for i, n := range breakerStateNames {
		if n == string(b) {
			*s = BreakerState(i)
			return nil
		}
	}
	return fmt.Errorf("unknown breaker state %q", b)
}

// Kinds of breakers the runtime keeps.
const (
	BreakerTool     = "tool"     // one per tool
	BreakerUpstream = "upstream" // one per upstream (Tool.Upstream), shared by its tools
)

// BreakerStatus is a breaker as /healthz, /metrics and the UI show it.
type BreakerStatus struct {
	Kind  string       `json:"kind"` // "tool", "upstream", or a caller's kind ("model")
	Name  string       `json:"name"`
	State BreakerState `json:"state"`
	// Since is when it entered its state.
	Since time.Time `json:"since,omitzero"`
	// FailingSince is when the failures that opened it (or that it is
	// counting) began; zero after a success.
	FailingSince time.Time `json:"failing_since,omitzero"`
	// Failures is how many transient failures in a row it has counted.
	Failures int `json:"failures,omitempty"`
	// RetryAt is, for an open breaker, when it lets a probe through.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Probing says that a probe is out (half-open).
	Probing bool `json:"probing,omitempty"`
	// LastError is the last transient failure it counted, masked.
	LastError string `json:"last_error,omitempty"`
	// Calls and Failed are the attempts in its window, and those that
	// failed transiently.
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
	// Opened counts how often it opened since the runtime started.
	Opened int64 `json:"opened"`
}

// BreakerChange is a breaker's change of state, as the Recorder is told
// (Event.Breaker) and the audit log keeps it.
type BreakerChange struct {
	Kind   string       `json:"kind"`
	Name   string       `json:"name"`
	From   BreakerState `json:"from"`
	To     BreakerState `json:"to"`
	Reason string       `json:"reason"`
	At     time.Time    `json:"at"`
	// RetryAt is, when it opened, when it lets a probe through.
	RetryAt time.Time `json:"retry_at,omitzero"`
}

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
	state      atomic.Int32 // BreakerState; read without the lock while closed

	mu      sync.Mutex
	pol     BreakerPolicy // resolved
	streak  int           // transient failures in a row
	failing time.Time     // the first of them
	since   time.Time     // when it entered its state
	until   time.Time     // open: when a probe may go
	probing bool          // half-open: the probe is out
	gen     uint64        // bumped at each change of state
	last    string        // the last failure, masked and clipped
	opened  int64
	win     window
}

// Pass is one admission through a Breaker: report how the call went with
// exactly one of Succeeded, Failed or Abandoned. The zero Pass (a breaker
// that is off) reports nothing.
type Pass struct {
	b     *Breaker
	probe bool
	gen   uint64
	req   *Request // the request of the call, for the record of a change
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
		b = &Breaker{rt: rt, kind: kind, name: name, since: time.Now()}
		b.pol = p.resolve(rt.opts.Breaker)
		if rt.breakers == nil {
			rt.breakers = map[string]*Breaker{}
		}
		rt.breakers[key] = b
		return b
	}
	if set {
		pol := p.resolve(rt.opts.Breaker)
		b.mu.Lock()
		b.pol = pol
		b.mu.Unlock()
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
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BreakerState(b.state.Load())
	s := BreakerStatus{Kind: b.kind, Name: b.name, State: st, Since: b.since, FailingSince: b.failing,
		Failures: b.streak, Probing: b.probing, LastError: b.last, Opened: b.opened}
	if st == BreakerOpen {
		s.RetryAt = b.until
	}
	s.Calls, s.Failed = b.win.counts(now, b.pol.Window)
	return s
}

// State returns the breaker's state.
func (b *Breaker) State() BreakerState { return BreakerState(b.state.Load()) }

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
	return p, s.unavailable(b.kind+" "+b.name, "it", time.Now())
}

// admit lets a call through, or returns the breaker's status when it is
// open (or half-open with its probe out).
func (b *Breaker) admit(req *Request) (Pass, *BreakerStatus) {
	if b == nil {
		return Pass{}, nil
	}
	if BreakerState(b.state.Load()) == BreakerClosed {
		return Pass{b: b, req: req}, nil
	}
	b.mu.Lock()
	if b.pol.Disabled {
		b.mu.Unlock()
		return Pass{b: b, req: req}, nil
	}
	now := time.Now()
	switch BreakerState(b.state.Load()) {
	case BreakerClosed:
		b.mu.Unlock()
		return Pass{b: b, req: req}, nil
	case BreakerOpen:
		if now.Before(b.until) {
			s := b.statusLocked(now)
			b.mu.Unlock()
			return Pass{}, &s
		}
		ch := b.setLocked(BreakerHalfOpen, now, fmt.Sprintf("its probe interval (%s) passed: one call goes through to probe", b.pol.OpenFor))
		b.probing = true
		p := Pass{b: b, probe: true, gen: b.gen, req: req}
		b.mu.Unlock()
		b.changed(req, ch)
		return p, nil
	default: // half-open
		if b.probing {
			s := b.statusLocked(now)
			b.mu.Unlock()
			return Pass{}, &s
		}
		b.probing = true
		p := Pass{b: b, probe: true, gen: b.gen, req: req}
		b.mu.Unlock()
		return p, nil
	}
}

// wouldAdmit reports whether a call would be let through now.
func (b *Breaker) wouldAdmit(now time.Time) bool {
	if b == nil || BreakerState(b.state.Load()) == BreakerClosed {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch BreakerState(b.state.Load()) {
	case BreakerOpen:
		return b.pol.Disabled || !now.Before(b.until)
	case BreakerHalfOpen:
		return b.pol.Disabled || !b.probing
	}
	return true
}

func (b *Breaker) statusLocked(now time.Time) BreakerStatus {
	s := BreakerStatus{Kind: b.kind, Name: b.name, State: BreakerState(b.state.Load()), Since: b.since, FailingSince: b.failing,
		Failures: b.streak, Probing: b.probing, LastError: b.last, Opened: b.opened}
	if s.State == BreakerOpen {
		s.RetryAt = b.until
	}
	s.Calls, s.Failed = b.win.counts(now, b.pol.Window)
	return s
}

// setLocked moves the breaker to state st and returns the change to
// record (after the lock is released).
func (b *Breaker) setLocked(st BreakerState, now time.Time, reason string) *BreakerChange {
	from := BreakerState(b.state.Load())
	b.state.Store(int32(st))
	b.since = now
	b.gen++
	b.probing = false
	ch := &BreakerChange{Kind: b.kind, Name: b.name, From: from, To: st, Reason: reason, At: now}
	switch st {
	case BreakerOpen:
		b.until = now.Add(b.pol.OpenFor)
		b.opened++
		ch.RetryAt = b.until
	case BreakerClosed:
		b.streak, b.failing, b.last = 0, time.Time{}, ""
		b.win = window{}
	}
	return ch
}

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
	b := p.b
	if b == nil {
		return
	}
	b.mu.Lock()
	var ch *BreakerChange
	switch {
	case p.probe:
		if BreakerState(b.state.Load()) == BreakerHalfOpen && b.gen == p.gen {
			ch = b.setLocked(BreakerClosed, now, "its probe succeeded")
		}
	case BreakerState(b.state.Load()) == BreakerClosed:
		b.win.add(now, b.pol.Window, false)
		if b.streak > 0 {
			b.streak, b.failing = 0, time.Time{}
		}
	}
	b.mu.Unlock()
	b.changed(p.req, ch)
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
		msg = clipText(b.rt.opts.Redactor.RedactString(oneLine(err.Error(), 400)), 300)
	}
	now := time.Now()
	b.mu.Lock()
	var ch *BreakerChange
	st := BreakerState(b.state.Load())
	switch {
	case p.probe:
		if st == BreakerHalfOpen && b.gen == p.gen {
			b.streak++
			b.last = msg
			ch = b.setLocked(BreakerOpen, now, "its probe failed: "+msg)
		}
	case st == BreakerClosed:
		b.win.add(now, b.pol.Window, true)
		b.streak++
		if b.streak == 1 {
			b.failing = now
		}
		b.last = msg
		if b.pol.Disabled {
			break
		}
		if b.streak >= b.pol.Failures {
			ch = b.setLocked(BreakerOpen, now, fmt.Sprintf("%d transient failures in a row since %s, the last: %s",
				b.streak, b.failing.UTC().Format(time.RFC3339), msg))
		} else if calls, failed := b.win.counts(now, b.pol.Window); calls >= b.pol.MinCalls && float64(failed) >= b.pol.Rate*float64(calls) {
			ch = b.setLocked(BreakerOpen, now, fmt.Sprintf("%d of %d attempts in the last %s failed transiently, the last: %s",
				failed, calls, b.pol.Window, msg))
		}
	}
	b.mu.Unlock()
	b.changed(p.req, ch)
}

// Abandoned reports a call that ended without an answer that says
// anything of the thing behind the breaker (it was cancelled, or refused
// before it was sent): a probe's slot is freed for another call.
func (p Pass) Abandoned() {
	b := p.b
	if b == nil || !p.probe {
		return
	}
	b.mu.Lock()
	if BreakerState(b.state.Load()) == BreakerHalfOpen && b.gen == p.gen {
		b.probing = false
	}
	b.mu.Unlock()
}

// changed logs and records a change of state.
func (b *Breaker) changed(req *Request, ch *BreakerChange) {
	if ch == nil {
		return
	}
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
func (s *BreakerStatus) unavailable(subject, what string, now time.Time) *Error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is unavailable: %s ", subject, what)
	if !s.FailingSince.IsZero() {
		fmt.Fprintf(&b, "has been failing since %s (%s ago", stamp(s.FailingSince), ago(now.Sub(s.FailingSince)))
		if s.Failures > 1 {
			fmt.Fprintf(&b, ", %d failures in a row", s.Failures)
		}
		b.WriteString(")")
	} else {
		fmt.Fprintf(&b, "has been failing since %s", stamp(s.Since))
	}
	if s.LastError != "" {
		fmt.Fprintf(&b, "; the last failure: %s", strings.TrimSuffix(s.LastError, "."))
	}
	b.WriteString(". ")
	e := &Error{Guard: "breaker", Type: TypeUnavailable, Code: "breaker_open"}
	switch {
	case s.State == BreakerOpen:
		e.RetryAfter = max(s.RetryAt.Sub(now), time.Millisecond)
		fmt.Fprintf(&b, "Reach tries it again at %s (in %s); until then every call to it fails at once.", stamp(s.RetryAt), ago(e.RetryAfter))
	default:
		e.Code = "breaker_probing"
		e.RetryAfter = time.Second
		b.WriteString("One call is testing right now whether it is back; the others fail at once until it answers.")
	}
	e.Message = b.String()
	return e
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ago renders a duration for a model, to the second (or the millisecond
// under one).
func ago(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// window counts attempts and failures over a span of time, in ten slots.
type window struct {
	slots [windowSlots]struct {
		epoch         int64 // which slot of time it counts
		calls, failed int32
	}
}

const windowSlots = 10

func slotOf(now time.Time, span time.Duration) int64 {
	w := max(int64(span)/windowSlots, 1)
	return now.UnixNano() / w
}

func (w *window) add(now time.Time, span time.Duration, failed bool) {
	ep := slotOf(now, span)
	s := &w.slots[ep%windowSlots]
	if s.epoch != ep {
		s.epoch, s.calls, s.failed = ep, 0, 0
	}
	s.calls++
	if failed {
		s.failed++
	}
}

func (w *window) counts(now time.Time, span time.Duration) (calls, failed int) {
	ep := slotOf(now, span)
	for i := range w.slots {
		s := &w.slots[i]
		if s.epoch > ep-windowSlots && s.epoch <= ep {
			calls += int(s.calls)
			failed += int(s.failed)
		}
	}
	return calls, failed
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
		return passes{}, rt.unavailable(c, ts)
	}
	up, us := t.upBreaker.admit(c.req)
	if us != nil {
		tp.Abandoned()
		return passes{}, rt.unavailable(c, us)
	}
	return passes{tool: tp, up: up, taken: true}, nil
}

// unavailable builds the error of a call that an open breaker fails at
// once, naming what it may use instead.
func (rt *Runtime) unavailable(c *Call, s *BreakerStatus) *Error {
	what := "it"
	if s.Kind == BreakerUpstream {
		what = "its upstream " + s.Name
	}
	now := time.Now()
	e := s.unavailable(c.Tool, what, now)
	e.Alternatives = rt.healthyAlternatives(c, now)
	retry := "it may work again"
	if s.State == BreakerOpen {
		retry += " after " + stamp(s.RetryAt)
	} else {
		retry += " in a moment"
	}
	if len(e.Alternatives) > 0 {
		e.Suggestion = fmt.Sprintf("Use %s instead, or go on without %s; %s.", orList(e.Alternatives), c.Tool, retry)
	} else {
		e.Suggestion = fmt.Sprintf("Go on without %s, or tell the user that it is down; %s.", c.Tool, retry)
	}
	return e
}

func orList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
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
		if ft := rt.lookup(f.tool); ft != nil && ft.Access == Read && ft.healthy(now) {
			out = append(out, f.tool)
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
		ft := rt.lookup(f.tool)
		switch {
		case ft == nil:
			tried = append(tried, f.tool+" (no such tool)")
			continue
		case ft.Access != Read:
			tried = append(tried, f.tool+" (not a read)")
			continue
		case !ft.healthy(time.Now()):
			tried = append(tried, f.tool+" (unavailable too)")
			continue
		}
		args := c.args
		if f.args != nil {
			a, err := f.args.json(newScope(c.args, nil))
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s (its arguments could not be built: %v)", f.tool, err))
				continue
			}
			args = a
		}
		res := rt.Call(fctx, &Call{ID: fmt.Sprintf("%s/fallback/%d", c.ID, i+1), Tool: f.tool, Arguments: args, Why: "fallback of " + c.Tool})
		if res.Status == StatusSuccess {
			out := &Result{Status: StatusSuccess, Data: res.Data, Fallback: f.tool,
				Summary: cmp.Or(res.Summary, "answered by its fallback "+f.tool)}
			out.Notes = append(out.Notes, fmt.Sprintf("%s failed (%s); this result comes from its fallback %s, not from %s.",
				c.Tool, shortReason(failed.Error), f.tool, c.Tool))
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
		tried = append(tried, f.tool+" ("+why+")")
	}
	failed.Notes = append(failed.Notes, "its fallbacks did not answer either: "+strings.Join(tried, ", "))
	return failed
}

// shortReason says in a few words why a call failed, for a fallback's note.
func shortReason(e *Error) string {
	switch {
	case e == nil:
		return "it failed"
	case e.Type == TypeUnavailable:
		return "it is unavailable: its circuit breaker is open"
	case e.Retry != "":
		return "a transient failure, " + e.Retry + " attempts"
	}
	return "a transient failure"
}

// compileFallbacks compiles a read tool's fallbacks: a fallback's Args is
// a template over the call's arguments; empty passes them on as they are.
func compileFallbacks(t *Tool) ([]*compiledFollowup, error) {
	if len(t.Fallback) == 0 {
		return nil, nil
	}
	if t.Access != Read {
		return nil, fmt.Errorf("tool %s: fallback is for reads; a %s tool's failure goes to the model and the saga, never silently elsewhere", t.Name, t.Access)
	}
	out := make([]*compiledFollowup, 0, len(t.Fallback))
	for i, f := range t.Fallback {
		if f.Tool == "" {
			return nil, fmt.Errorf("tool %s: fallback %d needs a tool", t.Name, i+1)
		}
		if f.Tool == t.Name {
			return nil, fmt.Errorf("tool %s: fallback %d is the tool itself", t.Name, i+1)
		}
		cf := &compiledFollowup{tool: f.Tool}
		if f.Args != "" {
			tt, err := compileTemplate(f.Args, true)
			if err != nil {
				return nil, fmt.Errorf("tool %s: fallback %s: %w", t.Name, f.Tool, err)
			}
			for _, m := range placeholderRE.FindAllStringSubmatch(f.Args, -1) {
				if strings.HasPrefix(m[1], "result.") || m[1] == "result" {
					return nil, fmt.Errorf("tool %s: fallback %s: %s: a fallback's arguments come from the call's arguments ({args.x} or {x}); it has no result", t.Name, f.Tool, m[0])
				}
			}
			cf.args = tt
		}
		out = append(out, cf)
	}
	return out, nil
}
