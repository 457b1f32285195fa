package postgres

import "strings"

func init() {
	pgMigrations = append(pgMigrations, migration{29, "a part joined of a run named again counts on from the earlier runs", `
-- A root request named again counts on from what its earlier runs spent:
-- the ledger keeps their tool calls, turns, tokens and cost (schema 28),
-- but no wall clock, and the usage stored at a run's end was the last part
-- that left's alone. Here the run begun again keeps the earlier runs'
-- usage (carried: the ended row's usage, as it was stored), which a part
-- that joins the run on another instance reads to count on from, as the
-- instance that began it does; and the last part that leaves stores the
-- request's counts as the ledger has them (every part's, every run's), its
-- wall clock the earlier runs' and its run's (reach_usage_total).
ALTER TABLE requests ADD COLUMN IF NOT EXISTS carried TEXT;

-- p_usage (a part's usage, JSON) with the ledger's counts where they are
-- larger; p_usage as it is when none is.
CREATE OR REPLACE FUNCTION reach_usage_total(p_id TEXT, p_usage TEXT) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
	l ledger%ROWTYPE;
	u JSONB;
	turns BIGINT;
	calls BIGINT;
	tokens BIGINT;
	cost NUMERIC;
BEGIN
	IF p_usage IS NULL OR p_usage = '' THEN
		RETURN p_usage;
	END IF;
	SELECT * INTO l FROM ledger WHERE request = p_id;
	IF NOT FOUND THEN
		RETURN p_usage;
	END IF;
	u := p_usage::JSONB;
	turns := coalesce((u ->> 'turns')::BIGINT, 0);
	calls := coalesce((u ->> 'tool_calls')::BIGINT, 0);
	tokens := coalesce((u ->> 'tokens')::BIGINT, 0);
	cost := coalesce((u ->> 'cost')::NUMERIC, 0);
	IF l.turns <= turns AND l.tool_calls <= calls AND l.tokens <= tokens AND l.cost / 1000000000.0 <= cost THEN
		RETURN p_usage;
	END IF;
	RETURN (u || jsonb_build_object('turns', GREATEST(turns, l.turns), 'tool_calls', GREATEST(calls, l.tool_calls),
		'tokens', GREATEST(tokens, l.tokens), 'cost', GREATEST(cost, l.cost / 1000000000.0)))::TEXT;
END $$;

CREATE OR REPLACE FUNCTION ` + reachJoinHead + reachJoinForeign + reachJoinEnded + reachJoinOrphan + reachJoinHandoff + reachJoinRestCarry + `
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
		usage = reach_usage_total(p_id, p_usage), cause = coalesce(cause, p_cause), ended = p_ended, updated = p_ended
	WHERE id = p_id AND state = 'running' OR id = p_id AND state = 'stopped' AND ended = 0;
	RETURN true;
END $$;
`})
}

// reachJoinRestCarry is reachJoinRestKeep (schema 28) that also keeps, in
// carried, the usage of an ended root request of its owner begun again
// (r, the row read before the insert), and clears it for any other begin.
var reachJoinRestCarry = func() string {
	const at = "\tDELETE FROM replicas WHERE request = p_id;\n"
	if strings.Count(reachJoinRestKeep, at) != 1 {
		panic("postgres: reach_join's replicas reset not found")
	}
	return strings.Replace(reachJoinRestKeep, at,
		"\tUPDATE requests SET carried = CASE WHEN r.id IS NOT NULL AND r.state = 'ended' AND r.parent = '' AND p_parent = ''\n"+
			"\t\tTHEN r.usage END WHERE id = p_id;\n"+at, 1)
}()
