package schema_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
)

// TestRuntimeRefusesWhatFullRefuses: arguments the full validator refuses
// never reach the tool through the quick path.
func TestRuntimeRefusesWhatFullRefuses(t *testing.T) {
	for _, tc := range []struct{ schema, args string }{
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`, `{"email":"not an email"}`},
		{`{"type":"object","properties":{"amount":{"type":"number","minimum":0}},"required":["amount"]}`, `{"amount":-1e-400}`},
	} {
		ran := false
		rt := reach.New(nil)
		rt.MustRegister(reach.Tool{Name: "t", InputSchema: json.RawMessage(tc.schema), Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			ran = true
			return json.RawMessage(`"ok"`), nil
		}})
		ctx, req, err := rt.Begin(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		res := rt.Call(ctx, &reach.Call{ID: "c", Tool: "t", Arguments: json.RawMessage(tc.args)})
		req.End()
		if ran || res.Error == nil || res.Error.Code != "invalid_arguments" {
			t.Errorf("%s with %s: ran = %v, status %s, error %+v; want invalid_arguments", tc.schema, tc.args, ran, res.Status, res.Error)
		}
	}
}
