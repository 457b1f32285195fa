package gateway

import (
	"fmt"
	"testing"
)

// TestDismissalInDeadLetterTenant: a global operator's dismissal of a
// tenant's dead letter is audited in that tenant, with the operator named,
// so the tenant's operator sees in its own audit view how its undo was
// settled and by whom; a tenant operator's own dismissal is in its tenant
// too. The event was of no tenant: no tenant's operator saw it.
func TestDismissalInDeadLetterTenant(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	ids := map[string]string{}
	for _, d := range openDeadLetters(t, g) {
		ids[d.Request] = d.ID
	}
	if status, out := do(t, "POST", srvURL+"/v1/deadletters/"+ids["acme-trip"]+"/dismiss", `{"note":"released by hand"}`, as("root")); status != 200 {
		t.Fatalf("root dismissing acme's dead letter = %d %v", status, out)
	}
	if status, out := do(t, "POST", srvURL+"/v1/deadletters/"+ids["globex-trip"]+"/dismiss", `{"note":"globex's own"}`, as("root")); status != 200 {
		t.Fatalf("root dismissing globex's dead letter = %d %v", status, out)
	}
	dismissals := func(who, query string) []any {
		t.Helper()
		if err := g.audit.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		status, out := do(t, "GET", srvURL+"/v1/audit"+query, "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/audit%s = %d %v", who, query, status, out)
		}
		var found []any
		for _, e := range out["events"].([]any) {
			if path(e, "event", "kind") == "dead_letter" && path(e, "event", "decision") == "dismissed" {
				found = append(found, e)
			}
		}
		return found
	}
	got := dismissals("ops@acme", "")
	if len(got) != 1 {
		t.Fatalf("ops@acme's audit has %d dismissals, want root's of acme's dead letter: %v", len(got), got)
	}
	e := got[0]
	if path(e, "event", "principal") != "root" || path(e, "event", "tenant") != "acme" || path(e, "request") != "acme-trip" ||
		path(e, "event", "message") != "released by hand" {
		t.Errorf("the dismissal ops@acme sees = %v, want root's of acme-trip, in tenant acme", e)
	}
	for _, e := range dismissals("root", "?principal=root") {
		want := map[string]string{"acme-trip": "acme", "globex-trip": "globex"}[fmt.Sprint(path(e, "request"))]
		if tenant := fmt.Sprint(path(e, "event", "tenant")); tenant != want {
			t.Errorf("root's dismissal %v is of tenant %q, want %q", e, tenant, want)
		}
	}
}
