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
