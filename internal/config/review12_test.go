package config

import (
	"strings"
	"testing"
)

// TestWrongShapeNamesNestedKey: a value of the wrong shape under a key that
// takes a scalar (store, a duration) or under a nested key (a tool's entry,
// a budget's limit) says which key it was and what it takes, as a part of
// the configuration's does: "store: [x]" said only "cannot unmarshal a list
// here", "tools: {refund_order: high_risk}" named no key.
func TestWrongShapeNamesNestedKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"store: [x]\n", "line 1: cannot unmarshal a list here; store wants a string"},
		{"approvals: {ttl: [1]}\n", "line 1: approvals.ttl wants a duration"},
		{"tools:\n  refund_order: high_risk\n", "line 2: cannot unmarshal the string here; tools.refund_order wants a mapping of access,"},
		{"budgets: {default: 3}\n", "line 1: cannot unmarshal the number here; budgets.default wants a mapping of cost,"},
		{"model: http://127.0.0.1:8000/v1\n", "line 1: cannot unmarshal the string `http://...` here; model wants a mapping of base_url, api_key,"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestCommandAsOneString: an upstream's command written as one string (as
// in a shell) says how to write it, a word each, quoted where YAML needs it
// and whole even when the library's message cuts the string short; it said
// only "cannot unmarshal the string into a list of strings; see
// upstreams[0].command".
func TestCommandAsOneString(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"upstreams:\n  - {name: a, command: \"npx -y foo\"}\n", "line 2: cannot unmarshal the string `npx -y foo` into a list of strings; upstreams[0].command wants a list of strings, a word each: [npx, -y, foo]"},
		{"upstreams:\n  - name: mem\n    command: npx -y @modelcontextprotocol/server-memory\n", `upstreams[0].command wants a list of strings, a word each: [npx, -y, "@modelcontextprotocol/server-memory"]`},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}
