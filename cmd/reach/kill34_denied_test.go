package main

import (
	"strings"
	"testing"
)

// TestKill34DeniedElsewhereOnPostgres: two `reach serve` on one
// PostgreSQL. A high-risk call (up__wipe, under its key) asked through a
// waits for approval; it is denied through b, which is killed (kill -9)
// once the denial is durable, before it answers or audits it
// (approval.denied). Through a, alive, the approval is denied and the
// call, repeated, is refused approval_denied; b, started again under its
// name, refuses it too and audits the denial its killed life did not,
// once. The call never ran, and the audit chain verifies.
func TestKill34DeniedElsewhereOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	id := askWipe(t, f, "wipe-34")
	f.dieAt(t, 1, "approval.denied")("/v1/approvals/"+id+"/deny", `{"reason":"not today"}`)
	ap := getJSONTB(t, f.base(0)+"/v1/approvals/"+id)
	if ap["status"] != "denied" {
		t.Errorf("the approval through a once b died with its denial durable: %v; want denied", ap)
	}
	refused := func(i int) {
		t.Helper()
		r := wipeThrough(t, f, i, "wipe-34")
		if e, _ := r["error"].(map[string]any); e["code"] != "approval_denied" {
			t.Errorf("the denied call repeated through %s: %v; want it refused approval_denied", f.names[i], r)
		}
	}
	refused(0)
	f.start(1)
	refused(1)
	refused(0)
	if n := f.up.count("wipe w"); n != 0 {
		t.Errorf("the denied call ran %d times", n)
	}
	request, _ := ap["request"].(string)
	denials := 0
	for _, ev := range fw33bAudit(t, f.base(0), "request="+request) { // one log, the store's
		ev, _ := ev["event"].(map[string]any)
		if m, _ := ev["message"].(string); ev["kind"] == "approval" && ev["decision"] == "denied" && strings.Contains(m, id) {
			denials++
		}
	}
	if denials != 1 {
		t.Errorf("the audit log holds %d denials of %s; want 1 (b's restart audits what its killed life stored)", denials, id)
	}
	verifyFleetAudit(t, f)
}
