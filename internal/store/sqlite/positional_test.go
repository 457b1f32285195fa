package sqlite

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/store/sqlcore"
)

func TestPositional(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT a FROM t WHERE b = $1 AND c = $2`, `SELECT a FROM t WHERE b = ? AND c = ?`},
		{`VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, `VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{`UPDATE t SET a = $2 WHERE b = $1`, `UPDATE t SET a = $2 WHERE b = $1`},                                       // out of order: by name
		{`VALUES ($1, $2, $2)`, `VALUES ($1, $2, $2)`},                                                                 // twice: by name
		{`SELECT '$' || a, $1 FROM t`, `SELECT '$' || a, ? FROM t`},                                                    // a $ that is no parameter
		{`SELECT ifnull(max(seq), 0) FROM audit WHERE seq > ?`, `SELECT ifnull(max(seq), 0) FROM audit WHERE seq > ?`}, // none
	} {
		if got := positional(c.in); got != c.want {
			t.Errorf("positional(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSQLiteCallPathBindsByPlace: the statements of a write call's path
// bind their parameters by place, not by name (an allocation a parameter
// in the driver).
func TestSQLiteCallPathBindsByPlace(t *testing.T) {
	for _, id := range []sqlcore.Stmt{sqlcore.StPutFrame, sqlcore.StUpdateFrame, sqlcore.StIdemClaim, sqlcore.StIdemGet,
		sqlcore.StIdemComplete, sqlcore.StIdemRelease, sqlcore.StPutRequest} {
		if q := statementSQL[id]; strings.Contains(q, "$") {
			t.Errorf("statement %d binds by name: %s", id, q)
		}
	}
}

// TestSQLiteUpdateFrameUsesItsKey: the end of a checkpoint finds its row
// by the frames' key, not by a scan.
func TestSQLiteUpdateFrameUsesItsKey(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	p := queryPlan(t, s.wc, statementSQL[sqlcore.StUpdateFrame], "", "", "", "", "", "completed", nil, nil, nil, 0, 0, "r", "f")
	if !strings.Contains(p, "USING INDEX") || strings.Contains(p, "SCAN frames") {
		t.Errorf("the update of a frame plans %q, want a search of the frames' key", p)
	}
}
