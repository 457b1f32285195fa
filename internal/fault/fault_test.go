package fault

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestIsByType(t *testing.T) {
	for _, c := range []struct {
		e    *Error
		want []error
	}{
		{&Error{Type: TypeCycle}, []error{ErrRefused}},
		{&Error{Type: TypeBudget}, []error{ErrRefused, ErrBudget}},
		{&Error{Type: TypeTool}, []error{ErrToolFailed}},
		{&Error{Type: TypeTransient}, []error{ErrToolFailed}},
		{&Error{Type: TypeUnavailable}, []error{ErrToolFailed, ErrUnavailable}},
		{Cancelled(&Error{Type: TypeStopped}), []error{ErrCancelled}},
	} {
		for _, s := range []error{ErrRefused, ErrCancelled, ErrToolFailed, ErrBudget, ErrUnavailable} {
			want := false
			for _, w := range c.want {
				want = want || w == s
			}
			if got := errors.Is(fmt.Errorf("wrapped: %w", c.e), s); got != want {
				t.Errorf("type %s (cancelled %v): Is(%v) = %v, want %v", c.e.Type, c.e.cancelled, s, got, want)
			}
		}
	}
}

func TestModelText(t *testing.T) {
	e := &Error{Code: "invalid_arguments", Message: "The arguments are invalid.", Retry: "3/3", RetryAfter: 1500 * time.Microsecond,
		Fields:       []FieldError{{Path: "/q", Problem: "missing", Fix: "give a query"}, {Problem: "not an object"}},
		Alternatives: []string{"kb.search", "web.search"}, Suggestion: "Fix them and call again."}
	want := "The arguments are invalid.\n- /q: missing (give a query)\n- not an object\nAttempts: 3/3.\nRetry after 2ms.\n" +
		"You may use instead: kb.search, web.search.\nFix them and call again."
	if got := e.ModelText(); got != want {
		t.Fatalf("ModelText =\n%s\nwant\n%s", got, want)
	}
	if got := e.Error(); got != "invalid_arguments: The arguments are invalid. Fix them and call again." {
		t.Fatalf("Error() = %q", got)
	}
}

func TestAs(t *testing.T) {
	if As(nil) != nil {
		t.Fatal("As(nil) is not nil")
	}
	e := &Error{Code: "x"}
	if As(fmt.Errorf("at: %w", e)) != e {
		t.Fatal("As does not keep an *Error")
	}
	if got := As(errors.New("boom")); got.Type != TypeTool || got.Code != "tool_error" || got.Message != "boom" {
		t.Fatalf("As(boom) = %+v", got)
	}
	stop := As(&StopError{Cause: Cause{Mode: Cancel, By: "alice", Reason: "enough", Request: "r1"}})
	if stop.Code != "stopped_cancel" || !errors.Is(stop, ErrCancelled) || errors.Is(stop, ErrRefused) || !strings.Contains(stop.Message, "by alice: enough") {
		t.Fatalf("a stop = %+v", stop)
	}
	spent := As(&StopError{Cause: Cause{Mode: Cancel, Budget: "tool_calls", Reason: "9 of 9", Request: "r1"}})
	if spent.Type != TypeBudget || spent.Code != "budget_tool_calls" || !strings.Contains(spent.Message, "tool-call budget") || !errors.Is(spent, ErrCancelled) {
		t.Fatalf("a budget's stop = %+v", spent)
	}
	in := As(&InterruptedError{Cause: Cause{Request: "r2", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}})
	if in.Code != "request_interrupted" || !errors.Is(in, ErrRefused) || !strings.Contains(in.Message, "at 2026-01-02T03:04:05Z: the gateway restarted while it ran") {
		t.Fatalf("an interruption = %+v", in)
	}
}

func TestStopMode(t *testing.T) {
	for _, m := range []StopMode{Soft, Cancel, Isolate} {
		if got, err := ParseStopMode(m.String()); err != nil || got != m {
			t.Fatalf("ParseStopMode(%s) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseStopMode("hard"); err == nil || !strings.Contains(err.Error(), "soft, cancel or isolate") {
		t.Fatalf("ParseStopMode(hard) = %v, want an error that lists the modes", err)
	}
	if !errors.Is(&StopError{Cause: Cause{Budget: "tokens"}}, ErrBudget) || errors.Is(&StopError{}, ErrBudget) {
		t.Fatal("a StopError matches ErrBudget only for a budget's stop")
	}
}

func TestMasked(t *testing.T) {
	mask := func(s string) string { return strings.ReplaceAll(s, "sk-123", "[redacted]") }
	clean := &Error{Message: "fine", Fields: []FieldError{{Problem: "p"}}}
	if Masked(clean, mask) != clean {
		t.Fatal("an error with nothing to mask was copied")
	}
	e := Cancelled(&Error{Message: "key sk-123 refused", Suggestion: "ok",
		Fields: []FieldError{{Path: "/a", Problem: "fine"}, {Path: "/k", Problem: "sk-123 is wrong", Fix: "not sk-123"}}})
	m := Masked(e, mask)
	if m == e || m.Message != "key [redacted] refused" || m.Fields[1].Problem != "[redacted] is wrong" || m.Fields[1].Fix != "not [redacted]" ||
		m.Fields[0].Problem != "fine" || !errors.Is(m, ErrCancelled) {
		t.Fatalf("Masked = %+v", m)
	}
	if e.Message != "key sk-123 refused" || e.Fields[1].Problem != "sk-123 is wrong" {
		t.Fatalf("Masked changed the original: %+v", e)
	}
}

func TestBudgetSpent(t *testing.T) {
	e := BudgetSpent("tool_calls", true, "r1/sub", "9 of 9")
	if e.Code != "budget_tool_calls" || e.Message != "The tool-call budget of this sub-agent (r1/sub) is spent: 9 of 9." ||
		!errors.Is(e, ErrBudget) || !errors.Is(e, ErrRefused) {
		t.Fatalf("a sub-agent's: %+v", e)
	}
	if e := BudgetSpent("tokens", false, "r1", "x"); !strings.Contains(e.Message, "tokens budget of this request (r1)") {
		t.Fatalf("a request's: %+v", e)
	}
}
