package sqlite

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/store/sqlcore"
)

// TestAppr38RetentionFindsOnceKeysByName: the sweep's removal of the
// audit log's keys of the approvals it removes finds each approval's keys
// by a range of the table's primary key, and the approvals by
// approvals_created, not reading the table of keys (one row an
// approval's action, never removed before) through for each batch. (At
// 6,400 approvals of 3 keys each, a batch of 64 took 1.5 ms against
// 1.0 ms without the keys; 4 to 15 ms finding each of an approval's 12
// possible keys by name.)
func TestAppr38RetentionFindsOnceKeysByName(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	plan := queryPlan(t, s.wc, statementSQL[sqlcore.StRetainOnces], int64(1), int64(64))
	for _, want := range []string{"USING PRIMARY KEY (once>? AND once<?)", "approvals_created"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan of the sweep's audit keys is %q, want it to use %s", plan, want)
		}
	}
	if strings.Contains(plan, "SCAN audit_once") {
		t.Errorf("the plan of the sweep's audit keys is %q: it reads the table through", plan)
	}
}
