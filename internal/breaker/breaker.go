// Package breaker is the state machine of a circuit breaker: closed, open,
// half-open. It counts transient failures in a row and the failure rate
// over a window of time, opens, fails calls at once while open, and lets
// one call through to probe once its interval has passed. The runtime
// wraps it (reach.Breaker), names it, classifies failures and records
// its changes of state.
//
//	b := breaker.New(breaker.Policy{Failures: 5, Rate: 0.5, Window: time.Minute, MinCalls: 20, OpenFor: 10 * time.Second}, time.Now())
//	t, open := b.Admit(time.Now())
//	if open != nil { /* fail at once: open.Explain(...) */ }
//	change := b.Failed(t, time.Now(), "HTTP 503") // or Succeeded, or Abandoned
package breaker

import (
	"cmp"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/enumtext"
)

// State is the state of a breaker.
type State int32

// Breaker states.
const (
	// Closed lets every call through and counts their failures.
	Closed State = iota
	// Open fails every call at once until its probe interval ends.
	Open
	// HalfOpen lets one call through to probe: its success closes the
	// breaker, its failure opens it again.
	HalfOpen
)

var stateNames = []string{"closed", "open", "half_open"}

func (s State) String() string { return enumtext.Name(stateNames, s) }

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := enumtext.Parse[State](stateNames, b, "breaker state")
	if err == nil {
		*s = v
	}
	return err
}

