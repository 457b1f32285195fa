package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// Two instances count one request's refusals in a row on one number; a
// tool call admitted through either sets it back to zero in its debit, a
// model turn admitted does not (turns come between refused calls), and a
// sub-request's admitted call sets back only its own count.
func TestPostgresRefusalsAdmitSetsBack(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	for _, id := range []string{"root", "sub"} {
		if _, _, err := a.JoinRequest(ctx, joinReq(id, "alice"), "A/1", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	refuse := func(s *Store, id string, want int64) {
		t.Helper()
		if n, err := s.NoteRefused(ctx, id, false); err != nil || n != want {
			t.Fatalf("a refusal of %s: %d, %v; want %d", id, n, err, want)
		}
	}
	refuse(a, "root", 1)
	refuse(b, "root", 2)
	refuse(a, "root", 3)
	if _, err := b.Admit(ctx, []string{"root"}, store.Spend{Turns: 1}, []store.Spend{{}}); err != nil {
		t.Fatal(err)
	}
	refuse(b, "root", 4)
	refuse(a, "sub", 1)
	if adm, err := a.Admit(ctx, []string{"sub", "root"}, store.Spend{ToolCalls: 1}, []store.Spend{{}, {}}); err != nil || !adm.OK {
		t.Fatalf("the sub-request's call: %+v, %v", adm, err)
	}
	refuse(b, "root", 5)
	refuse(b, "sub", 1)
	if adm, err := b.Admit(ctx, []string{"root"}, store.Spend{ToolCalls: 1}, []store.Spend{{}}); err != nil || !adm.OK {
		t.Fatalf("the root's call: %+v, %v", adm, err)
	}
	refuse(a, "root", 1)
	// A call refused by the shared budget is not let through.
	refuse(a, "root", 2)
	if adm, err := a.Admit(ctx, []string{"root"}, store.Spend{ToolCalls: 1}, []store.Spend{{ToolCalls: 1}}); err != nil || adm.OK {
		t.Fatalf("a call past the budget: %+v, %v", adm, err)
	}
	refuse(b, "root", 3)
}
