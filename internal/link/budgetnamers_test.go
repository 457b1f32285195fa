package link

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestNamedBudgetLiftNeedsPrincipal: Owned itself decides whether a named
// budget lifts a limit of the default's, so a budget that lifts and lists
// nobody is refused even when no principals were given at all (the zero
// Budgets.Principals denies; it does not allow).
func TestNamedBudgetLiftNeedsPrincipal(t *testing.T) {
	named := map[string]reach.Budget{"small": {ToolCalls: 2}, "big": {ToolCalls: 0}, "more": {ToolCalls: 9}, "team": {ToolCalls: 50}}
	alice := &auth.Identity{Principal: "alice"}
	for _, tc := range []struct {
		name       string
		principals map[string][]string
		who        *auth.Identity
		budget     string
		ok         bool
	}{
		{"lowers", nil, nil, "small", true},
		{"unlimited, no principals given", nil, nil, "big", false},
		{"more, no principals given", nil, alice, "more", false},
		{"listed", map[string][]string{"team": {"alice"}}, alice, "team", true},
		{"listed, another", map[string][]string{"team": {"alice"}}, &auth.Identity{Principal: "bob"}, "team", false},
		{"every one", map[string][]string{"big": {"*"}}, nil, "big", true},
		{"local", map[string][]string{"big": {LocalPrincipal}}, nil, "big", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewOwned(t.Context(), reach.New(nil), time.Minute, Budgets{Default: &reach.Budget{ToolCalls: 5}, Named: named, Principals: tc.principals})
			b, err := q.budget(&BudgetSpec{Name: tc.budget}, tc.who)
			if tc.ok {
				if err != nil || *b != named[tc.budget] {
					t.Fatalf("%s: %v %v, want %+v", tc.budget, b, err, named[tc.budget])
				}
				return
			}
			le, ok := errors.AsType[*Error](err)
			if !ok || le.Status != 403 || le.Code != "budget_not_permitted" {
				t.Fatalf("%s: %v %v, want a 403 budget_not_permitted", tc.budget, b, err)
			}
			for _, n := range []string{"big", "more", "team"} {
				if n != tc.budget && strings.Contains(le.Message+le.Suggestion, n) {
					t.Errorf("the refusal %q names %s, which the caller may not name", le.Message+" "+le.Suggestion, n)
				}
			}
			if !strings.Contains(le.Suggestion, "small") {
				t.Errorf("the refusal %q does not name small, which the caller may name", le.Suggestion)
			}
		})
	}
}
