package sqlite

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/agentreach/reach/internal/store/sqlcore"
)

// TestExecAllocations checks that a statement of the writer allocates no
// more than the driver does to run it: its arguments and its result are
// not converted and wrapped again on the way (database/sql's
// (*sql.Stmt).ExecContext allocates two more).
func TestExecAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A release of a key no one holds: it changes no row.
	id := sqlcore.StIdemRelease
	var st driver.Stmt
	if err := s.wc.Raw(func(dc any) (err error) {
		st, err = dc.(driver.Conn).Prepare(statementSQL[id])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer s.wc.Raw(func(any) error { return st.Close() })
	nv := []driver.NamedValue{{Ordinal: 1, Value: "key"}, {Ordinal: 2, Value: "owner"}}
	driverOnly := testing.AllocsPerRun(100, func() {
		if err := s.wc.Raw(func(any) error {
			_, err := st.(driver.StmtExecContext).ExecContext(context.Background(), nv)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	})
	b := &batch{s: s}
	writer := testing.AllocsPerRun(100, func() {
		if n, err := b.affected(id, "key", "owner"); err != nil || n != 0 {
			t.Fatal(n, err)
		}
	})
	if writer > driverOnly {
		t.Errorf("a statement of the writer allocates %v times, the driver alone %v", writer, driverOnly)
	}
}
