package main

import (
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
	killApprovalAudited(t, pgDatabaseEach(pgtest.Own(t), "kill34_"))
}

func killApprovalAudited(t *testing.T, pg func(t *testing.T) string) {
	for _, tc := range []struct{ point, action string }{
		{"approval.pending", "requested"},
		{"approval.approved", "approved"},
		{"approval.denied", "denied"},
		{"approval.used", "used"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			h, cfg, addr, where := approvalCrash(t, pg)
			id := ""
			h.kill(t, cfg, addr, tc.point, driveApproval(tc.action, "r34", "c34", &id))
			cmd := startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if tc.action == "requested" { // the call, repeated with its key, finds it
				id = h.ask(t, "", "c34")
			}
			if id == "" {
				t.Fatal("no approval was asked for")
			}
			audited := func() int { return len(approvalAudits(t, h.base, "r34", tc.action, id)) }
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
