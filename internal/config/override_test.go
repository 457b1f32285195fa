package config

import (
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestToolOverrideDecodesIntoReachTypes: an override's YAML lands in the
// reach types it patches, and Apply sets what it names and nothing else.
func TestToolOverrideDecodesIntoReachTypes(t *testing.T) {
	cfg, err := Parse([]byte(`tools:
  refund:
    access: high_risk
    timeout: 10s
    retry: {attempts: 2, base: 200ms, max: 2s}
    idempotent: true
    shape: {fields: [id, status], flatten: true, max_bytes: 4096}
    tags: [money]
    writes: ["order:{order_id}"]
    undo: {tool: cancel, args: '{"id": "{result.id}"}'}
    verify: {tool: get, args: '{"id": "{result.id}"}', condition: 'output.ok'}
    refresh: null
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := reach.Tool{Name: "refund", Description: "kept", Access: reach.Write, Tags: []string{"upstream:shop", "old"}, Retryable: true}
	o := cfg.Tools["refund"]
	o.Apply(&tool)
	want := reach.Tool{Name: "refund", Description: "kept", Access: reach.HighRisk, Timeout: 10 * time.Second,
		Retry:      &reach.RetryPolicy{Attempts: 2, Base: 200 * time.Millisecond, Max: 2 * time.Second},
		Idempotent: true, Retryable: true,
		Shape: &reach.Shape{Fields: []string{"id", "status"}, Flatten: true, MaxBytes: 4096},
		Tags:  []string{"upstream:shop", "money"}, Writes: []string{"order:{order_id}"},
		Undo:   &reach.Followup{Tool: "cancel", Args: `{"id": "{result.id}"}`},
		Verify: &reach.Verify{Followup: reach.Followup{Tool: "get", Args: `{"id": "{result.id}"}`}, Condition: "output.ok"}}
	if diff := cmp.Diff(want, tool, cmpopts.IgnoreFields(reach.Tool{}, "Func")); diff != "" {
		t.Errorf("the patched tool (-want +got):\n%s", diff)
	}
	if o.Retry == tool.Retry || o.Shape == tool.Shape {
		t.Errorf("Apply shares the override's values with the tool")
	}
}

// TestToolOverrideErrorsNameTheLine: within an override as anywhere, an
// unknown or repeated key and a value of the wrong type name their line.
func TestToolOverrideErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "tools:\n  x:\n    acess: read\n", "line 3: unknown field acess (did you mean access?)"},
		{"misspelt budget key", "budgets:\n  default: {tool_call: 3}\n", "line 2: unknown field tool_call (did you mean tool_calls?)"},
		{"misspelt breaker key", "breaker: {failure: 3}\n", "line 1: unknown field failure (did you mean failures?)"},
		{"unknown key, nothing close", "tools:\n  x:\n    colour: red\n", "line 3: unknown field colour"},
		{"unknown nested key", "tools:\n  x:\n    retry:\n      tries: 2\n", "line 4: unknown field tries"},
		{"repeated key", "tools:\n  x:\n    access: read\n    access: write\n", `line 4: mapping key "access" already defined at line 3`},
		{"list for a mapping", "tools:\n  x:\n    shape: [a]\n", "line 3: cannot unmarshal a list here"},
		{"string for a number", "tools:\n  x:\n    retry: {attempts: many}\n", "line 3: cannot unmarshal the string `many` into a whole number"},
		{"negative duration", "tools:\n  x:\n    retry: {base: -1s}\n", `line 3: "-1s" is negative; a duration is 0 or more`},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestWrongShapeSaysWhatTheKeyWants: a value of the wrong shape for a part
// of the configuration (a string for model:, a mapping for upstreams:)
// says which key it was and what that key takes: it said "cannot
// unmarshal the string here", naming neither, which on a one-line mapping
// left the reader to guess.
func TestWrongShapeSaysWhatTheKeyWants(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"model: http://127.0.0.1:8000/v1\n", "line 1: cannot unmarshal the string `http://...` here; model wants a mapping of base_url, api_key,"},
		{"upstreams: {name: x, url: 'http://h/mcp'}\n", "upstreams wants a list, each item a mapping of name, url,"},
		{"agents: executor\n", "agents wants a list, each item a mapping of name, url,"},
		{"auth: true\n", "auth wants a mapping of keys, jwt"},
		{"tools: [get_order]\n", "tools wants a mapping of names, each to a mapping of access,"},
		{"budgets: {default: 3}\n", "line 1: cannot unmarshal the number here; budgets.default wants a mapping of cost, depth, principals, tenants, tokens, tool_calls, turns, wall"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}
