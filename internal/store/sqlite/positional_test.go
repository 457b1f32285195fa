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
		{`UPDATE t SET a = $2 WHERE b = $1`, `UPDATE t SET a = ?2 WHERE b = ?1`},                                       // out of order: by number
		{`VALUES ($1, $2, $2)`, `VALUES (?1, ?2, ?2)`},                                                                 // twice: by number
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

// TestNumParams: how many arguments a statement binds, as positional
// writes it; the writer passes a statement no more (some drivers refuse
// more arguments than parameters).
func TestNumParams(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`SELECT a FROM t WHERE b = $1 AND c = $2`, 2},
		{`UPDATE t SET a = $2 WHERE b = $1`, 2},
		{`VALUES ($1, $3, $3)`, 3},
		{`SELECT '$' || a FROM t`, 0},
		{`SELECT ifnull(max(seq), 0) FROM audit WHERE seq > ?`, 1},
	} {
		if got := numParams(positional(c.in)); got != c.want {
			t.Errorf("numParams(%q) = %d, want %d", positional(c.in), got, c.want)
		}
	}
	// The path's statements are held to the arguments sqlcore passes
	// them: the frame's 13 columns, not PostgreSQL's owner and stack.
	if n := numParams(statementSQL[sqlcore.StPutFrame]); n != 13 {
		t.Errorf("StPutFrame binds %d arguments, want 13", n)
	}
}
