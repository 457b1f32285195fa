package breaker

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/fault"
)

// Registry keeps an owner's breakers by kind and name, each made when it
// is first asked for, and holds what they need of their owner: where a
// call's request is found, how a failure reads, and who is told of a
// change of state. R is the owner's request (the runtime's *Request): a
// change names the request of the call that made it. Safe for concurrent
// use; make one with NewRegistry.
type Registry[R any] struct {
	def       *Policy
	requestOf func(context.Context) R
	describe  func(error) string
	ownerOf   func(R) string
	changed   func(b *Named[R], req R, c *Change)

	mu sync.Mutex
	m  map[string]*Named[R] // "kind:name" -> breaker
}

// Hooks are what a Registry's breakers need of their owner.
type Hooks[R any] struct {
	// RequestOf finds the request a context runs for (Named.Admit).
	RequestOf func(context.Context) R
	// Describe renders a failure for a status's last error and a change's
	// reason: one line, masked. If nil, the error's text.
	Describe func(error) string
	// Owner names whose a request is (its principal in its tenant): a
	// refusal tells the last failure (Status.LastError), which is what one
	// call said, only to the owner of that call's request. If nil, every
	// caller is told it.
	Owner func(R) string
	// Changed, if not nil, is told every change of state (its Kind and
	// Name set), with the request of the call that made it (the zero R
	// without one).
	Changed func(b *Named[R], req R, c *Change)
}

// NewRegistry returns an empty registry whose breakers take def (which
// may be nil) for the zero fields of their policies.
func NewRegistry[R any](def *Policy, h Hooks[R]) *Registry[R] {
	return &Registry[R]{def: def, requestOf: h.RequestOf, describe: h.Describe, ownerOf: h.Owner, changed: h.Changed, m: map[string]*Named[R]{}}
}

// Get returns the breaker of kind and name, made with policy p (over the
// registry's default) if missing; set says that p is its policy, so that
// an existing breaker takes it too (else it keeps its own).
func (g *Registry[R]) Get(kind, name string, p *Policy, set bool) *Named[R] {
	key := kind + ":" + name
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.m[key]
	if b == nil {
		b = &Named[R]{reg: g, kind: kind, name: name, m: New(Resolve(p, g.def), time.Now())}
		g.m[key] = b
		return b
	}
	if set {
		b.m.SetPolicy(Resolve(p, g.def))
	}
	return b
}

