package cluster

import (
	"strings"
	"testing"
)

// TestSharedSpentSaysRunsCount: the refusal of a root request whose shared
// budget is spent says that its budget counts every run of its id and to
// begin a new request for new work (its ledger keeps what its earlier
// runs spent, schema 28); a sub-agent's says to finish or ask for more.
func TestSharedSpentSaysRunsCount(t *testing.T) {
	root := turnRefusal(ledgerLink{id: "conv"}, "turn", "3 turns made of 3")
	if !strings.Contains(root.Suggestion, "every run of its id") || !strings.Contains(root.Suggestion, "new request") {
		t.Errorf("a root's refusal suggests %q; want it to say its runs count and to begin a new request", root.Suggestion)
	}
	sub := turnRefusal(ledgerLink{id: "helper", sub: true}, "token", "10 tokens spent of 10")
	if strings.Contains(sub.Suggestion, "new request") || !strings.Contains(sub.Suggestion, "larger budget") {
		t.Errorf("a sub-agent's refusal suggests %q; want to finish or ask for a larger budget", sub.Suggestion)
	}
}
