package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/postgres"
)

// Two model turns of one request, one through each of two instances, on a
// token budget of 1,000, each asking 600: the second waits while the first
// holds its cap on the shared ledger, and proceeds once the first is
// charged and lets go (woken by the store's notification of it; its poll
// is only a fallback), capped at what is left, both within the budget.
func TestHolds25WaitingTurnProceedsOnceTheOtherLetsGo(t *testing.T) {
	m := newHeldModel(t)
	base, _, url := holdsFleet(t, m, "{tokens: 1000}", [2]string{"timeout: 1m", "timeout: 1m"})
	first := sendTurn(base[0], "R1", 600)
	if cap := <-m.arrived; cap != 600 {
		t.Fatalf("the first turn reached the model capped at %d, want the 600 it asked", cap)
	}
	second := sendTurn(base[1], "R1", 600)
	// The second turn is admitted (its turn counted on the shared ledger)
	// before it asks for its hold, and waits.
	st, err := postgres.Open(t.Context(), url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		s, err := st.Spent(t.Context(), "R1")
		if err != nil {
			t.Fatal(err)
		}
		if s.Turns >= 2 {
			break
		}
		select {
		case cap := <-m.arrived:
			t.Fatalf("the second turn reached the model (capped at %d) while the first held 600 of the 1,000-token budget", cap)
		case r := <-second:
			t.Fatalf("the second turn ended before it was admitted: %d %s", r.status, r.body)
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case cap := <-m.arrived:
		t.Fatalf("the second turn reached the model (capped at %d) while the first held 600 of the 1,000-token budget", cap)
	case r := <-second:
		t.Fatalf("the second turn ended while the first held its cap: %d %s; want it to wait", r.status, r.body)
	default:
	}
	m.open()
	if r := <-first; r.status != http.StatusOK {
		t.Fatalf("the first turn: %d %s", r.status, r.body)
	}
	cap := <-m.arrived
	if r := <-second; r.status != http.StatusOK {
		t.Fatalf("the second turn, once the first let go: %d %s", r.status, r.body)
	}
	spentFirst := int64(heldModelPrompt + 600)
	if cap <= 0 || heldModelPrompt+cap > 1000-spentFirst {
		t.Fatalf("the second turn was capped at %d tokens with %d of 1,000 spent", cap, spentFirst)
	}
	if total, _, _, turns := spentOn(t, url, "R1"); total > 1000 || turns != 0 {
		t.Fatalf("the two turns spent %d tokens of a 1,000-token budget (%d holds left)", total, turns)
	}
}
