package cluster

import (
	"strings"
	"testing"
)

// TestSharedSpentTellsNoWayRound: a root request's shared budget refusal,
// given on a first run as on a run named again (the ledger does not say
// which), tells the model to finish and ask the user, never how to get a
// fresh budget itself (leave the id out, name another).
func TestSharedSpentTellsNoWayRound(t *testing.T) {
	for _, dim := range []string{"turn", "token", "cost"} {
		e := turnRefusal(ledgerLink{id: "conv"}, dim, "spent")
		for _, no := range []string{"leave the request id out", "name a new one", "begin a new request"} {
			if strings.Contains(e.Suggestion, no) {
				t.Errorf("%s: the refusal suggests %q: it tells the model a way round its budget (%q)", dim, e.Suggestion, no)
			}
		}
		if !strings.Contains(e.Suggestion, "ask the user") {
			t.Errorf("%s: the refusal suggests %q; want it to say to ask the user", dim, e.Suggestion)
		}
	}
}
