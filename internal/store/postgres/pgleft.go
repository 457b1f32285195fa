package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{16, "a join that arrives after its leave writes nothing; a dead life stays dead", `
-- The leaves of parts that an instance's refused joins may have written
-- (LeavePartAt): seq is the life's count of joins begun when it left, so
-- that a join of that life begun before the leave (its caller gave up, its
-- statement still on its way) and reaching the server after it is refused
-- (reach_join_after answers 'left'), where it used to write its part
-- again, held until the life ended. A join begun after the leave has a
-- higher count and is not refused.
CREATE TABLE part_leaves (
	request TEXT NOT NULL,
	owner   TEXT NOT NULL,
	seq     BIGINT NOT NULL,
	PRIMARY KEY (request, owner)
);
CREATE INDEX part_leaves_owner ON part_leaves (owner);

-- reach_join, refused ('left', nothing written) for the join p_seq of
-- p_owner when a leave of p_owner's part of p_id recorded a count at least
-- p_seq. The ledger lock comes first, as in reach_join and the leave: a
-- leave in flight is waited for.
CREATE FUNCTION reach_join_after(p_seq BIGINT, p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_parent TEXT, p_principal TEXT, p_tenant TEXT,
	p_roles TEXT, p_attrs TEXT, p_trace TEXT, p_scene TEXT, p_agent TEXT, p_budget TEXT, p_started BIGINT)
RETURNS TABLE (o_outcome TEXT, o_principal TEXT, o_tenant TEXT, o_roles TEXT, o_attrs TEXT, o_trace TEXT, o_scene TEXT,
	o_agent TEXT, o_state TEXT, o_budget TEXT, o_cause TEXT, o_started BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM reach_lock_ledgers(ARRAY[p_id]);
	IF EXISTS (SELECT 1 FROM part_leaves WHERE request = p_id AND owner = p_owner AND seq >= p_seq) THEN
		RETURN QUERY SELECT 'left'::TEXT, ''::TEXT, ''::TEXT, NULL::TEXT, NULL::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, ''::TEXT,
			NULL::TEXT, NULL::TEXT, 0::BIGINT;
		RETURN;
	END IF;
	RETURN QUERY SELECT * FROM reach_join(p_id, p_owner, p_ttl, p_parent, p_principal, p_tenant, p_roles, p_attrs, p_trace,
		p_scene, p_agent, p_budget, p_started);
END $$;

-- The lives that were judged dead (their row marked, seen -1) or forgotten
-- (their row deleted: recovered, or departed), for a week: a heartbeat of
-- one of them, from a process that was frozen and goes on, no longer makes
-- it alive. The current binary's heartbeat does not overwrite a mark and
-- stops a life it finds forgotten; an older one's (before schema 16) did
-- both, so that an older instance a newer one judged came back alive.
CREATE TABLE dead_lives (
	owner TEXT PRIMARY KEY,
	at    BIGINT NOT NULL
);
CREATE FUNCTION reach_instances_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		IF EXISTS (SELECT 1 FROM dead_lives WHERE owner = NEW.owner) THEN
			RETURN NULL; -- forgotten: not inserted again
		END IF;
		RETURN NEW;
	END IF;
	IF TG_OP = 'UPDATE' THEN
		IF OLD.seen < 0 AND NEW.seen >= 0 THEN
			RETURN NULL; -- judged: the mark stays
		END IF;
		IF NEW.seen < 0 AND OLD.seen >= 0 THEN
			INSERT INTO dead_lives (owner, at) VALUES (NEW.owner, reach_now()) ON CONFLICT (owner) DO NOTHING;
		END IF;
		RETURN NEW;
	END IF;
	INSERT INTO dead_lives (owner, at) VALUES (OLD.owner, reach_now()) ON CONFLICT (owner) DO NOTHING;
	DELETE FROM dead_lives WHERE at < reach_now() - 604800000000000;
	RETURN OLD;
END $$;
CREATE TRIGGER instances_guard BEFORE INSERT OR UPDATE OR DELETE ON instances
	FOR EACH ROW EXECUTE FUNCTION reach_instances_guard();
`})
}
