package link

import (
	"errors"
	"fmt"
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
		principals map[string][]Owner
		who        *auth.Identity
		budget     string
		ok         bool
	}{
		{"lowers", nil, nil, "small", true},
		{"unlimited, no principals given", nil, nil, "big", false},
		{"more, no principals given", nil, alice, "more", false},
		{"listed", map[string][]Owner{"team": {{Principal: "alice"}}}, alice, "team", true},
		{"listed, another", map[string][]Owner{"team": {{Principal: "alice"}}}, &auth.Identity{Principal: "bob"}, "team", false},
		{"every one", map[string][]Owner{"big": {{Principal: "*"}}}, nil, "big", true},
		{"local", map[string][]Owner{"big": {{Principal: LocalPrincipal}}}, nil, "big", true},
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
			// The amounts it suggests are within the default's (5 tool
			// calls): amounts above are capped, so a larger example misleads.
			if !strings.Contains(le.Suggestion, `{"tool_calls": 5}`) {
				t.Errorf("the refusal %q does not suggest amounts within the default's 5 tool calls", le.Suggestion)
			}
		})
	}
}

// TestNamedBudgetTenants: a budget that lifts a limit of the default's may
// be named by every principal of a tenant it lists (budgets.NAME.tenants),
// compared exactly as identities are: a tenant that differs in case, in a
// look-alike letter, in width, in normalization or by an invisible
// character is another tenant, refused as one; a caller with no tenant is
// in none, even when a tenant of "" would match.
func TestNamedBudgetTenants(t *testing.T) {
	named := map[string]reach.Budget{"small": {ToolCalls: 2}, "team": {ToolCalls: 50}}
	q := NewOwned(t.Context(), reach.New(nil), time.Minute, Budgets{Default: &reach.Budget{ToolCalls: 5}, Named: named,
		Tenants: map[string][]string{"team": {"acme", "café"}}})
	for _, tc := range []struct {
		who *auth.Identity
		ok  bool
	}{
		{&auth.Identity{Principal: "alice", Tenant: "acme"}, true},
		{&auth.Identity{Principal: "bob", Tenant: "acme"}, true},
		{&auth.Identity{Principal: "carol", Tenant: "café"}, true},         // é precomposed, as listed
		{&auth.Identity{Principal: "acme"}, false},                         // a principal named as the tenant, with none
		{&auth.Identity{Principal: "alice", Tenant: "globex"}, false},      // another tenant
		{&auth.Identity{Principal: "alice", Tenant: "Acme"}, false},        // case
		{&auth.Identity{Principal: "alice", Tenant: "ACME"}, false},        // case
		{&auth.Identity{Principal: "alice", Tenant: "\u0430cme"}, false},   // Cyrillic а
		{&auth.Identity{Principal: "alice", Tenant: "ａｃｍｅ"}, false},        // fullwidth
		{&auth.Identity{Principal: "alice", Tenant: "acme\u200b"}, false},  // a zero-width space
		{&auth.Identity{Principal: "alice", Tenant: "acme "}, false},       // a trailing space
		{&auth.Identity{Principal: "alice", Tenant: "cafe\u0301"}, false},  // é decomposed (NFD)
		{&auth.Identity{Principal: "alice", Tenant: "acme,globex"}, false}, // not a list
		{nil, false}, // local: no tenant
	} {
		name := "nil"
		if tc.who != nil {
			name = fmt.Sprintf("%q of %q", tc.who.Principal, tc.who.Tenant)
		}
		b, err := q.budget(&BudgetSpec{Name: "team"}, tc.who)
		if tc.ok {
			if err != nil || b.ToolCalls != 50 {
				t.Errorf("%s naming team: %v %v, want its 50 tool calls", name, b, err)
			}
			continue
		}
		le, ok := errors.AsType[*Error](err)
		if !ok || le.Status != 403 || le.Code != "budget_not_permitted" {
			t.Errorf("%s naming team: %v %v, want a 403 budget_not_permitted", name, b, err)
			continue
		}
		if !strings.Contains(le.Message, "budgets.team.tenants") {
			t.Errorf("%s: the refusal %q does not say where the tenants are listed", name, le.Message)
		}
	}
	// A budget that lists tenants still lets a listed principal of another
	// tenant name it, and nobody else.
	q = NewOwned(t.Context(), reach.New(nil), time.Minute, Budgets{Default: &reach.Budget{ToolCalls: 5}, Named: named,
		Principals: map[string][]Owner{"team": {{Principal: "dave", Tenant: "globex"}}}, Tenants: map[string][]string{"team": {"acme"}}})
	if _, err := q.budget(&BudgetSpec{Name: "team"}, &auth.Identity{Principal: "dave", Tenant: "globex"}); err != nil {
		t.Errorf("dave, listed, of another tenant: %v", err)
	}
	if _, err := q.budget(&BudgetSpec{Name: "team"}, &auth.Identity{Principal: "erin", Tenant: "globex"}); err == nil {
		t.Error("erin of globex, neither listed: allowed")
	}
	// A principal is compared as exactly: a case or a look-alike letter is
	// another principal, of another tenant here.
	for _, p := range []string{"Dave", "d\u0430ve", "dave\u200b", "ｄａｖｅ"} {
		if _, err := q.budget(&BudgetSpec{Name: "team"}, &auth.Identity{Principal: p, Tenant: "globex"}); err == nil {
			t.Errorf("%q of globex, not dave: allowed", p)
		}
	}
}

