package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{19, "undos handed over by a part that left", `
-- How many undos the parts that left a request while another part ran
-- on handed over to it (reach_leave's p_undos): their writes are undone
-- by a stop of the request that comes later, through any instance. The
-- last live part of a stopped request that holds some does not end it:
-- it leaves it, an orphan that a recovery claims (ClaimOrphans), which
-- runs the undos of every part, each once under its key, and ends it. A
-- request that ends without a stop lets them go.
ALTER TABLE requests ADD COLUMN handed INTEGER NOT NULL DEFAULT 0;

CREATE FUNCTION reach_leave(p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_state TEXT, p_usage TEXT, p_cause TEXT, p_ended BIGINT,
	p_undos INTEGER)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM requests WHERE id = p_id FOR UPDATE;
	DELETE FROM replicas WHERE request = p_id AND owner = p_owner;
	IF EXISTS (SELECT 1 FROM replicas x JOIN instances i ON i.owner = x.owner
		WHERE x.request = p_id AND i.seen >= reach_now() - p_ttl) THEN
		IF p_undos > 0 THEN
			UPDATE requests SET handed = handed + p_undos
			WHERE id = p_id AND (state = 'running' OR state = 'stopped' AND ended = 0);
		END IF;
		RETURN false;
	END IF;
	-- The last live part, of a request stopped meanwhile (its stop not
	-- heard here yet), hands its undos over too.
	IF p_undos > 0 THEN
		UPDATE requests SET handed = handed + p_undos
		WHERE id = p_id AND ended = 0 AND (state = 'stopped' OR state = 'running' AND stop > 0);
	END IF;
	IF EXISTS (SELECT 1 FROM requests WHERE id = p_id AND handed > 0 AND ended = 0
		AND (state = 'stopped' OR state = 'running' AND stop > 0)) THEN
		RETURN false;
	END IF;
	UPDATE requests SET state = CASE WHEN state = 'stopped' OR stop > 0 THEN 'stopped' ELSE p_state END,
		usage = p_usage, cause = coalesce(cause, p_cause), ended = p_ended, updated = p_ended
	WHERE id = p_id AND state = 'running' OR id = p_id AND state = 'stopped' AND ended = 0;
	RETURN true;
END $$;

-- The leave of an earlier version hands nothing over, and leaves a
-- stopped request that holds handed undos to a recovery as the new one.
CREATE OR REPLACE FUNCTION reach_leave(p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_state TEXT, p_usage TEXT, p_cause TEXT, p_ended BIGINT)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
	RETURN reach_leave(p_id, p_owner, p_ttl, p_state, p_usage, p_cause, p_ended, 0);
END $$;
`})
}
