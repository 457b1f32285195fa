package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{24, "the last live part of a stopped request with a dead part leaves it to a recovery", `
-- A stop undoes the whole request, the writes of every part. The last live
-- part of a stopped request asked first whether a dead instance holds a
-- part (DeadParts) and, if not, left it here, which ended it when no other
-- part was live: a part that died between the two (its heartbeat aged past
-- the TTL just then) was counted neither alive nor dead, the request was
-- stored ended, no recovery claimed it, and that part's undos never ran.
-- Here, in the one transaction that holds the request's row: a stopped
-- request (or one whose stop this part has not heard yet) that keeps a
-- part of a dead instance is left, not ended, an orphan for a recovery
-- (ClaimOrphans), which runs every part's undos, each once under its key,
-- and ends it.
CREATE OR REPLACE FUNCTION reach_leave(p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_state TEXT, p_usage TEXT, p_cause TEXT, p_ended BIGINT,
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
	IF EXISTS (SELECT 1 FROM requests WHERE id = p_id AND ended = 0
		AND (state = 'stopped' OR state = 'running' AND stop > 0)
		AND (handed > 0 OR EXISTS (SELECT 1 FROM replicas x WHERE x.request = p_id))) THEN
		RETURN false;
	END IF;
	UPDATE requests SET state = CASE WHEN state = 'stopped' OR stop > 0 THEN 'stopped' ELSE p_state END,
		usage = p_usage, cause = coalesce(cause, p_cause), ended = p_ended, updated = p_ended
	WHERE id = p_id AND state = 'running' OR id = p_id AND state = 'stopped' AND ended = 0;
	RETURN true;
END $$;
`})
}
