package reach

import (
	"context"
	"encoding/json"
	"testing"
)

// TestMissingExplainsUnregisteredTool: Options.Missing's refusal replaces
// unknown_tool for the tools it knows about, from the resolve stage; for
// the others (nil) the call is still unknown_tool.
func TestMissingExplainsUnregisteredTool(t *testing.T) {
	rt := New(&Options{Missing: func(name string) *Error {
		if name != "held" {
			return nil
		}
		return &Error{Type: TypeNotFound, Code: "tool_held", Message: "held is held."}
	}})
	rt.MustRegister(Tool{Name: "ok", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
	ctx, req, err := rt.Begin(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	for name, want := range map[string]string{"held": "tool_held", "nope": "unknown_tool"} {
		res := rt.Call(ctx, &Call{ID: name, Tool: name})
		if res.Status != StatusRefused || res.Error == nil || res.Error.Code != want || res.Error.Guard != "resolve" {
			t.Errorf("calling %s = %s %+v, want refused %s by resolve", name, res.Status, res.Error, want)
		}
	}
}
