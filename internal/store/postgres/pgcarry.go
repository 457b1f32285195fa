package postgres

import "strings"

func init() {
	pgMigrations = append(pgMigrations, migration{28, "a request named again keeps what it spent", `
-- reach_join as in version 14, but a root request of its owner that ended
-- and is begun again keeps its ledger: what its earlier runs spent counts
-- against its budget, through any instance, so that naming its id again
-- (a restart, a client's idle gap, a conversation's id) does not give it
-- a new budget. The ledger of a request begun for the first time (no row:
-- one left by a request deleted since would count another request's
-- spend) or of a hand-off's sub-request (carved anew from its parent's
-- budget, which keeps what it spent) starts over, as before.
CREATE OR REPLACE FUNCTION ` + reachJoinHead + reachJoinForeign + reachJoinEnded + reachJoinOrphan + reachJoinHandoff + reachJoinRestKeep + `
`})
}

// reachJoinLedgerReset is reach_join's reset of the ledger of a request it
// begins (again), in reachJoinRest.
const reachJoinLedgerReset = "\tUPDATE ledger SET turns = 0, tool_calls = 0, tokens = 0, cost = 0 WHERE request = p_id;\n"

// reachJoinRestKeep is reachJoinRest with the ledger kept by an ended root
// request begun again (schema 28). r is the row read before the insert (a
// row of nulls if there was none: FOUND no longer says so after it).
var reachJoinRestKeep = func() string {
	if strings.Count(reachJoinRest, reachJoinLedgerReset) != 1 {
		panic("postgres: reach_join's ledger reset not found")
	}
	return strings.Replace(reachJoinRest, reachJoinLedgerReset,
		"\tIF r.id IS NULL OR r.state <> 'ended' OR r.parent <> '' OR p_parent <> '' THEN\n\t"+reachJoinLedgerReset+"\tEND IF;\n", 1)
}()
