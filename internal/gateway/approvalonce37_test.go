package gateway

import (
	"log/slog"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestApprovalActionAppendedOnce: the gateway audits an approval's action
// with its key (approval.Event.Once), so that the same action audited
// twice (a revived instance and the survivor that took it over, or a
// restart that finds its event missing) is in the log once, and the chain
// verifies; another action of the approval is appended as before.
func TestApprovalActionAppendedOnce(t *testing.T) {
	st, err := sqlite.Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log, err := audit.New(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g := &Gateway{audit: log, log: slog.New(slog.DiscardHandler)}
	a := approval.Approval{ID: "apr_once", Status: approval.Approved, Requires: approval.User, Tool: "refund", Principal: "alice",
		Request: "r1", RootRequest: "r1", Created: time.Now(), Expires: time.Now().Add(time.Hour)}
	for _, action := range []string{"approved", "approved", "used"} {
		e := approval.Event{Action: action, By: "alice", Approval: a}
		g.auditApproval(t.Context(), e)
	}
	evs, err := log.Show(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Decision]++
	}
	if n["approved"] != 1 || n["used"] != 1 {
		t.Errorf("the audit log holds %v; want the approval once and its use once", n)
	}
	if _, err := log.Verify(t.Context()); err != nil {
		t.Errorf("the chain does not verify: %v", err)
	}
}
