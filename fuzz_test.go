package reach_test

import (
	"encoding/json"
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
			if c.ID == "" || c.Tool == "" || seen[c.ID] {
				t.Fatalf("accepted a bad call %+v", c)
			}
			seen[c.ID] = true
			if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
				t.Fatalf("accepted invalid arguments %q", c.Arguments)
			}
		}
	})
}
