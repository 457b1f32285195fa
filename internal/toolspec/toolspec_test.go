package toolspec

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/retry"
)

func nop(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }

// TestCompileDefaults: the defaults are in force after Compile, and the
// compiled tool's slices are its own.
func TestCompileDefaults(t *testing.T) {
	tags := []string{"kb"}
	ct, err := Compile[any](Tool{Name: "kb.search", Tags: tags, Func: nop}, 7*time.Second, 1000)
	if err != nil {
		t.Fatal(err)
	}
	tags[0] = "changed"
	switch {
	case ct.Access != Read, ct.Reentrancy != callgraph.NonReentrant, ct.OnViolation != callgraph.Refuse:
		t.Fatalf("defaults: access %q, reentrancy %q, on violation %q", ct.Access, ct.Reentrancy, ct.OnViolation)
	case ct.AttemptTimeout != 7*time.Second, ct.Shaping.MaxBytes != 1000, ct.Tags[0] != "kb":
		t.Fatalf("timeout %s, max bytes %d, tags %v", ct.AttemptTimeout, ct.Shaping.MaxBytes, ct.Tags)
	}
	// A read retries: its lease covers every attempt.
	if want := time.Duration(ct.Retrying.Attempts)*(7*time.Second+ct.Retrying.Max) + time.Minute; ct.Lease() != want {
		t.Fatalf("Lease() = %s, want %s", ct.Lease(), want)
	}
	w, _ := Compile[any](Tool{Name: "pay", Access: Write, Timeout: time.Second, Retry: &retry.Policy{Attempts: 5}, Func: nop}, 7*time.Second, 1000)
	if want := time.Second + w.Retrying.Max + time.Minute; w.Lease() != want || !w.Access.Writes() {
		t.Fatalf("a write that is not idempotent: Lease() = %s, want %s (one attempt)", w.Lease(), want)
	}
}

// TestCompileRefuses: each broken declaration is refused with what to fix.
func TestCompileRefuses(t *testing.T) {
	for _, c := range []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "a b", Func: nop}, "use 1-128 letters"},
		{Tool{Name: "a"}, "Func is nil"},
		{Tool{Name: "a", Access: "admin", Func: nop}, `unknown access level "admin"`},
		{Tool{Name: "a", Reentrancy: callgraph.Keyed, Func: nop}, "needs Key"},
		{Tool{Name: "a", InputSchema: json.RawMessage(`{"type": 3}`), Func: nop}, "tool a"},
		{Tool{Name: "a", Access: Write, Fallback: []Followup{{Tool: "b"}}, Func: nop}, "fallback is for reads"},
		{Tool{Name: "a", Undo: &Followup{Args: "{}"}, Access: Write, Func: nop}, "undo"},
	} {
		if _, err := Compile[any](c.tool, time.Second, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compile[any](%+v) = %v, want an error saying %q", c.tool, err, c.want)
		}
	}
}

// TestTyped decodes the arguments and refuses those that do not fit, as
// a permanent failure of type invalid_args.
func TestTyped(t *testing.T) {
	f := Typed(func(_ context.Context, in struct{ N int }) (int, error) { return in.N * 2, nil })
	if out, err := f(context.Background(), json.RawMessage(`{"N": 21}`)); err != nil || string(out) != "42" {
		t.Fatalf("f(21) = %s, %v", out, err)
	}
	_, err := f(context.Background(), json.RawMessage(`{"N": "x"}`))
	if te, ok := err.(*retry.ToolError); !ok || te.Type != "invalid_args" {
		t.Fatalf("f(x) = %v, want a ToolError of type invalid_args", err)
	}
}

// ValidName accepts what the counted pattern it replaced accepted, and
// nothing else: lengths 1 to 128 at the edges, any bytes between.
func TestValidNameBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"", false}, {"a", true}, {"get_order.v2-x", true},
		{strings.Repeat("a", 128), true}, {strings.Repeat("a", 129), false},
		{"a b", false}, {"é", false}, {"a\n", false}, {"\na", false},
	} {
		if got := ValidName(c.name); got != c.ok {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

func FuzzValidName(f *testing.F) {
	counted := regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,128}$`)
	for _, s := range []string{"", "a", "a b", "x.y-z_1", strings.Repeat("b", 128), strings.Repeat("b", 129), "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidName(s), counted.MatchString(s); got != want {
			t.Fatalf("ValidName(%q) = %v, the counted pattern %v", s, got, want)
		}
	})
}
