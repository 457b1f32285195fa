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
