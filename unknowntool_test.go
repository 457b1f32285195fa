package reach_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestUnknownToolNamesNoForbiddenOne: a name that is not a tool's is
// answered with the closest tools' names, to use instead; a forbidden
// tool, which the listing hides and which never runs, was named too
// ("REFUND_ORDER": use refund_order), so the model learnt of a tool it was
// not shown and was sent to one it may not call. It is not named; the
// tools it may call still are.
func TestUnknownToolNamesNoForbiddenOne(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "refund_order", Access: reach.Forbidden, Func: echo})
	rt.MustRegister(reach.Tool{Name: "get_order", Access: reach.Read, Func: echo})
	ctx, _ := begin(t, rt, nil)
	for _, name := range []string{"REFUND_ORDER", "refund_ordr"} {
		res := call(rt, ctx, name, `{}`)
		if res.Error == nil || res.Error.Code != "unknown_tool" || slices.Contains(res.Error.Alternatives, "refund_order") || strings.Contains(res.ModelText(), "refund_order") {
			t.Errorf("%s: %+v (%q), want unknown_tool naming no forbidden tool", name, res.Error, res.ModelText())
		}
	}
	if res := call(rt, ctx, "get_ordr", `{}`); res.Error == nil || !slices.Equal(res.Error.Alternatives, []string{"get_order"}) {
		t.Errorf("get_ordr: %+v, want get_order named", res.Error)
	}
}