// Policy configures a circuit breaker: a tool's, an upstream's, or one a
// caller makes with Runtime.Breaker (the gateway's model endpoints). A
// zero field takes the runtime's default (Options.Breaker), and where that
// is zero too, the default its comment states (Resolve). The state machine
// runs on a resolved policy.
type Policy struct {
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

// Default settings (see Policy).
const (
	DefaultFailures = 5
	DefaultRate     = 0.5
	DefaultWindow   = time.Minute
	DefaultMinCalls = 20
	DefaultOpenFor  = 10 * time.Second
)

// Check returns an error naming the first field of p out of range.
func (p *Policy) Check() error {
	switch {
	case p == nil:
		return nil
	case p.Failures < 0, p.MinCalls < 0, p.Window < 0, p.OpenFor < 0:
		return fmt.Errorf("breaker: failures, min_calls, window and open_for must not be negative (zero means the default)")
	case p.Rate < 0 || p.Rate > 1:
		return fmt.Errorf("breaker: rate is a fraction of the attempts, from 0 to 1 (zero means the default %v); got %v", DefaultRate, p.Rate)
	}
	return nil
}

// Resolve returns p (nil: all zero) with every zero field taken from def,
// then from the defaults, as the state machine takes it.
func Resolve(p, def *Policy) Policy {
	var out, d Policy
	if p != nil {
		out = *p
	}
	if def != nil {
		d = *def
	}
	return Policy{
		Failures: cmp.Or(out.Failures, d.Failures, DefaultFailures),
		Rate:     cmp.Or(out.Rate, d.Rate, DefaultRate),
		Window:   cmp.Or(out.Window, d.Window, DefaultWindow),
		MinCalls: cmp.Or(out.MinCalls, d.MinCalls, DefaultMinCalls),
		OpenFor:  cmp.Or(out.OpenFor, d.OpenFor, DefaultOpenFor),
		Disabled: out.Disabled || d.Disabled,
	}
}

// Status is a breaker's state and counts, as /healthz, /metrics and the
// UI show it. The state machine leaves Kind and Name to its owner.
type Status struct {
	Kind  string `json:"kind"` // "tool", "upstream", or a caller's kind ("model")
	Name  string `json:"name"`
	State State  `json:"state"`
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
	// LastBy is whose call LastError is of (the registry's Owner of its
	// request, "" for none): a refusal tells LastError to that owner only
	// (Named.Let). Never shown.
	LastBy string `json:"-"`
	// Calls and Failed are the attempts in its window, and those that
	// failed transiently.
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
	// Opened counts how often it opened since it was made.
	Opened int64 `json:"opened"`
}

// Change is a breaker's change of state, to be logged and recorded (the
// runtime's Event.Breaker; the audit log keeps it). The state machine
// leaves Kind and Name to its owner.
type Change struct {
	Kind   string    `json:"kind"`
	Name   string    `json:"name"`
	From   State     `json:"from"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// RetryAt is, when it opened, when it lets a probe through.
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Ticket is one admission through a Breaker: report how the call went
// with exactly one of Succeeded, Failed or Abandoned.
type Ticket struct {
	probe uint64 // for a probe, the breaker's generation when it was let through, plus one; 0 for no probe (one word, not a bool and a word: a call carries two)
}

// isProbe reports whether t is a probe's, and gen the generation it was let
// through in.
func (t Ticket) isProbe() bool { return t.probe != 0 }
func (t Ticket) gen() uint64   { return t.probe - 1 }

// Breaker is one breaker. Safe for concurrent use.
type Breaker struct {
	state atomic.Int32 // State; read without the lock while closed

	mu      sync.Mutex
	pol     Policy
	streak  int       // transient failures in a row
	failing time.Time // the first of them
	since   time.Time // when it entered its state
	until   time.Time // open: when a probe may go
	probing bool      // half-open: the probe is out
	gen     uint64    // bumped at each change of state
	last    string    // the last failure, clipped
	lastBy  string    // whose call it was of (FailedBy)
	opened  int64
	win     window
}

// New returns a closed breaker with policy p, closed since now.
func New(p Policy, now time.Time) *Breaker {
	return &Breaker{pol: p, since: now}
}

// SetPolicy replaces the breaker's policy.
func (b *Breaker) SetPolicy(p Policy) {
	b.mu.Lock()
	b.pol = p
	b.mu.Unlock()
}

// State returns the breaker's state.
func (b *Breaker) State() State { return State(b.state.Load()) }

// Status returns the breaker's state and counts at now.
func (b *Breaker) Status(now time.Time) Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statusLocked(now)
}

func (b *Breaker) statusLocked(now time.Time) Status {
	s := Status{State: State(b.state.Load()), Since: b.since, FailingSince: b.failing,
		Failures: b.streak, Probing: b.probing, LastError: b.last, LastBy: b.lastBy, Opened: b.opened}
	if s.State == Open {
		s.RetryAt = b.until
	}
	s.Calls, s.Failed = b.win.counts(now, b.pol.Window)
	return s
}

// Admit lets a call through (with the change of state it made, if its
// probe interval passed: open to half-open), or returns the breaker's
// status when it is open, or half-open with its probe out. A closed
// breaker reads no clock: now is called only when the breaker is not
// closed.
func (b *Breaker) Admit(now func() time.Time) (Ticket, *Status, *Change) {
	if State(b.state.Load()) == Closed {
		return Ticket{}, nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pol.Disabled {
		return Ticket{}, nil, nil
	}
	t := now()
	switch State(b.state.Load()) {
	case Closed:
		return Ticket{}, nil, nil
	case Open:
		if t.Before(b.until) {
			s := b.statusLocked(t)
			return Ticket{}, &s, nil
		}
		ch := b.setLocked(HalfOpen, t, fmt.Sprintf("its probe interval (%s) passed: one call goes through to probe", b.pol.OpenFor))
		b.probing = true
		return Ticket{probe: b.gen + 1}, nil, ch
	default: // half-open
		if b.probing {
			s := b.statusLocked(t)
			return Ticket{}, &s, nil
		}
		b.probing = true
		return Ticket{probe: b.gen + 1}, nil, nil
	}
}

// WouldAdmit reports whether a call would be let through at now.
func (b *Breaker) WouldAdmit(now time.Time) bool {
	if State(b.state.Load()) == Closed {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch State(b.state.Load()) {
	case Open:
		return b.pol.Disabled || !now.Before(b.until)
	case HalfOpen:
		return b.pol.Disabled || !b.probing
	}
	return true
}

// setLocked moves the breaker to state st and returns the change.
func (b *Breaker) setLocked(st State, now time.Time, reason string) *Change {
	from := State(b.state.Load())
	b.state.Store(int32(st))
	b.since = now
	b.gen++
	b.probing = false
	ch := &Change{From: from, To: st, Reason: reason, At: now}
	switch st {
	case Open:
		b.until = now.Add(b.pol.OpenFor)
		b.opened++
		ch.RetryAt = b.until
	case Closed:
		b.streak, b.failing, b.last, b.lastBy = 0, time.Time{}, "", ""
		b.win = window{}
	}
	return ch
}

// Succeeded reports that the call of t went through, at now: the thing
// behind the breaker answered (a permanent failure is an answer too). A
// probe's success closes the breaker; it returns the change, if any.
func (b *Breaker) Succeeded(t Ticket, now time.Time) *Change {
	b.mu.Lock()
	var ch *Change
	switch {
	case t.isProbe():
		if State(b.state.Load()) == HalfOpen && b.gen == t.gen() {
			ch = b.setLocked(Closed, now, "its probe succeeded")
		}
	case State(b.state.Load()) == Closed:
		b.win.add(now, b.pol.Window, false)
		if b.streak > 0 {
			b.streak, b.failing = 0, time.Time{}
		}
	}
	b.mu.Unlock()
	return ch
}

// Failed reports a transient failure of the call of t at now, msg saying
// what it was (one line, masked; it is clipped to 300 bytes). It may open
// the breaker, and a probe's failure opens it again; it returns the
// change, if any.
func (b *Breaker) Failed(t Ticket, now time.Time, msg string) *Change {
	return b.FailedBy(t, now, msg, "")
}

// FailedBy is Failed of a call of owner by (Status.LastBy).
func (b *Breaker) FailedBy(t Ticket, now time.Time, msg, by string) *Change {
	msg = clip(msg, 300)
	b.mu.Lock()
	defer b.mu.Unlock()
	st := State(b.state.Load())
	switch {
	case t.isProbe():
		if st == HalfOpen && b.gen == t.gen() {
			b.streak++
			b.last, b.lastBy = msg, by
			return b.setLocked(Open, now, "its probe failed: "+msg)
		}
	case st == Closed:
		b.win.add(now, b.pol.Window, true)
		b.streak++
		if b.streak == 1 {
			b.failing = now
		}
		b.last, b.lastBy = msg, by
		if b.pol.Disabled {
			break
		}
		if b.streak >= b.pol.Failures {
			return b.setLocked(Open, now, fmt.Sprintf("%d transient failures in a row since %s, the last: %s",
				b.streak, b.failing.UTC().Format(time.RFC3339), msg))
		}
		if calls, failed := b.win.counts(now, b.pol.Window); calls >= b.pol.MinCalls && float64(failed) >= b.pol.Rate*float64(calls) {
			return b.setLocked(Open, now, fmt.Sprintf("%d of %d attempts in the last %s failed transiently, the last: %s",
				failed, calls, b.pol.Window, msg))
		}
	}
	return nil
}

// Abandoned reports a call of t that ended without an answer that says
// anything of the thing behind the breaker (it was cancelled, or refused
// before it was sent): a probe's slot is freed for another call.
func (b *Breaker) Abandoned(t Ticket) {
	if !t.isProbe() {
		return
	}
	b.mu.Lock()
	if State(b.state.Load()) == HalfOpen && b.gen == t.gen() {
		b.probing = false
	}
	b.mu.Unlock()
}

// Explain says, for a model, why a call to subject fails at once on a
// breaker in status s, at now: what ("it", "its upstream kb") is down and
// since when, its last failure, and when it is tried again. It returns the
// error code ("breaker_open", or "breaker_probing" while a probe is out),
// the message, and how long until a retry may pass.
func (s *Status) Explain(subject, what string, now time.Time) (code, message string, retryAfter time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is unavailable: %s ", subject, what)
	if !s.FailingSince.IsZero() {
		fmt.Fprintf(&b, "has been failing since %s (%s ago", Stamp(s.FailingSince), ago(now.Sub(s.FailingSince)))
		if s.Failures > 1 {
			fmt.Fprintf(&b, ", %d failures in a row", s.Failures)
		}
		b.WriteString(")")
	} else {
		fmt.Fprintf(&b, "has been failing since %s", Stamp(s.Since))
	}
	if s.LastError != "" {
		fmt.Fprintf(&b, "; the last failure: %s", strings.TrimSuffix(s.LastError, "."))
	}
	b.WriteString(". ")
	if s.State == Open {
		retryAfter = max(s.RetryAt.Sub(now), time.Millisecond)
		fmt.Fprintf(&b, "Reach tries it again at %s (in %s); until then every call to it fails at once.", Stamp(s.RetryAt), ago(retryAfter))
		return "breaker_open", b.String(), retryAfter
	}
	b.WriteString("One call is testing right now whether it is back; the others fail at once until it answers.")
	return "breaker_probing", b.String(), time.Second
}

// Suggest is what the model should do about a call of tool that the
// breaker in status s fails at once: use one of alternatives (if any), or
// go on without it, and when it may work again.
func (s *Status) Suggest(tool string, alternatives []string) string {
	retry := "it may work again"
	if s.State == Open {
		retry += " after " + Stamp(s.RetryAt)
	} else {
		retry += " in a moment"
	}
	if len(alternatives) > 0 {
		return fmt.Sprintf("Use %s instead, or go on without %s; %s.", orList(alternatives), tool, retry)
	}
	return fmt.Sprintf("Go on without %s, or tell the user that it is down; %s.", tool, retry)
}

// orList joins s as "a, b or c".
func orList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Stamp writes a time for a model: UTC, RFC 3339.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ago renders a duration for a model, to the second (or the millisecond
// under one).
func ago(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// clip cuts s to n bytes, on a rune boundary, with an ellipsis.
func clip(s string, n int) string {
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
