package gateway

import (
	"fmt"
	"testing"
)

// TestGlobalOperatorRetriesInDeadLetterTenant: a global operator's retry
// of a tenant's dead letter runs in that tenant, as its compensation ran
// and as that tenant's operator's retry does: its events are in the
// tenant's audit view and the tenant's policies judge it. It ran in no
// tenant: its events were in no tenant operator's view.
func TestGlobalOperatorRetriesInDeadLetterTenant(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	ids := map[string]string{}
	for _, d := range openDeadLetters(t, g) {
		ids[d.Request] = d.ID
	}
	if status, out := do(t, "POST", srvURL+"/v1/deadletters/"+ids["globex-trip"]+"/retry", "", as("root")); status != 200 || path(out, "deadletter", "attempts") == nil {
		t.Fatalf("root retrying globex's dead letter = %d %v", status, out)
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	status, out := do(t, "GET", srvURL+"/v1/audit?principal=root", "", as("root"))
	if status != 200 {
		t.Fatalf("GET /v1/audit?principal=root = %d %v", status, out)
	}
	events := out["events"].([]any)
	if len(events) == 0 {
		t.Fatal("the retry recorded no event")
	}
	for _, e := range events {
		if tenant := fmt.Sprint(path(e, "event", "tenant")); tenant != "globex" {
			t.Errorf("an event of root's retry of globex's dead letter is of tenant %q, want globex: %v", tenant, e)
		}
	}
}