// Statuses returns the status of every breaker, sorted by kind and name.
func (g *Registry[R]) Statuses() []Status {
	g.mu.Lock()
	bs := make([]*Named[R], 0, len(g.m))
	for _, b := range g.m {
		bs = append(bs, b)
	}
	g.mu.Unlock()
	now := time.Now()
	out := make([]Status, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.status(now))
	}
	slices.SortFunc(out, func(a, b Status) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Named is a circuit breaker (closed, open, half-open) over the calls to
// one thing: a tool, an upstream, a model endpoint. It opens after
// Failures transient failures in a row, or a failure rate of Rate over
// Window; while open it fails calls at once; after OpenFor it lets one
// call through to probe, whose success closes it. It is the state machine
// (Breaker) with its kind and name, kept by a Registry. Safe for
// concurrent use.
type Named[R any] struct {
	reg        *Registry[R]
	kind, name string
	m          *Breaker
}

// Kind returns the breaker's kind ("tool", "upstream", "model", ...).
func (b *Named[R]) Kind() string { return b.kind }

// Name returns what the breaker is of: a tool's, an upstream's or an
// endpoint's name.
func (b *Named[R]) Name() string { return b.name }

// Status returns the breaker's state and counts.
func (b *Named[R]) Status() Status { return b.status(time.Now()) }

func (b *Named[R]) status(now time.Time) Status {
	s := b.m.Status(now)
	s.Kind, s.Name = b.kind, b.name
	return s
}

// State returns the breaker's state.
func (b *Named[R]) State() State { return b.m.State() }

// Admit lets a call through, or returns the structured error (type
// unavailable) of an open breaker: what is down and since when, when it
// will be tried again. A call let through must report its outcome on the
// Pass.
func (b *Named[R]) Admit(ctx context.Context) (Pass[R], *fault.Error) {
	p, s := b.Let(b.reg.requestOf(ctx))
	if s == nil {
		return p, nil
	}
	return p, s.Refusal(b.kind+" "+b.name, "it", time.Now())
}

// Let lets a call of req through, or returns the breaker's status when it
// is open (or half-open with its probe out): its last failure only to the
// owner of the call that failed (Hooks.Owner). A nil breaker lets every
// call through, with a Pass that reports nothing.
func (b *Named[R]) Let(req R) (Pass[R], *Status) {
	if b == nil {
		return Pass[R]{}, nil
	}
	if b.m.State() == Closed {
		return Pass[R]{b: b, req: req}, nil // the common case, without a call
	}
	t, s, ch := b.m.Admit(time.Now)
	if s != nil {
		if b.reg.ownerOf != nil && b.reg.ownerOf(req) != s.LastBy {
			// What another principal's call said (a customer's id, a
			// path of its tenant): the breaker is every caller's, the
			// failure was that call's.
			s.LastError = ""
		}
		return Pass[R]{}, s
	}
	b.changed(req, ch)
	return Pass[R]{b: b, t: t, req: req}, nil
}

// WouldAdmit reports whether a call would be let through at now; a nil
// breaker would.
func (b *Named[R]) WouldAdmit(now time.Time) bool { return b == nil || b.m.WouldAdmit(now) }

// changed tells the registry's owner of a change of state, if any.
func (b *Named[R]) changed(req R, c *Change) {
	if c == nil || b.reg.changed == nil {
		return
	}
	c.Kind, c.Name = b.kind, b.name
	b.reg.changed(b, req, c)
}

// Refusal is the error of a call to subject that a breaker in status s
// fails at once, at now; what names what is down, as the model should
// read it ("it", "its upstream kb"). See Explain.
func (s *Status) Refusal(subject, what string, now time.Time) *fault.Error {
	code, msg, after := s.Explain(subject, what, now)
	return &fault.Error{Guard: "breaker", Type: fault.TypeUnavailable, Code: code, Message: msg, RetryAfter: after}
}

// Pass is one admission through a Named breaker: report how the call
// went with exactly one of Succeeded, Failed or Abandoned. The zero Pass
// (a breaker that is off) reports nothing.
type Pass[R any] struct {
	b   *Named[R]
	t   Ticket
	req R // the request of the call, for the record of a change
}

// Succeeded reports that the call went through: the thing behind the
// breaker answered (a permanent failure is an answer too). A probe's
// success closes the breaker.
func (p Pass[R]) Succeeded() {
	if p.b != nil {
		p.succeededAt(time.Now())
	}
}

// succeededAt is Succeeded at a time the caller read already.
func (p Pass[R]) succeededAt(now time.Time) {
	if p.b != nil {
		p.b.changed(p.req, p.b.m.Succeeded(p.t, now))
	}
}

// Failed reports a transient failure (what the runtime's classification
// calls transient: a timeout, an upstream that cannot be reached, an
// HTTP 429 or 5xx, ...). It may open the breaker; a probe's failure opens
// it again.
func (p Pass[R]) Failed(err error) {
	b := p.b
	if b == nil {
		return
	}
	msg := ""
	if err != nil {
		if d := b.reg.describe; d != nil {
			msg = d(err)
		} else {
			msg = err.Error()
		}
	}
	by := ""
	if b.reg.ownerOf != nil {
		by = b.reg.ownerOf(p.req)
	}
	b.changed(p.req, b.m.FailedBy(p.t, time.Now(), msg, by))
}

// Abandoned reports a call that ended without an answer that says
// anything of the thing behind the breaker (it was cancelled, or refused
// before it was sent): a probe's slot is freed for another call.
func (p Pass[R]) Abandoned() {
	if p.b != nil {
		p.b.m.Abandoned(p.t)
	}
}

// Pair is a call's admissions through its tool's breaker and its
// upstream's, for the attempt about to run. Its zero value reports
// nothing.
type Pair[R any] struct {
	tool, up Pass[R]
}

// LetBoth admits an attempt of req through tool and up (either may be
// nil), or returns the one that is open, with its status; then nothing
// was admitted.
func LetBoth[R any](tool, up *Named[R], req R) (Pair[R], *Named[R], *Status) {
	tp, ts := tool.Let(req)
	if ts != nil {
		return Pair[R]{}, tool, ts
	}
	upp, us := up.Let(req)
	if us != nil {
		tp.Abandoned()
		return Pair[R]{}, up, us
	}
	return Pair[R]{tool: tp, up: upp}, nil, nil
}

// Abandon reports an attempt that ended without an answer to both
// breakers (see Pass.Abandoned), and spends the pair.
func (ps *Pair[R]) Abandon() {
	ps.tool.Abandoned()
	ps.up.Abandoned()
	*ps = Pair[R]{}
}

// Succeeded reports an attempt that succeeded, at a time the caller read
// already (when the call began, which places it in the window closely
// enough and spares a clock read), and spends the pair.
func (ps *Pair[R]) Succeeded(at time.Time) {
	ps.tool.succeededAt(at)
	ps.up.succeededAt(at)
	*ps = Pair[R]{}
}

// Failed reports an attempt that failed with err, and spends the pair.
// The tool's breaker counts every transient failure; the upstream's only
// those that say it could not be reached (unreachable: a failure of type
// unavailable, or no answer in time): any other failure is an answer, so
// the upstream is up.
func (ps *Pair[R]) Failed(err error, transient, unreachable bool) {
	if transient {
		ps.tool.Failed(err)
	} else {
		ps.tool.Succeeded() // the tool answered
	}
	if unreachable {
		ps.up.Failed(err)
	} else {
		ps.up.Succeeded() // the upstream answered
	}
	*ps = Pair[R]{}
}
