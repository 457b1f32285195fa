package effects

import "testing"

// TestSaga: undos are kept in the order registered; Since finds a frame's
// undo registered after a position only; Take empties the saga.
func TestSaga(t *testing.T) {
	var s Saga
	s.Push(Undo{Tool: "unrefund", Frame: 1})
	n := s.Len()
	if _, ok := s.Since(n, 1); ok {
		t.Fatal("Since found an undo registered before the position")
	}
	s.Push(Undo{Tool: "unship", Frame: 2})
	if u, ok := s.Since(n, 2); !ok || u.Tool != "unship" {
		t.Fatalf("Since(%d, 2) = %+v, %v", n, u, ok)
	}
	if u := s.Take(); len(u) != 2 || u[0].Tool != "unrefund" || u[1].Tool != "unship" || s.Len() != 0 {
		t.Fatalf("Take = %+v, then Len %d", u, s.Len())
	}
}
