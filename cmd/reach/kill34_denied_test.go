package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/postgres"
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
	wipe := func(i int) map[string]any {
		t.Helper()
		out := postTo(t, f.base(i)+"/v1/calls", `{"tool_calls":[{"call_id":"w","tool":"up__wipe","arguments":{"key":"w"},"idempotency_key":"wipe-34"}]}`)
		r, _ := out["results"].([]any)
		if len(r) != 1 {
			t.Fatalf("the wipe through %s: %v", f.names[i], out)
		}
		return r[0].(map[string]any)
	}
	res := wipe(0)
	e, _ := res["error"].(map[string]any)
	msg, _ := e["message"].(string)
	id := approvalID.FindString(msg)
	if res["status"] != "pending" || id == "" {
		t.Fatalf("the wipe through a: %v; want it pending, naming its approval", res)
	}
	f.stop(1)
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "approval.denied")
	go func() { // cut off by the kill
		if resp, err := (&http.Client{Timeout: time.Minute}).Post(f.base(1)+"/v1/approvals/"+id+"/deny", "application/json", strings.NewReader(`{"reason":"not today"}`)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("b never reached approval.denied")
	}
	f.kill(1)
	ap := getJSONTB(t, f.base(0)+"/v1/approvals/"+id)
	if ap["status"] != "denied" {
		t.Errorf("the approval through a once b died with its denial durable: %v; want denied", ap)
	}
	refused := func(i int) {
		t.Helper()
		r := wipe(i)
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
	st, err := postgres.Open(t.Context(), f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := audit.Verify(t.Context(), st); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}
