package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestPolicyTenant: a policy tells tenants apart as it is naturally
// written, through the runtime (the engine builds only the context its
// policies read) and in Evaluate, tools/list (Visible) and an Ask:
// principal.tenant ("" for none, no error), principal in
// Reach::Tenant::"acme" in the scope, and context.tenant. A tenant's
// policy never reaches another tenant's principal of the same name. A
// policy reading resource.tenant, which no tool has, is warned about and
// denies (an evaluation error denies: the forbid is not skipped). Before,
// principal in Reach::Tenant never matched and context.tenant was an
// error, so a forbid written with them denied every call.
func TestPolicyTenant(t *testing.T) {
	for _, c := range []struct{ name, forbid string }{
		{"principal.tenant", `forbid (principal, action, resource == Reach::Tool::"crm") unless { principal.tenant == "acme" };`},
		{"principal in Reach::Tenant", `forbid (principal, action, resource == Reach::Tool::"crm") unless { principal in Reach::Tenant::"acme" };`},
		{"scope in Reach::Tenant", `forbid (principal in Reach::Tenant::"globex", action, resource == Reach::Tool::"crm");
forbid (principal, action, resource == Reach::Tool::"crm") when { principal.tenant == "" };`},
		{"context.tenant", `forbid (principal, action, resource == Reach::Tool::"crm") when { context.tenant != "acme" };`},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := mustParse(t, `permit (principal, action, resource);`, c.forbid)
			if w := set.Warnings(); len(w) > 0 {
				t.Errorf("warnings %v, want none", w)
			}
			eng := New(&Options{Policies: set})
			rt := reach.New(&reach.Options{Authorizer: eng, RefusedInARow: -1})
			rt.MustRegister(reach.Tool{Name: "crm", Func: noop}, reach.Tool{Name: "other", Func: noop})
			for _, who := range []struct {
				tenant string
				want   bool
			}{{"acme", true}, {"globex", false}, {"", false}} {
				p := Principal{ID: "alice", Tenant: who.tenant}
				ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice", Tenant: who.tenant})
				if err != nil {
					t.Fatal(err)
				}
				res := rt.Call(ctx, &reach.Call{ID: "1", Tool: "crm", Arguments: json.RawMessage(`{}`)})
				other := rt.Call(ctx, &reach.Call{ID: "2", Tool: "other", Arguments: json.RawMessage(`{}`)})
				req.End()
				if res.IsError() == who.want {
					t.Errorf("alice of %q calling crm: error %v, want allowed %v", who.tenant, res.Error, who.want)
				}
				if other.IsError() {
					t.Errorf("alice of %q calling other: %v, want allowed", who.tenant, other.Error)
				}
				if r := set.Evaluate(&Input{Principal: p, Tool: "crm"}); (r.Decision == reach.Permit) != who.want || len(r.Errors) > 0 {
					t.Errorf("Evaluate for alice of %q = %+v, want allowed %v without errors", who.tenant, r, who.want)
				}
				if v := eng.Visible(p, "", reach.Tool{Name: "crm"}); v != who.want {
					t.Errorf("crm listed for alice of %q: %v, want %v", who.tenant, v, who.want)
				}
			}
		})
	}
	ask := `permit (principal, action, resource);
forbid (principal, action == Reach::Action::"read_resource", resource) unless { context.tenant == "acme" && principal in Reach::Tenant::"acme" };`
	set := mustParse(t, ask)
	for tenant, want := range map[string]reach.Decision{"acme": reach.Permit, "globex": reach.Deny} {
		r := set.Ask(Principal{ID: "alice", Tenant: tenant}, Ask{Action: ReadResourceAction, Type: ResourceType, Name: "crm://accounts", Upstream: "crm"})
		if r.Decision != want || len(r.Errors) > 0 {
			t.Errorf("Ask for alice of %s = %+v, want %v without errors", tenant, r, want)
		}
	}

	// resource.tenant: no tool has it. Warned about, and the forbid's
	// error denies every call it is evaluated for, of any tenant.
	set = mustParse(t, `permit (principal, action, resource);`,
		`forbid (principal, action, resource == Reach::Tool::"crm") when { resource.tenant != principal.tenant };`)
	if w := set.Warnings(); !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "resource.tenant") }) {
		t.Errorf("warnings %v, want one about resource.tenant", w)
	}
	eng := New(&Options{Policies: set})
	rt := reach.New(&reach.Options{Authorizer: eng, RefusedInARow: -1})
	rt.MustRegister(reach.Tool{Name: "crm", Func: noop})
	for _, tenant := range []string{"acme", "globex"} {
		ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice", Tenant: tenant})
		res := rt.Call(ctx, &reach.Call{ID: "1", Tool: "crm", Arguments: json.RawMessage(`{}`)})
		req.End()
		if !res.IsError() || !strings.Contains(res.Error.Message, "could not be evaluated") {
			t.Errorf("alice of %s calling crm under a forbid reading resource.tenant: %v, want denied as an error", tenant, res.Error)
		}
	}
}
