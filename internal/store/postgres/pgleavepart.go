package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{26, "a part's leave says whether a dead part stays", `
-- reach_leave, saying why a part that leaves does not end the request:
-- 'ended' (it did: the last live part), 'dead' (a part of an instance that
-- died stays: a stopped request is then left to a recovery, which runs
-- every part's undos) or 'left' (only live parts stay). The gateway asked
-- a query of its own for the dead part before a stopped part left; the
-- leave reads the same, under the request's row lock. reach_leave answers
-- as before (true: ended), for instances of the version before.
CREATE OR REPLACE FUNCTION reach_leave_part(p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_state TEXT, p_usage TEXT, p_cause TEXT,
	p_ended BIGINT, p_undos INTEGER)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
	dead BOOLEAN;
BEGIN
	IF reach_leave(p_id, p_owner, p_ttl, p_state, p_usage, p_cause, p_ended, p_undos) THEN
		RETURN 'ended';
	END IF;
	-- The row lock reach_leave took is held to commit: no part joins or
	-- leaves meanwhile.
	SELECT EXISTS (SELECT 1 FROM replicas x WHERE x.request = p_id
		AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.owner = x.owner AND i.seen >= reach_now() - p_ttl)) INTO dead;
	IF dead THEN
		RETURN 'dead';
	END IF;
	RETURN 'left';
END $$;
`})
}
