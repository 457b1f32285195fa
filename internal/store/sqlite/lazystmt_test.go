package sqlite

import (
	"testing"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// TestQueryStatementsPreparedWhenUsed: the writer's statements that only
// write run on the driver's own and are not prepared a second time through
// database/sql; one that returns rows is prepared there when first used
// (a claim of a key already held reads the record that holds it).
func TestQueryStatementsPreparedWhenUsed(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, st := range s.stmts {
		if st != nil {
			t.Errorf("statement %d prepared through database/sql at open", id)
		}
	}
	rec := &store.IdemRecord{Key: "k", Owner: "a", Args: "x"}
	if _, claimed, err := s.ClaimKey(t.Context(), rec); err != nil || !claimed {
		t.Fatalf("first claim: %v, %v", claimed, err)
	}
	if s.stmts[sqlcore.StPutFrame] != nil || s.stmts[sqlcore.StIdemClaim] != nil {
		t.Error("a statement that only writes was prepared through database/sql")
	}
	held, claimed, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: "k", Owner: "b", Args: "x"})
	if err != nil || claimed || held == nil || held.Owner != "a" {
		t.Fatalf("second claim: %+v, %v, %v; want the first's record", held, claimed, err)
	}
	if s.stmts[sqlcore.StIdemGet] == nil {
		t.Error("the read of a held key did not go through its prepared statement")
	}
}
