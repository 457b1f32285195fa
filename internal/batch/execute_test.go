package batch

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/records"
)

// TestExecute: a $ref gets the data of the call it names; calls on a
// cycle, and a call whose $ref names a failed call, are refused without
// running; results come back in the calls' order.
func TestExecute(t *testing.T) {
	calls := []Call{
		{ID: "a", Args: json.RawMessage(`{}`)},
		{ID: "b", Args: json.RawMessage(`{"x": {"$ref": "a.n"}}`)},
		{ID: "c", Args: json.RawMessage(`{"x": {"$ref": "d"}}`)},
		{ID: "d", Args: json.RawMessage(`{"x": {"$ref": "c"}}`)},
		{ID: "e", Args: json.RawMessage(`{"fail": true}`)},
		{ID: "f", Args: json.RawMessage(`{"x": {"$ref": "e.n"}}`)},
	}
	var ran atomic.Int32
	out := Execute(context.Background(), calls, func(_ context.Context, i int, args json.RawMessage) *records.Result {
		ran.Add(1)
		if strings.Contains(string(args), "fail") {
			return &records.Result{CallID: calls[i].ID, Status: records.StatusError}
		}
		return &records.Result{CallID: calls[i].ID, Status: records.StatusSuccess, Data: json.RawMessage(`{"n": 7, "got": ` + string(args) + `}`)}
	})
	if ran.Load() != 3 {
		t.Errorf("%d calls ran, want a, b and e", ran.Load())
	}
	if !strings.Contains(string(out[1].Data), `"got": {"x":7}`) {
		t.Errorf("b got %s, want a's n", out[1].Data)
	}
	for i, code := range map[int]string{2: "ref_cycle", 3: "ref_cycle", 5: "ref_failed"} {
		if r := out[i]; r.Status != records.StatusRefused || r.Error == nil || r.Error.Code != code || r.CallID != calls[i].ID {
			t.Errorf("%s: %+v, want refused with %s", calls[i].ID, r, code)
		}
	}
}

// TestDecode refuses what an envelope must not be, saying what to fix.
func TestDecode(t *testing.T) {
	type call struct {
		ID   string `json:"call_id"`
		Tool string `json:"tool"`
	}
	for data, want := range map[string]string{
		`{"tool_calls": []}`: "has no tool_calls",
		`{"tool_calls": [{"call_id": "a", "tool": "t"}, {"call_id": "a", "tool": "t"}]}`: `call_id "a" is used twice`,
		`{"tool_calls": [{"call_id": "a"}]}`:                                             "tool is required",
		`{"tool_calls": [{"tool": "t"}]}`:                                                "call_id is required",
		`{"tool_calls": [], "x": 1}`:                                                     "unknown field",
		`{"tool_calls": [{"call_id": "a", "tool": "t"}]} {}`:                             "unexpected data",
		// encoding/json takes the last of two names, and names in any case:
		// each of these ran the tool named last.
		`{"tool_calls": [{"call_id": "a", "tool": "t", "tool": "u"}]}`:                                   `tool_calls[0]: "tool" is given twice`,
		`{"tool_calls": [{"call_id": "a", "tool": "t", "TOOL": "u"}]}`:                                   `tool_calls[0]: "TOOL" is not a member of a call`,
		`{"tool_calls": [{"call_id": "a", "tool": "t"}, {"call_id": "b", "Tool": "u"}]}`:                 `tool_calls[1]: "Tool" is not a member`,
		`{"tool_calls": [{"call_id": "a", "tool": "t", "t\u006fol": "u"}]}`:                              `"tool" is given twice`,
		`{"Tool_Calls": [{"call_id": "a", "tool": "t"}]}`:                                                `"Tool_Calls" is not a member of the envelope`,
		`{"tool_calls": [{"call_id": "a", "tool": "t"}], "tool_calls": [{"call_id": "b", "tool": "u"}]}`: `"tool_calls" is given twice`,
	} {
		var env struct {
			ToolCalls []call `json:"tool_calls"`
		}
		err := Decode([]byte(data), &env, func() int { return len(env.ToolCalls) },
			func(i int) (string, string) { return env.ToolCalls[i].ID, env.ToolCalls[i].Tool })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want %q", data, err, want)
		}
	}
}
