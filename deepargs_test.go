package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// Arguments whose values nest deeper than reach reads are refused for
// their depth, not as JSON that is not valid (it is), and the model is
// told how deep it may nest and what to do; the tool does not run. Arguments
// as deep as reach reads run. Before, the refusal said "not valid JSON:
// nesting deeper than 256", and asked for one JSON object, which it was.
func TestArgumentsTooDeepSaySo(t *testing.T) {
	rt := reach.New(nil)
	var ran atomic.Int32
	rt.MustRegister(reach.Tool{Name: "store_tree", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`"ok"`), nil
	}})
	ctx, _ := begin(t, rt, nil)
	deep := func(n int) string { return `{"tree":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	if res := call(rt, ctx, "store_tree", deep(250)); res.IsError() {
		t.Fatalf("arguments 250 deep: %s", res.ModelText())
	}
	res := call(rt, ctx, "store_tree", deep(300))
	if res.Status != reach.StatusRefused || res.Error == nil || res.Error.Type != reach.TypeInvalidArgs {
		t.Fatalf("arguments 300 deep: %+v, want refused as invalid arguments", res)
	}
	text := res.Error.ModelText()
	if strings.Contains(text, "not valid JSON") {
		t.Errorf("the refusal calls valid JSON not valid: %s", text)
	}
	for _, want := range []string{"nest too deep", "inside more than 256 arrays and objects", "not run", "at most 256 deep", "call it again"} {
		if !strings.Contains(text, want) {
			t.Errorf("the refusal does not say %q: %s", want, text)
		}
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once (the arguments 250 deep)", n)
	}
}
