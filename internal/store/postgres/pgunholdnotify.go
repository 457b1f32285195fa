package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{25, "a turn's hold let go wakes the turns waiting on every instance", `
-- Lets go of what the turn p_turn holds, and says so to every instance
-- (pg_notify 'unhold:<request>', once per request it held on, at commit):
-- a model turn that waits for a hold on its request, or on one above it,
-- to be let go asks again at once instead of at its next poll.
CREATE OR REPLACE FUNCTION reach_unhold(p_turn TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
	r TEXT;
BEGIN
	FOR r IN DELETE FROM holds WHERE turn = p_turn RETURNING request LOOP
		PERFORM pg_notify('reach', 'unhold:' || r);
	END LOOP;
END $$;
`})
}