// TestNamedBudgetPrincipalOfTenant: a budget's principal is a principal of
// a tenant: a bare name is that principal of no tenant, so the same name
// in another tenant (someone else) may not name it, and alice of acme is
// listed as such; "*" of a tenant is every principal of that tenant, "*"
// alone every principal of every tenant. A refusal to a principal of a
// tenant says how the operator lists it: with its tenant. Before, a bare
// alice let alice of every tenant name the budget.
func TestNamedBudgetPrincipalOfTenant(t *testing.T) {
	named := map[string]reach.Budget{"small": {ToolCalls: 2}, "bare": {ToolCalls: 50}, "acme": {ToolCalls: 60}, "acmeall": {ToolCalls: 70}, "all": {ToolCalls: 80}}
	q := NewOwned(t.Context(), reach.New(nil), time.Minute, Budgets{Default: &reach.Budget{ToolCalls: 5}, Named: named,
		Principals: map[string][]Owner{
			"bare":    {{Principal: "alice"}, {Principal: LocalPrincipal}},
			"acme":    {{Principal: "alice", Tenant: "acme"}},
			"acmeall": {{Principal: "*", Tenant: "acme"}},
			"all":     {{Principal: "*"}},
		}})
	for _, tc := range []struct {
		who    *auth.Identity
		budget string
		ok     bool
	}{
		{&auth.Identity{Principal: "alice"}, "bare", true},
		{nil, "bare", true}, // local
		{&auth.Identity{Principal: "alice", Tenant: "acme"}, "bare", false},
		{&auth.Identity{Principal: "alice", Tenant: "globex"}, "bare", false},
		{&auth.Identity{Principal: "alice", Tenant: "acme"}, "acme", true},
		{&auth.Identity{Principal: "alice", Tenant: "globex"}, "acme", false},
		{&auth.Identity{Principal: "alice"}, "acme", false},
		{&auth.Identity{Principal: "alice", Tenant: "Acme"}, "acme", false},
		{&auth.Identity{Principal: "bob", Tenant: "acme"}, "acme", false},
		{&auth.Identity{Principal: "bob", Tenant: "acme"}, "acmeall", true},
		{&auth.Identity{Principal: "bob", Tenant: "globex"}, "acmeall", false},
		{&auth.Identity{Principal: "bob"}, "acmeall", false},
		{&auth.Identity{Principal: "bob", Tenant: "globex"}, "all", true},
		{&auth.Identity{Principal: "bob"}, "all", true},
	} {
		name := fmt.Sprintf("%v naming %s", tc.who, tc.budget)
		b, err := q.budget(&BudgetSpec{Name: tc.budget}, tc.who)
		if tc.ok {
			if err != nil || *b != named[tc.budget] {
				t.Errorf("%s: %v %v, want %+v", name, b, err, named[tc.budget])
			}
			continue
		}
		le, ok := errors.AsType[*Error](err)
		if !ok || le.Status != 403 || le.Code != "budget_not_permitted" {
			t.Errorf("%s: %v %v, want a 403 budget_not_permitted", name, b, err)
			continue
		}
		if tc.who.Tenant != "" {
			want := fmt.Sprintf(`budgets.%s.principals: [{principal: %q, tenant: %q}]`, tc.budget, tc.who.Principal, tc.who.Tenant)
			if !strings.Contains(le.Suggestion, want) || !strings.Contains(le.Suggestion, "no tenant") {
				t.Errorf("%s: the suggestion %q does not say how to list the caller (%s), nor that a bare name is of no tenant", name, le.Suggestion, want)
			}
		}
	}
}
