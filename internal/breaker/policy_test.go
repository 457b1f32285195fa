package breaker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestStateText(t *testing.T) {
	for _, s := range []State{Closed, Open, HalfOpen} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Fatalf("%s: read back %v, %v", b, back, err)
		}
	}
	if Open.String() != "open" || HalfOpen.String() != "half_open" || State(7).String() != "unknown" {
		t.Fatalf("names: %s %s %s", Open, HalfOpen, State(7))
	}
	var s State
	if err := s.UnmarshalText([]byte("ajar")); err == nil || !strings.Contains(err.Error(), `"ajar"`) {
		t.Fatalf("UnmarshalText(ajar) = %v, want an error naming it", err)
	}
	out, _ := json.Marshal(Change{Kind: "tool", Name: "kb", From: Closed, To: Open})
	if !strings.Contains(string(out), `"from":"closed","to":"open"`) {
		t.Fatalf("a change's states are written by name: %s", out)
	}
}

func TestResolve(t *testing.T) {
	want := Policy{Failures: DefaultFailures, Rate: DefaultRate, Window: DefaultWindow, MinCalls: DefaultMinCalls, OpenFor: DefaultOpenFor}
	if got := Resolve(nil, nil); got != want {
		t.Fatalf("Resolve(nil, nil) = %+v, want the defaults %+v", got, want)
	}
	def := &Policy{Failures: 9, Window: time.Hour, Disabled: true}
	got := Resolve(&Policy{Failures: 2, Rate: 0.25}, def)
	want = Policy{Failures: 2, Rate: 0.25, Window: time.Hour, MinCalls: DefaultMinCalls, OpenFor: DefaultOpenFor, Disabled: true}
	if got != want {
		t.Fatalf("Resolve = %+v, want %+v (own fields, then def's, then the defaults)", got, want)
	}
}

func TestPolicyCheck(t *testing.T) {
	var nilPolicy *Policy
	for _, c := range []struct {
		p    *Policy
		want string
	}{
		{nilPolicy, ""},
		{&Policy{Failures: 3, Rate: 1}, ""},
		{&Policy{OpenFor: -time.Second}, "must not be negative"},
		{&Policy{Rate: 1.5}, "from 0 to 1"},
	} {
		err := c.p.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%+v) = %v, want %q", c.p, err, c.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	open := &Status{State: Open, RetryAt: time.Date(2026, 12, 1, 10, 0, 10, 0, time.UTC)}
	if got := open.Suggest("kb", []string{"a", "b", "c"}); got != "Use a, b or c instead, or go on without kb; it may work again after 2026-12-01T10:00:10Z." {
		t.Fatalf("open, with alternatives: %q", got)
	}
	probing := &Status{State: HalfOpen}
	if got := probing.Suggest("kb", nil); got != "Go on without kb, or tell the user that it is down; it may work again in a moment." {
		t.Fatalf("probing, none: %q", got)
	}
	if got := probing.Suggest("kb", []string{"a"}); got != "Use a instead, or go on without kb; it may work again in a moment." {
		t.Fatalf("probing, one: %q", got)
	}
}
