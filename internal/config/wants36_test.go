package config

import (
	"strings"
	"testing"
)

// TestWrongShapeOfAnInnerValueSaysWhatItWants: a value of the wrong shape
// for a key deep in the configuration, where the key holds a mapping of
// names (an upstream's headers) or a value of a type of another package (a
// model's price), says what the key takes, in words: it said "see
// upstreams[0].headers", or named the Go type "budget.Price", which a user
// cannot act on.
func TestWrongShapeOfAnInnerValueSaysWhatItWants(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"upstreams:\n  - name: x\n    url: http://127.0.0.1:9/mcp\n    headers: [a]\n",
			"line 4: cannot unmarshal a list here; upstreams[0].headers wants a mapping of names, each to a string"},
		{"model:\n  base_url: http://127.0.0.1:9/v1\n  prices: {gpt: 3}\n",
			"line 3: cannot unmarshal the number `3` here; model.prices.gpt wants a mapping of input, output"},
		{"model:\n  base_url: http://127.0.0.1:9/v1\n  prices: [gpt]\n",
			"line 3: cannot unmarshal a list here; model.prices wants a mapping of names, each to a mapping of input, output"},
		{"model:\n  base_url: http://127.0.0.1:9/v1\n  output_limits: [gpt]\n",
			"line 3: cannot unmarshal a list here; model.output_limits wants a mapping of names, each to a whole number"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "budget.") || strings.Contains(err.Error(), "map[")) {
			t.Errorf("%q: %v names a Go type", tc.yaml, err)
		}
	}
}

// TestLimitKeyWrittenWithMaxIsNamed: a budget's limit written as other
// frameworks write theirs (max_turns, max_tool_calls, tokens_limit) is
// answered with the key reach reads: it said "unknown field max_turns" with
// no hint, as max_ is too far from turns for a misspelling.
func TestLimitKeyWrittenWithMaxIsNamed(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"budgets:\n  default:\n    max_turns: 10\n", "line 3: unknown field max_turns (did you mean turns?)"},
		{"budgets:\n  default: {max_tool_calls: 5}\n", "line 2: unknown field max_tool_calls (did you mean tool_calls?)"},
		{"budgets:\n  default: {tokens_limit: 5}\n", "line 2: unknown field tokens_limit (did you mean tokens?)"},
		{"budgets:\n  default: {maxDepth: 5}\n", "line 2: unknown field maxDepth (did you mean depth?)"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestPolicyWrittenAsAPathSaysHowToWriteIt: policy: written as the path of
// the file (policy: policies.cedar), as a new user writes it, says how to
// write it: {path: policies.cedar}; it said "policy wants a mapping of
// path", which left the reader to work out the braces.
func TestPolicyWrittenAsAPathSaysHowToWriteIt(t *testing.T) {
	_, err := Parse([]byte("policy: policies.cedar\n"), nil)
	if want := "line 1: cannot unmarshal the string `policies.cedar` here; policy wants a mapping of path: write policy: {path: policies.cedar}"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("policy: policies.cedar: %v, want an error containing %q", err, want)
	}
}

// TestOneKeyHintQuotesNoCredentials: the hint that writes a value alone
// into its mapping of one key does not write a value with a URL's
// user:password@ (an OTLP endpoint's) or a query or fragment (a key in
// ?api_key=), nor one it cannot quote whole.
func TestOneKeyHintQuotesNoCredentials(t *testing.T) {
	_, err := Parse([]byte("telemetry: http://user:pw@collector:4318\n"), nil)
	if err == nil || strings.Contains(err.Error(), "pw@") || !strings.Contains(err.Error(), "telemetry wants a mapping of otlp_endpoint") {
		t.Errorf("telemetry: URL with a password: %v, want it to say what telemetry wants, without the URL", err)
	}
	for _, u := range []string{"https://otlp.example/v1/traces?api_key=sk-live-SECRET123", "https://otlp.example/v1/traces#token=sk-live-SECRET123"} {
		_, err = Parse([]byte("telemetry: "+u+"\n"), nil)
		if err == nil || strings.Contains(err.Error(), "SECRET123") || !strings.Contains(err.Error(), "telemetry wants a mapping of otlp_endpoint") {
			t.Errorf("telemetry: URL with a key in its query: %v, want it to say what telemetry wants, without the URL", err)
		}
	}
	_, err = Parse([]byte("policy: \"a`b\"\n"), nil)
	if err == nil || strings.Contains(err.Error(), "{path: a}") {
		t.Errorf("policy: a`b: %v, want no hint of a value cut at the backquote", err)
	}
	_, err = Parse([]byte("policy: \"my policies/a, b.cedar\"\n"), nil)
	if want := `write policy: {path: "my policies/a, b.cedar"}`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("policy: a path with a space and a comma: %v, want %q (quoted, as YAML reads it in braces)", err, want)
	}
	_, err = Parse([]byte("secrets: secrets.env\n"), nil)
	if want := "secrets wants a mapping of file: write secrets: {file: secrets.env}"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("secrets: secrets.env: %v, want %q", err, want)
	}
}
