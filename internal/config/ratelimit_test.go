package config

import (
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestRateLimitConfig: rate_limit sets the runtime's token buckets (R8),
// global and per principal; absent or all zero, none; a rate that is not
// a finite number of calls a second, or a negative burst, is an error
// that names its line.
func TestRateLimitConfig(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for config, want := range map[string]*reach.RateLimit{
		"examples: true\n":               nil,
		"rate_limit: {}\n":               nil,
		"rate_limit: {per_second: 50}\n": {PerSecond: 50},
		"rate_limit:\n  per_second: 50\n  burst: 100\n  per_principal: 0.5\n  per_principal_burst: 3\n": {PerSecond: 50, Burst: 100, PerPrincipal: 0.5, PerPrincipalBurst: 3},
	} {
		c, err := Parse([]byte(config), none)
		if err != nil {
			t.Fatalf("%q: %v", config, err)
		}
		got := c.RateLimit.Limits()
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("%q: Limits() = %+v, want %+v", config, got, want)
		}
	}
	for _, tc := range []struct{ config, want string }{
		{"rate_limit:\n  per_second: -1\n", "line 2"},
		{"rate_limit:\n  per_principal: .nan\n", "line 2"},
		{"rate_limit:\n  per_second: .inf\n", "line 2"},
		{"rate_limit:\n  per_second: 5\n  burst: -1\n", "line 3"},
		{"rate_limit: {per_minute: 5}\n", "per_minute"},
	} {
		_, err := Parse([]byte(tc.config), none)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one naming %q", tc.config, err, tc.want)
		}
	}
}

// TestRateLimitPrioritiesConfig: rate_limit.reserved keeps a share of
// each bucket for priority requests; priorities names the highest
// priority each principal may use (others 0); model limits the model
// proxy's turns with buckets of their own (the same keys, the same
// reserve), nil when absent or all zero; both serve the reserve to the
// levels up to the highest priority in order (Levels). A reserved share outside [0, 1),
// or a model section with priorities or a model of its own, is an error
// naming its line.
func TestRateLimitPrioritiesConfig(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	c, err := Parse([]byte("rate_limit:\n  per_second: 50\n  reserved: 0.2\n  priorities: {oncall: 1, ops: 2}\n  model:\n    per_principal: 0.5\n    per_principal_burst: 4\n"), none)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RateLimit.Limits(); got == nil || got.Reserved != 0.2 || got.PerSecond != 50 || got.Levels != 2 {
		t.Errorf("Limits() = %+v, want 50 a second with 0.2 reserved for 2 levels (the highest priority)", got)
	}
	for p, want := range map[string]int{"oncall": 1, "ops": 2, "someone": 0} {
		if got := c.RateLimit.Priority(p, ""); got != want {
			t.Errorf("Priority(%q) = %d, want %d", p, got, want)
		}
	}
	m := c.RateLimit.ModelLimits()
	if m == nil || *m != (reach.RateLimit{PerPrincipal: 0.5, PerPrincipalBurst: 4, Reserved: 0.2, Levels: 2}) {
		t.Errorf("ModelLimits() = %+v, want 0.5 a second per principal, a burst of 4, 0.2 reserved for 2 levels", m)
	}
	c, err = Parse([]byte("rate_limit: {per_second: 5}\n"), none)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.RateLimit.ModelLimits(); m != nil {
		t.Errorf("ModelLimits() without model = %+v, want nil", m)
	}
	if p := (*RateLimit)(nil).Priority("x", ""); p != 0 {
		t.Errorf("no rate_limit: Priority = %d, want 0", p)
	}
	c, err = Parse([]byte("rate_limit:\n  model: {per_second: 2}\n"), none)
	if err != nil {
		t.Fatal(err)
	}
	if c.RateLimit.Limits() != nil || c.RateLimit.ModelLimits() == nil {
		t.Errorf("a model section alone: Limits() %+v ModelLimits() %+v, want tool calls unlimited and model turns limited", c.RateLimit.Limits(), c.RateLimit.ModelLimits())
	}
	for _, tc := range []struct{ config, want string }{
		{"rate_limit:\n  per_second: 5\n  reserved: 1\n", "line 3"},
		{"rate_limit:\n  per_second: 5\n  reserved: -0.1\n", "line 3"},
		{"rate_limit:\n  model:\n    priorities: {a: 1}\n", "line 3"},
		{"rate_limit:\n  model:\n    model: {per_second: 1}\n", "line 3"},
		{"rate_limit:\n  model:\n    per_second: -1\n", "line 3"},
	} {
		_, err := Parse([]byte(tc.config), none)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one naming %q", tc.config, err, tc.want)
		}
	}
}

// TestRateLimitInertWarnings: a reserve no principal's priority may use,
// and priorities with no reserve to use, are read by nothing: reach
// validate says so.
func TestRateLimitInertWarnings(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for config, want := range map[string]string{
		"rate_limit: {per_second: 5, reserved: 0.2}\n":                                   "rate_limit.reserved",
		"rate_limit: {per_second: 5, reserved: 0.2, priorities: {bulk: 0}}\n":            "rate_limit.reserved",
		"rate_limit: {per_second: 5, priorities: {oncall: 1}}\n":                         "rate_limit.priorities",
		"rate_limit: {model: {per_second: 5, reserved: 0.2}}\n":                          "rate_limit.reserved",
		"rate_limit: {per_second: 5, reserved: 0.2, priorities: {oncall: 1}}\n":          "",
		"rate_limit: {priorities: {oncall: 1}, model: {per_second: 5, reserved: 0.2}}\n": "",
	} {
		c, err := Parse([]byte(config), none)
		if err != nil {
			t.Fatalf("%q: %v", config, err)
		}
		w := strings.Join(c.InertWarnings(), "\n")
		if want == "" && w != "" || want != "" && !strings.HasPrefix(w, want) {
			t.Errorf("%q: warnings %q, want one that begins %q", config, w, want)
		}
	}
}
