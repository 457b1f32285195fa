package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
)

// The helpers of the kill tests at an approval's durable points
// (kill34_approval_test.go, kill35_approval_test.go).

// pgDatabaseEach is a fresh database of pg for each call, named prefix
// and a count.
func pgDatabaseEach(pg *pgtest.Cluster, prefix string) func(t *testing.T) string {
	n := 0
	return func(t *testing.T) string {
		n++
		url, err := pg.CreateDatabase(t.Context(), fmt.Sprint(prefix, n))
		if err != nil {
			t.Fatal(err)
		}
		return url
	}
}

// approvalCrash is a crash run of a `reach serve` whose travel__close
// (high_risk) asks for approval, storing in its data folder or, given
// pg, in a PostgreSQL database of its own (instance a, instance_ttl 1s).
// where names the store to `reach audit`.
func approvalCrash(t *testing.T, pg func(t *testing.T) string) (h *crashRun, cfg, addr string, where []string) {
	h = &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
	head, where := "", []string{"--data", h.data}
	if pg != nil {
		url := pg(t)
		head, where = "store: "+url+"\ninstance: a\ninstance_ttl: 1s\n", []string{"--store", url}
	}
	cfg = writeConfig(t, head+travelYAML(sideEffectsUpstream(t, h.fx), "  travel__close: {access: high_risk}\n"))
	addr = freeAddr(t)
	h.base = "http://" + addr
	return h, cfg, addr, where
}

// driveApproval is a crash run's drive taking the approval of
// closeAccount(request, key) to action: requested (the call sent, killed
// before it is answered), approved, denied, or used (approved, then the
// call sent again). It sets *id to the approval once asked for.
func driveApproval(action, request, key string, id *string) func(t *testing.T, h *crashRun) {
	return func(t *testing.T, h *crashRun) {
		if action == "requested" { // killed before the call is answered
			h.post("/v1/calls", closeAccount(request, key))
			return
		}
		*id = h.ask(t, request, key)
		switch action {
		case "denied":
			h.post("/v1/approvals/"+*id+"/deny", `{"reason":"no"}`)
		case "approved":
			h.post("/v1/approvals/"+*id+"/approve", `{"reason":"fine"}`)
		case "used":
			if status, out := postJSON(t, h.base+"/v1/approvals/"+*id+"/approve", `{"reason":"fine"}`); status != 200 {
				t.Errorf("approve: %d %v", status, out)
			}
			h.post("/v1/calls", closeAccount(request, key))
		}
	}
}

// approvalAudits is the messages of the audit events of request that
// record decision (requested, approved, denied, used) on approval id.
func approvalAudits(t *testing.T, base, request, decision, id string) []string {
	var msgs []string
	for _, e := range fw33bAudit(t, base, "request="+request) {
		ev, _ := e["event"].(map[string]any)
		if msg, _ := ev["message"].(string); ev["kind"] == "approval" && ev["decision"] == decision && strings.Contains(msg, id) {
			msgs = append(msgs, msg)
		}
	}
	return msgs
}
