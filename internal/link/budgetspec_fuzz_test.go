package link

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseBudgetSpec reads a "reach/budget" value as an A2A message's
// metadata carries it (any JSON value): never a panic; a refusal names
// reach/budget and what to send; what it accepts is a name (from a
// string) or amounts none of which is negative (from an object).
func FuzzParseBudgetSpec(f *testing.F) {
	for _, s := range []string{`"small"`, `{"turns":3,"wall":"10m"}`, `{"tokens":-1}`, `{"cost":1e308,"depth":2}`,
		`{"wall":"-1s"}`, `{"turns":1e30}`, `{"x":1}`, `[1]`, `null`, `true`, `{"tool_calls":"3"}`, `{"wall":"9999999999h"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		spec, err := ParseBudgetSpec(v)
		if err != nil {
			if spec != nil || !strings.HasPrefix(err.Error(), "reach/budget: ") {
				t.Fatalf("ParseBudgetSpec(%s) = %+v, %v: want no spec and an error naming reach/budget", data, spec, err)
			}
			return
		}
		switch x := v.(type) {
		case nil:
			if spec != nil {
				t.Fatalf("null read as %+v", spec)
			}
		case string:
			if spec == nil || spec.Name != x || spec.Budget != nil {
				t.Fatalf("%s read as %+v, want the name", data, spec)
			}
		case map[string]any:
			b := spec.Budget
			if spec.Name != "" || b == nil {
				t.Fatalf("%s read as %+v, want amounts", data, spec)
			}
			if b.Turns < 0 || b.Depth < 0 || b.ToolCalls < 0 || b.Tokens < 0 || b.Cost < 0 || b.Wall < 0 {
				t.Fatalf("%s accepted with a negative amount: %+v", data, b)
			}
		default:
			t.Fatalf("%s (%T) accepted as %+v", data, v, spec)
		}
	})
}
