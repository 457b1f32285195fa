package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{14, "an ended hand-off is not begun again", `
-- reach_join as in version 8, but a hand-off's sub-request (a request with
-- a parent) that ended is answered 'handoff_ended', its parent's id in
-- o_cause, and nothing is written, when it is named as a root or under
-- another parent: begun again it would be a root of its own, outside its
-- parent's budget and stops, under any budget its caller names. An
-- instance that still held it refused it (request_ended); one that never
-- did began it again.
CREATE OR REPLACE FUNCTION ` + reachJoinHead + reachJoinForeign + reachJoinEnded + reachJoinOrphan + reachJoinHandoff + reachJoinRest + `
`})
}

// reachJoinHandoff is what schema 14 adds to reach_join (see there).
const reachJoinHandoff = `	IF FOUND AND r.parent <> '' AND r.parent <> p_parent AND r.state = 'ended' AND r.stop = 0 THEN
		RETURN QUERY SELECT 'handoff_ended', r.principal, r.tenant, NULL::TEXT, NULL::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, r.state,
			NULL::TEXT, r.parent, r.started;
		RETURN;
	END IF;
`
