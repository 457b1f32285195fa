package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestKill34ApprovalActionAudited kills a real `reach serve` (kill -9) at
// each durable point of an approval's life, once it is in the store and
// before its audit event is (approval.pending: asked, the call not
// answered; approval.approved, approval.denied, approval.used), and
// restarts it: the audit log then
// holds the action, naming the approval (its event appended at the
// restart's load, saying so), the call ran as the store says (approved
// and used: once; denied and pending: never), and the chain verifies. Before, the
// action was in the store and never in the audit log: who approved or
// denied the call was recorded nowhere the log shows.
func TestKill34ApprovalActionAudited(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	killApprovalAudited(t, nil)
}

// TestKill34ApprovalActionAuditedOnPostgres is
// TestKill34ApprovalActionAudited with the store in PostgreSQL (one
// instance, restarted under its name: it audits what its killed life
// stored and did not audit).
func TestKill34ApprovalActionAuditedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	n := 0
	killApprovalAudited(t, func(t *testing.T) string {
		n++
		url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("kill34_", n))
		if err != nil {
			t.Fatal(err)
		}
		return url
	})
}

func killApprovalAudited(t *testing.T, pg func(t *testing.T) string) {
	for _, tc := range []struct{ point, action string }{
		{"approval.pending", "requested"},
		{"approval.approved", "approved"},
		{"approval.denied", "denied"},
		{"approval.used", "used"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
			head, where := "", []string{"--data", h.data}
			if pg != nil {
				url := pg(t)
				head, where = "store: "+url+"\ninstance: a\ninstance_ttl: 1s\n", []string{"--store", url}
			}
			cfg := writeConfig(t, head+travelYAML(sideEffectsUpstream(t, h.fx), "  travel__close: {access: high_risk}\n"))
			addr := freeAddr(t)
			h.base = "http://" + addr
			id := ""
			h.kill(t, cfg, addr, tc.point, func(t *testing.T, h *crashRun) {
				if tc.action == "requested" { // killed before the call is answered
					h.post("/v1/calls", closeAccount("r34", "c34"))
					return
				}
				id = h.ask(t, "r34", "c34")
				switch tc.action {
				case "denied":
					h.post("/v1/approvals/"+id+"/deny", `{"reason":"no"}`)
				case "approved":
					h.post("/v1/approvals/"+id+"/approve", `{"reason":"fine"}`)
				case "used":
					if status, out := postJSON(t, h.base+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); status != 200 {
						t.Errorf("approve: %d %v", status, out)
					}
					h.post("/v1/calls", closeAccount("r34", "c34"))
				}
			})
			cmd := startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if tc.action == "requested" { // the call, repeated with its key, finds it
				id = h.ask(t, "", "c34")
			}
			if id == "" {
				t.Fatal("no approval was asked for")
			}
			audited := func() int {
				n := 0
				for _, e := range fw33bAudit(t, h.base, "request=r34") {
					ev, _ := e["event"].(map[string]any)
					if msg, _ := ev["message"].(string); ev["kind"] == "approval" && ev["decision"] == tc.action && strings.Contains(msg, id) {
						n++
					}
				}
				return n
			}
			if n := audited(); n != 1 {
				t.Errorf("after the restart the audit log holds %d %s events of %s; want 1: %v", n, tc.action, id, fw33bAudit(t, h.base, "request=r34"))
			}
			switch tc.action {
			case "requested":
				if n := h.counts(closedTotal); n != 0 {
					t.Errorf("the call waiting for approval ran %d times", n)
				}
			case "denied":
				if res := call(t, h.base, closeAccount("", "c34")); res.Status == "success" || res.Status == "pending" {
					t.Errorf("the denied call, repeated, got %+v; want it refused", res)
				}
			default:
				if res := call(t, h.base, closeAccount("", "c34")); res.Status != "success" {
					t.Errorf("the approved call, repeated, got %+v; want it to run", res)
				}
				h.ranOnce(t, "c34")
			}
			// A second restart audits nothing again.
			stopServe(t, cmd, os.Interrupt)
			cmd = startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if n := audited(); n != 1 {
				t.Errorf("after a second restart the audit log holds %d %s events of %s; want 1", n, tc.action, id)
			}
			stopServe(t, cmd, os.Interrupt)
			if out, errOut, err := runCmd(t, newAudit, append([]string{"verify"}, where...)...); err != nil || !strings.Contains(out, "chain ok") {
				t.Errorf("reach audit verify: %v\n%s%s", err, out, errOut)
			}
		})
	}
}
