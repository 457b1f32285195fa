package config

import (
	"strings"
	"testing"
)

// TestConfigRefusesFractionsForWholeNumbers: a number with a fraction where
// a whole number is wanted is an error naming its line, not cut down
// silently (depth: 0.5 would become 0, no limit at all).
func TestConfigRefusesFractionsForWholeNumbers(t *testing.T) {
	for _, tc := range []struct{ config, line string }{
		{"max_body_bytes: 1.5\n", "line 1"},
		{"budgets:\n  default:\n    depth: 0.5\n", "line 3"},
		{"budgets:\n  default: {turns: 2.9, tool_calls: 10}\n", "line 2"},
		{"tools:\n  get_order:\n    retry: {attempts: 1.5}\n", "line 3"},
		{"tools:\n  get_order:\n    shape:\n      max_bytes: 100.25\n", "line 4"},
	} {
		c, err := Parse([]byte(tc.config), nil)
		if err == nil || !strings.Contains(err.Error(), tc.line) || !strings.Contains(err.Error(), "whole number") {
			got := ""
			if c != nil {
				got = "parsed as " + strings.TrimSpace(strings.ReplaceAll(tc.config, "\n", " "))
			}
			t.Errorf("%q: err %v %s; want an error naming %s and asking for a whole number", tc.config, err, got, tc.line)
		}
	}
	// Whole numbers, fractions where they are meant, and durations still read.
	for _, ok := range []string{
		"max_body_bytes: 1048576\nbudgets:\n  default: {turns: 30, tokens: 2e5, cost: 1.5, wall: 10m}\n",
		"model: {base_url: 'http://127.0.0.1:8000/v1', prices: {m: {input: 0.15, output: 0.6}}}\n",
	} {
		if _, err := Parse([]byte(ok), nil); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestConfigTabIndentSaysSo: a line indented with a tab (YAML allows only
// spaces) gets an error that names it and says to indent with spaces, not
// only "found character that cannot start any token".
func TestConfigTabIndentSaysSo(t *testing.T) {
	for _, config := range []string{
		"upstreams:\n\t- name: a\n\t  url: http://127.0.0.1:1/mcp\n",
		"listen: 127.0.0.1:7400\nbudgets:\n  default:\n\tturns: 3\n",
	} {
		_, err := Parse([]byte(config), nil)
		if err == nil {
			t.Fatalf("%q parsed", config)
		}
		if !strings.Contains(err.Error(), "tab") || !strings.Contains(err.Error(), "spaces") {
			t.Errorf("%q: %v; want it to say the line is indented with a tab, and to use spaces", config, err)
		}
	}
}

// TestConfigReportsFirstBadOverride: with several bad tool overrides (or
// budgets), the error is the first one in the file, the same every time,
// not whichever a map iteration meets first.
func TestConfigReportsFirstBadOverride(t *testing.T) {
	var b strings.Builder
	b.WriteString("tools:\n")
	for _, n := range []string{"m", "c", "x", "a", "q", "k", "z", "b"} {
		b.WriteString("  " + n + "_tool: {access: nope}\n")
	}
	b.WriteString("budgets:\n")
	for _, n := range []string{"m", "c", "x", "a"} {
		b.WriteString("  " + n + ": {turns: -1}\n")
	}
	for range 50 {
		_, err := Parse([]byte(b.String()), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "line 2: tool m_tool:") {
			t.Fatalf("%v, want the first bad override, line 2: tool m_tool", err)
		}
	}
	bud := "budgets:\n  m: {turns: -1}\n  c: {turns: -1}\n  x: {turns: -1}\n  a: {turns: -1}\n"
	for range 50 {
		_, err := Parse([]byte(bud), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "line 2: budget m:") {
			t.Fatalf("%v, want the first bad budget, line 2: budget m", err)
		}
	}
}

// TestConfigRefusesBadNumbersAndHeaders: a number that is not finite or
// is negative, anywhere in the configuration, a header name that is not
// one, a header value or model key with a line break (from the file or a
// variable), and more retry attempts than MaxRetryAttempts are errors
// that name the line and say what to write; a secret value is not quoted.
func TestConfigRefusesBadNumbersAndHeaders(t *testing.T) {
	env := map[string]string{"TOKEN": "Bearer sk-top-secret\n"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	const model = "model:\n  base_url: http://127.0.0.1:8000/v1\n"
	for _, tc := range []struct{ config, line, want string }{
		{"budgets:\n  default:\n    cost: .nan\n", "line 3", "budgets.default.cost is not a number"},
		{"budgets:\n  default:\n    cost: .inf\n", "line 3", "budgets.default.cost is infinite"},
		{"budgets:\n  a: {turns: 3}\n  b:\n    tokens: -1\n", "line 3", "budget b: amounts must not be negative"},
		{model + "  prices:\n    m: {input: 1, output: -.inf}\n", "line 4", "model.prices.m.output is infinite"},
		{model + "  prices:\n    m: {input: -0.5, output: 1}\n", "line 4", "model.prices.m.input is negative"},
		{model + "  prices:\n    m:\n      input: 1\n      output: .nan\n", "line 6", "model.prices.m.output is not a number"},
		{"tools:\n  get_order:\n    shape: {max_bytes: -10}\n", "line 3", "tools.get_order.shape.max_bytes is negative"},
		{"tools:\n  get_order:\n    retry:\n      attempts: 1000000\n", "line 4", "attempts: 10 or fewer"},
		{"max_body_bytes: -5\n", "line 1", "negative"},
		{"sessions_per_principal: -1\n", "line 1", "sessions_per_principal is negative"},
		{"refused_in_a_row: -1\n", "line 1", "negative"},
		{"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      X-Ok: fine\n      X Api Key: v\n", "line 6", "write e.g. X-Api-Key"},
		{"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      'X-Key:': v\n", "line 5", "not an HTTP header name"},
		{"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      X-Key: \"sk-top-secret\\r\\nX-Evil: 1\"\n", "line 5", "write it on one line"},
		{"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      Authorization: ${TOKEN}\n", "line 5", "trim the variable"},
		{model + "  api_key: ${TOKEN}\n", "line 3", "api_key holds a line break"},
	} {
		_, err := Parse([]byte(tc.config), lookup)
		if err == nil || !strings.Contains(err.Error(), tc.line+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n  err %v\n  want %s and %q", tc.config, err, tc.line, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-top-secret") {
			t.Errorf("%q: the error quotes the secret: %v", tc.config, err)
		}
	}
	for _, ok := range []string{
		"tools:\n  get_order:\n    retry: {attempts: 10}\n",
		"budgets:\n  default: {cost: 0, tokens: 0}\n",
		"sessions_per_principal: 100000\n",
		"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      X-Api-Key: \"tab\\tinside is fine\"\n",
	} {
		if _, err := Parse([]byte(ok), lookup); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestRefusedInARowOption: unset is the runtime's default (0), a written 0
// turns the rule off (below zero in reach.Options), a count is kept.
func TestRefusedInARowOption(t *testing.T) {
	for config, want := range map[string]int{"examples: true\n": 0, "refused_in_a_row: 0\n": -1, "refused_in_a_row: 3\n": 3} {
		c, err := Parse([]byte(config), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%q: %v", config, err)
		}
		if got := c.RefusedInARowOption(); got != want {
			t.Errorf("%q: RefusedInARowOption() = %d, want %d", config, got, want)
		}
	}
}
