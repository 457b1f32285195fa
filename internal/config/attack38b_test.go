package config

import (
	"strings"
	"testing"
)

// TestAttack38bPrioritiesNameTenants: rate_limit.priorities named a
// principal by its bare name, and any tenant's principal of that name
// got its priority (the reserve kept for it): a tenant that made itself a
// key for "oncall" took another's reserved capacity. A bare name is now
// the principal of no tenant, as a budget's is; a principal of a tenant
// is named as a budget names it, {principal: oncall, tenant: acme}, in
// the list form; "*" (of a tenant) as a budget's. The entry naming a
// caller most closely decides.
func TestAttack38bPrioritiesNameTenants(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	c, err := Parse([]byte("rate_limit:\n  per_second: 5\n  reserved: 0.2\n  priorities: {oncall: 1}\n"), none)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		principal, tenant string
		want              int
	}{{"oncall", "", 1}, {"oncall", "acme", 0}, {"oncall", "globex", 0}, {"alice", "", 0}} {
		if got := c.RateLimit.Priority(tc.principal, tc.tenant); got != tc.want {
			t.Errorf("{oncall: 1}: Priority(%q, tenant %q) = %d, want %d", tc.principal, tc.tenant, got, tc.want)
		}
	}
	c, err = Parse([]byte(`rate_limit:
  per_second: 5
  reserved: 0.2
  priorities:
    - {principal: oncall, tenant: acme, priority: 2}
    - {principal: "*", tenant: acme, priority: 1}
    - {principal: pager, priority: 3}
    - {principal: batch, tenant: acme, priority: 0}
`), none)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		principal, tenant string
		want              int
	}{
		{"oncall", "acme", 2}, {"oncall", "globex", 0}, {"oncall", "", 0},
		{"bob", "acme", 1}, {"bob", "globex", 0}, {"batch", "acme", 0},
		{"pager", "", 3}, {"pager", "acme", 1}, {"pager", "globex", 0},
	} {
		if got := c.RateLimit.Priority(tc.principal, tc.tenant); got != tc.want {
			t.Errorf("list: Priority(%q, tenant %q) = %d, want %d", tc.principal, tc.tenant, got, tc.want)
		}
	}
	if l := c.RateLimit.Limits(); l == nil || l.Levels != 3 {
		t.Errorf("Limits() = %+v, want 3 levels", l)
	}
	c, err = Parse([]byte("rate_limit:\n  per_second: 5\n  reserved: 0.2\n  priorities: [{principal: \"*\", priority: 1}]\n"), none)
	if err != nil {
		t.Fatal(err)
	}
	if c.RateLimit.Priority("anyone", "acme") != 1 || c.RateLimit.Priority("anyone", "") != 1 {
		t.Error(`"*" alone is not every principal of every tenant`)
	}
	for _, tc := range []struct{ config, want string }{
		{"rate_limit:\n  priorities:\n    - {principal: oncall, tenant: \"*\", priority: 1}\n", "line 3"},
		{"rate_limit:\n  priorities:\n    - {principal: oncall, tenant: \" \", priority: 1}\n", "blank"},
		{"rate_limit:\n  priorities:\n    - {tenant: acme, priority: 1}\n", "no principal"},
		{"rate_limit:\n  priorities:\n    - {principal: oncall, tenant: acme}\n", "no priority"},
		{"rate_limit:\n  priorities:\n    - {principal: oncall, tenants: acme, priority: 1}\n", "did you mean tenant?"},
		{"rate_limit:\n  priorities:\n    - {principal: oncall, priority: 1.5}\n", "line 3"},
		{"rate_limit:\n  priorities:\n    - {principal: oncall, tenant: acme, priority: 1}\n    - {principal: oncall, tenant: acme, priority: 2}\n", "named twice"},
		{"rate_limit:\n  priorities: {oncall: 1, oncall: 2}\n", "already defined"},
		{"rate_limit:\n  priorities: oncall\n", "line 2"},
	} {
		_, err := Parse([]byte(tc.config), none)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one saying %q", tc.config, err, tc.want)
		}
	}
}
