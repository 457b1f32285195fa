package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// FuzzDecodeEnvelope: any input either decodes to an envelope that passes
// its own checks, or fails with an error; nothing panics.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"request_id":"r","tool_calls":[{"call_id":"c1","tool":"t","arguments":{"a":1}}]}`,
		`{"tool_calls":[{"call_id":"c1","tool":"t","arguments":{"x":{"$ref":"c0.id"}}},{"call_id":"c0","tool":"u"}]}`,
		`{"tool_calls":[]}`, `[]`, `{"tool_calls":[{"call_id":"a","tool":"x"}]}x`,
		`{"tool_calls":[{"call_id":"` + strings.Repeat("c", reach.MaxCallID+1) + `","tool":"t","why":"w","idempotency_key":"k"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := reach.DecodeEnvelope(data)
		if err != nil {
			return
		}
		if len(env.ToolCalls) == 0 || len(env.ToolCalls) > reach.MaxBatchCalls {
			t.Fatalf("accepted %d calls", len(env.ToolCalls))
		}
		seen := map[string]bool{}
		for _, c := range env.ToolCalls {
			if c.ID == "" || c.Tool == "" || seen[c.ID] ||
				len(c.ID) > reach.MaxCallID || len(c.IdempotencyKey) > reach.MaxIdempotencyKey || len(c.Why) > reach.MaxWhy {
				t.Fatalf("accepted a bad call %+v", c)
			}
			seen[c.ID] = true
			if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
				t.Fatalf("accepted invalid arguments %q", c.Arguments)
			}
		}
	})
}

// FuzzTruncate: any result a tool returns, cut to MaxBytes, is valid JSON
// of at most MaxBytes.
func FuzzTruncate(f *testing.F) {
	f.Add([]byte(`{"a":"<b>\"x\"</b>"}`), 40)
	f.Add([]byte("\"\xff\xfe\x01\""), 10)
	f.Add([]byte(`[1,2,3,{"a":[4,5]}]`), 8)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 8 || max > 1<<16 || len(data) == 0 {
			return
		}
		rt := reach.New(nil)
		rt.MustRegister(reach.Tool{Name: "dump", Reentrancy: reach.Reentrant, Shape: &reach.Shape{MaxBytes: max},
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return data, nil }})
		ctx, req, err := rt.Begin(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer req.End()
		res := rt.Call(ctx, &reach.Call{ID: "c", Tool: "dump", Arguments: json.RawMessage(`{}`)})
		if res.IsError() {
			return
		}
		if len(res.Data) > max && len(res.Notes) > 0 || !json.Valid(res.Data) {
			t.Fatalf("shaped to %d bytes (max %d), valid %v: %q", len(res.Data), max, json.Valid(res.Data), res.Data)
		}
	})
}
