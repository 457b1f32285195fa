package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestUnknownToolNamesNoHiddenOne: a call of a name that is no tool's is
// answered with the closest tools' names, to use instead. A tool no policy
// lets the caller call is hidden from its listing, and was named all the
// same ("REFUND_ORDER": use refund_order), telling the model of a tool it
// was not shown and sending it to one it may not call. It is named only
// to a caller who could call it.
func TestUnknownToolNamesNoHiddenOne(t *testing.T) {
	eng := New(&Options{Policies: mustParse(t, `
permit (principal, action, resource == Reach::Tool::"get_order");
permit (principal in Reach::Role::"support", action, resource == Reach::Tool::"refund_order");`)})
	rt := reach.New(&reach.Options{Authorizer: eng})
	rt.MustRegister(reach.Tool{Name: "refund_order", Access: reach.Write, Func: noop})
	rt.MustRegister(reach.Tool{Name: "get_order", Access: reach.Read, Func: noop})
	for _, tc := range []struct {
		roles []string
		named bool
	}{{nil, false}, {[]string{"support"}, true}} {
		ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice", Roles: tc.roles})
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"REFUND_ORDER", "refund_ordr"} {
			res := rt.Call(ctx, &reach.Call{ID: string(rune('a' + i)), Tool: name, Arguments: json.RawMessage(`{}`)})
			if res.Error == nil || res.Error.Code != "unknown_tool" {
				t.Fatalf("%v %s: %+v, want unknown_tool", tc.roles, name, res.Error)
			}
			named := slices.Contains(res.Error.Alternatives, "refund_order") || strings.Contains(res.ModelText(), "refund_order")
			if named != tc.named {
				t.Errorf("roles %v, %s: refund_order named %v, want %v (%q)", tc.roles, name, named, tc.named, res.ModelText())
			}
		}
		req.End()
	}
}
