package breaker

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) func() time.Time { return func() time.Time { return t0.Add(d) } }

func policy() Policy {
	return Policy{Failures: 3, Rate: 0.5, Window: time.Minute, MinCalls: 10, OpenFor: 10 * time.Second}
}

// TestOpensAndRecovers: failures in a row open the breaker; while open it
// admits nothing; after OpenFor one probe goes through (half-open), a
// second call is refused meanwhile, and the probe's success closes it.
func TestOpensAndRecovers(t *testing.T) {
	b := New(policy(), t0)
	var ch *Change
	for i := range 3 {
		tk, s, _ := b.Admit(at(0))
		if s != nil {
			t.Fatalf("call %d refused while closed", i+1)
		}
		ch = b.Failed(tk, t0.Add(time.Duration(i)*time.Second), "HTTP 503")
	}
	if ch == nil || ch.From != Closed || ch.To != Open || ch.RetryAt != t0.Add(12*time.Second) ||
		!strings.HasPrefix(ch.Reason, "3 transient failures in a row since 2026-12-01T10:00:00Z") {
		t.Fatalf("the third failure's change = %+v, want closed -> open, retry at +12s", ch)
	}
	if _, s, _ := b.Admit(at(11 * time.Second)); s == nil || s.State != Open || s.Failures != 3 || s.LastError != "HTTP 503" {
		t.Fatalf("a call while open: status %+v, want refused, open, 3 failures", s)
	}
	probe, s, ch := b.Admit(at(12 * time.Second))
	if s != nil || ch == nil || ch.To != HalfOpen {
		t.Fatalf("a call after OpenFor: status %+v, change %+v; want let through, half-open", s, ch)
	}
	if _, s, _ := b.Admit(at(13 * time.Second)); s == nil || !s.Probing {
		t.Fatalf("a second call while the probe is out: %+v, want refused, probing", s)
	}
	if ch := b.Succeeded(probe, t0.Add(14*time.Second)); ch == nil || ch.To != Closed || b.State() != Closed {
		t.Fatalf("the probe's success: change %+v, state %d; want closed", ch, b.State())
	}
	if s := b.Status(t0.Add(14 * time.Second)); s.Failures != 0 || s.LastError != "" || s.Opened != 1 || s.Calls != 0 {
		t.Errorf("status once closed = %+v, want the counts cleared, opened once", s)
	}
}

// TestProbeFailsOrIsAbandoned: a probe's failure opens the breaker again;
// an abandoned probe frees its slot for another call.
func TestProbeFailsOrIsAbandoned(t *testing.T) {
	b := New(policy(), t0)
	for range 3 {
		b.Failed(Ticket{}, t0, "down")
	}
	probe, _, _ := b.Admit(at(10 * time.Second))
	b.Abandoned(probe)
	probe2, s, _ := b.Admit(at(10 * time.Second))
	if s != nil {
		t.Fatalf("a call after the probe was abandoned: %+v, want let through", s)
	}
	ch := b.Failed(probe2, t0.Add(11*time.Second), "still down")
	if ch == nil || ch.To != Open || ch.Reason != "its probe failed: still down" || ch.RetryAt != t0.Add(21*time.Second) {
		t.Errorf("the probe's failure: %+v, want open again until +21s", ch)
	}
}

// TestFailureRate: once Window holds MinCalls attempts, a failure rate of
// Rate opens the breaker, without a run of Failures in a row.
func TestFailureRate(t *testing.T) {
	b := New(policy(), t0)
	var ch *Change
	for i := range 10 {
		now := t0.Add(time.Duration(i) * time.Second)
		if i%2 == 0 {
			ch = b.Failed(Ticket{}, now, "slow")
		} else {
			ch = b.Succeeded(Ticket{}, now)
		}
		if ch != nil && i < 8 {
			t.Fatalf("opened after %d attempts: %+v", i+1, ch)
		}
	}
	ch = b.Failed(Ticket{}, t0.Add(10*time.Second), "slow")
	if ch == nil || ch.To != Open || !strings.HasPrefix(ch.Reason, "6 of 11 attempts in the last 1m0s failed transiently") {
		t.Errorf("the failure that makes the rate: %+v, want open", ch)
	}
	// Attempts older than the window no longer count.
	b2 := New(policy(), t0)
	for i := range 9 {
		b2.Failed(Ticket{}, t0, "old")
		b2.Succeeded(Ticket{}, t0.Add(time.Duration(i)))
	}
	if ch := b2.Failed(Ticket{}, t0.Add(2*time.Minute), "new"); ch != nil {
		t.Errorf("a failure after the window passed opened it: %+v", ch)
	}
}

func TestDisabled(t *testing.T) {
	p := policy()
	p.Disabled = true
	b := New(p, t0)
	for range 10 {
		if ch := b.Failed(Ticket{}, t0, "x"); ch != nil {
			t.Fatalf("a disabled breaker changed state: %+v", ch)
		}
	}
	if s := b.Status(t0); s.Failures != 10 {
		t.Errorf("a disabled breaker's count = %d, want 10 (it still counts)", s.Failures)
	}
}

func TestExplain(t *testing.T) {
	s := &Status{State: Open, Since: t0.Add(2 * time.Second), FailingSince: t0, Failures: 5, LastError: "HTTP 503.",
		RetryAt: t0.Add(12 * time.Second)}
	code, msg, after := s.Explain("kb__search", "its upstream kb", t0.Add(4*time.Second))
	want := "kb__search is unavailable: its upstream kb has been failing since 2026-12-01T10:00:00Z (4s ago, 5 failures in a row); " +
		"the last failure: HTTP 503. Reach tries it again at 2026-12-01T10:00:12Z (in 8s); until then every call to it fails at once."
	if code != "breaker_open" || msg != want || after != 8*time.Second {
		t.Errorf("Explain = %q, %q, %v;\nwant breaker_open, %q, 8s", code, msg, after, want)
	}
	s.State = HalfOpen
	if code, _, after := s.Explain("t", "it", t0); code != "breaker_probing" || after != time.Second {
		t.Errorf("Explain while probing = %q, %v; want breaker_probing, 1s", code, after)
	}
	if got := clip(strings.Repeat("x", 300)+"é", 301); got != strings.Repeat("x", 300)+"…" {
		t.Errorf("clip cut inside a rune: %q", got[295:])
	}
}
