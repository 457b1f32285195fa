package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{20, "the in-flight lookup by its cut-off key", `
-- reach_claim_cut's lookup of the other claims of a cut-off key, as schema
-- 18 spelt it (state = 'claimed'), could be served by idempotency_claims
-- too, whose order is the lookup's: its plans (the generic one PL/pgSQL
-- keeps, and custom ones, on a table whose indexes have no statistics
-- yet) walked that index in claim order and filtered every claim held by
-- its cut-off key, so a keyless claim read all the claims held, and the
-- server's CPU a claim doubled. A key is 'claimed' or 'done': spelt
-- state <> 'done', in the lookup and in idempotency_in_flight's predicate
-- alike, the lookup can use only idempotency_in_flight, and reads the
-- claims of its key alone.
DROP INDEX idempotency_in_flight;
CREATE INDEX idempotency_in_flight ON idempotency (cut_key) WHERE state <> 'done' AND cut_key IS NOT NULL;

CREATE OR REPLACE FUNCTION reach_claim_cut(p_key BYTEA, p_owner TEXT, p_args TEXT, p_request TEXT, p_frame TEXT, p_claimed BIGINT,
	p_expires BIGINT, p_cut TEXT, p_root TEXT)
RETURNS TABLE (o_claimed BOOLEAN, o_owner TEXT, o_state TEXT, o_args TEXT, o_request TEXT, o_frame TEXT, o_result BYTEA,
	o_at BIGINT, o_expires BIGINT, o_fl_root TEXT, o_fl_at BIGINT, o_fl_request TEXT)
LANGUAGE plpgsql AS $$
DECLARE
	f_root TEXT := '';
	f_at BIGINT := 0;
	f_request TEXT := '';
BEGIN
	LOOP
		INSERT INTO idempotency AS i (key, owner, state, args, request, frame, result, claimed, expires, cut_key, cut_root)
		VALUES (p_key, p_owner, 'claimed', p_args, p_request, p_frame, NULL, p_claimed, p_expires, p_cut, coalesce(p_root, ''))
		ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, state = 'claimed', args = excluded.args,
			request = excluded.request, frame = excluded.frame, result = NULL, claimed = excluded.claimed, expires = excluded.expires,
			cut_key = excluded.cut_key, cut_root = excluded.cut_root
		WHERE i.state = 'done' AND i.expires <> 0 AND i.expires <= excluded.claimed;
		IF FOUND THEN
			IF p_cut IS NOT NULL THEN
				SELECT i.cut_root, i.claimed, i.request INTO f_root, f_at, f_request
				FROM idempotency i JOIN instances n ON n.owner = i.owner AND n.seen >= 0
				WHERE i.cut_key = p_cut AND i.cut_root = coalesce(p_root, '') AND i.state <> 'done' AND i.key <> p_key
				ORDER BY i.claimed LIMIT 1;
				IF NOT FOUND THEN
					f_root := ''; f_at := 0; f_request := '';
				END IF;
			END IF;
			RETURN QUERY SELECT true, ''::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, NULL::BYTEA, 0::BIGINT, 0::BIGINT,
				f_root, f_at, f_request;
			RETURN;
		END IF;
		RETURN QUERY SELECT false, i.owner, i.state, i.args, i.request, i.frame, i.result, i.claimed, i.expires,
			''::TEXT, 0::BIGINT, ''::TEXT
			FROM idempotency i WHERE i.key = p_key;
		IF FOUND THEN
			RETURN;
		END IF;
		-- Released between the two statements: claim again.
	END LOOP;
END $$;
`})
}
