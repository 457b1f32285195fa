package postgres

// pgMigrations are the steps of the PostgreSQL schema: the same tables as
// SQLite's (internal/store/sqlite), in PostgreSQL's types, and the functions that
// make one call of the store one statement (so that the writer sends a
// batch of them in one round trip). Steps are applied in order, each in its
// own transaction under an advisory lock (instances that start together
// migrate once), with its row in schema_migrations. Never edit a released
// step: add a new one.
var pgMigrations = []migration{
	{1, "initial schema", `
CREATE TABLE requests (
	id         TEXT PRIMARY KEY,
	parent     TEXT NOT NULL DEFAULT '',
	principal  TEXT NOT NULL DEFAULT '',
	tenant     TEXT NOT NULL DEFAULT '',
	roles      TEXT,
	attributes TEXT,
	trace      TEXT NOT NULL DEFAULT '',
	scene      TEXT NOT NULL DEFAULT '',
	agent      TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL,
	budget     TEXT,
	usage      TEXT,
	cause      TEXT,
	started    BIGINT NOT NULL,
	ended      BIGINT NOT NULL DEFAULT 0,
	updated    BIGINT NOT NULL
);
CREATE INDEX requests_started ON requests (started DESC, id DESC);
CREATE INDEX requests_state ON requests (state, started DESC);
CREATE INDEX requests_parent ON requests (parent, started DESC) WHERE parent <> '';

CREATE TABLE frames (
	seq      BIGSERIAL,
	request  TEXT NOT NULL,
	frame    TEXT NOT NULL,
	parent   TEXT NOT NULL DEFAULT '',
	kind     TEXT NOT NULL DEFAULT '',
	name     TEXT NOT NULL DEFAULT '',
	call_id  TEXT NOT NULL DEFAULT '',
	idem_key BYTEA NOT NULL DEFAULT '',
	state    TEXT NOT NULL,
	args     TEXT,
	undo     TEXT,
	error    TEXT,
	started  BIGINT NOT NULL,
	updated  BIGINT NOT NULL,
	PRIMARY KEY (request, frame)
);
CREATE INDEX frames_open ON frames (started, seq)
	WHERE state NOT IN ('completed', 'failed', 'refused', 'cancelled');

-- Keys are bytes: the runtime scopes a key to its principal and tenant with
-- NUL separators, which TEXT cannot hold.
CREATE TABLE idempotency (
	key     BYTEA PRIMARY KEY,
	owner   TEXT NOT NULL,
	state   TEXT NOT NULL,
	args    TEXT NOT NULL DEFAULT '',
	request TEXT NOT NULL DEFAULT '',
	frame   TEXT NOT NULL DEFAULT '',
	result  BYTEA,
	claimed BIGINT NOT NULL,
	expires BIGINT NOT NULL
);
CREATE INDEX idempotency_claims ON idempotency (claimed) WHERE state = 'claimed';
CREATE INDEX idempotency_expires ON idempotency (expires) WHERE state = 'done';

-- The audit log: one global sequence for every instance (docs/AUDIT.md).
-- event is json, not jsonb: json keeps the bytes as written, which the
-- chain hashes, and still answers event->>'kind'.
CREATE TABLE audit (
	seq       BIGINT PRIMARY KEY,
	time      BIGINT NOT NULL,
	request   TEXT NOT NULL,
	event     JSON NOT NULL,
	prev_hash BYTEA NOT NULL,
	hash      BYTEA NOT NULL
);
CREATE INDEX audit_request ON audit (request, seq);
-- The head of the chain, one row: an append locks it (FOR UPDATE), so that
-- the appenders of several instances take turns and never fork the chain.
CREATE TABLE audit_head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	seq  BIGINT NOT NULL,
	hash BYTEA
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, NULL);
-- Append-only: the application never updates or deletes audit rows. The
-- trigger stops accidents; the hash chain catches everything else.
CREATE FUNCTION reach_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the audit log is append-only';
END $$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
	FOR EACH ROW EXECUTE FUNCTION reach_audit_append_only();

CREATE TABLE checkpoints (
	seq  BIGINT PRIMARY KEY,
	hash BYTEA NOT NULL,
	time BIGINT NOT NULL
);

CREATE TABLE dead_letters (
	id       BIGSERIAL PRIMARY KEY,
	request  TEXT NOT NULL DEFAULT '',
	frame    TEXT NOT NULL DEFAULT '',
	tool     TEXT NOT NULL DEFAULT '',
	args     TEXT,
	error    TEXT NOT NULL DEFAULT '',
	attempts INTEGER NOT NULL DEFAULT 0,
	state    TEXT NOT NULL,
	note     TEXT NOT NULL DEFAULT '',
	created  BIGINT NOT NULL,
	updated  BIGINT NOT NULL
);
CREATE INDEX dead_letters_state ON dead_letters (state, id);

CREATE TABLE approvals (
	id      TEXT PRIMARY KEY,
	key     TEXT NOT NULL,
	alt     TEXT NOT NULL DEFAULT '',
	status  TEXT NOT NULL,
	version BIGINT NOT NULL,
	created BIGINT NOT NULL,
	expires BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	data    TEXT NOT NULL
);
CREATE INDEX approvals_created ON approvals (created DESC, id DESC);
CREATE INDEX approvals_live ON approvals (status) WHERE status IN ('pending', 'approved');
CREATE INDEX approvals_key ON approvals (key, created DESC);
CREATE INDEX approvals_alt ON approvals (alt, created DESC) WHERE alt <> '';

CREATE TABLE ledger (
	request    TEXT PRIMARY KEY,
	turns      BIGINT NOT NULL DEFAULT 0,
	tool_calls BIGINT NOT NULL DEFAULT 0,
	tokens     BIGINT NOT NULL DEFAULT 0,
	cost       BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE entities (
	name    TEXT PRIMARY KEY,
	version BIGINT NOT NULL
);
CREATE TABLE store_meta (
	key   TEXT PRIMARY KEY,
	value BIGINT NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('entity_version', 0), ('pins_version', 0);

CREATE TABLE pins (
	tool    TEXT PRIMARY KEY,
	data    TEXT NOT NULL,
	updated BIGINT NOT NULL
);

-- A claim in one call: a key with no record, or whose result has expired
-- (as of the claim), is claimed; otherwise the record that holds it is
-- returned. Each statement of a function sees what committed before it, so
-- a claim that a concurrent transaction made (the INSERT waited for it) is
-- read by the SELECT.
CREATE FUNCTION reach_claim(p_key BYTEA, p_owner TEXT, p_args TEXT, p_request TEXT, p_frame TEXT, p_claimed BIGINT, p_expires BIGINT)
RETURNS TABLE (o_claimed BOOLEAN, o_owner TEXT, o_state TEXT, o_args TEXT, o_request TEXT, o_frame TEXT, o_result BYTEA,
	o_at BIGINT, o_expires BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		INSERT INTO idempotency AS i (key, owner, state, args, request, frame, result, claimed, expires)
		VALUES (p_key, p_owner, 'claimed', p_args, p_request, p_frame, NULL, p_claimed, p_expires)
		ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, state = 'claimed', args = excluded.args,
			request = excluded.request, frame = excluded.frame, result = NULL, claimed = excluded.claimed, expires = excluded.expires
		WHERE i.state = 'done' AND i.expires <> 0 AND i.expires <= excluded.claimed;
		IF FOUND THEN
			RETURN QUERY SELECT true, ''::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, NULL::BYTEA, 0::BIGINT, 0::BIGINT;
			RETURN;
		END IF;
		RETURN QUERY SELECT false, i.owner, i.state, i.args, i.request, i.frame, i.result, i.claimed, i.expires
			FROM idempotency i WHERE i.key = p_key;
		IF FOUND THEN
			RETURN;
		END IF;
		-- Released between the two statements: claim again.
	END LOOP;
END $$;

-- A debit in one call: added if every sum stays within its cap (zero: no
-- cap), compared and written by one conditional update; otherwise nothing
-- is added, and what was spent is returned.
CREATE FUNCTION reach_debit(p_request TEXT, d_turns BIGINT, d_calls BIGINT, d_tokens BIGINT, d_cost BIGINT,
	c_turns BIGINT, c_calls BIGINT, c_tokens BIGINT, c_cost BIGINT)
RETURNS TABLE (o_ok BOOLEAN, o_turns BIGINT, o_calls BIGINT, o_tokens BIGINT, o_cost BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
	IF (c_turns = 0 OR d_turns <= c_turns) AND (c_calls = 0 OR d_calls <= c_calls)
		AND (c_tokens = 0 OR d_tokens <= c_tokens) AND (c_cost = 0 OR d_cost <= c_cost) THEN
		RETURN QUERY INSERT INTO ledger AS l (request, turns, tool_calls, tokens, cost)
			VALUES (p_request, d_turns, d_calls, d_tokens, d_cost)
			ON CONFLICT (request) DO UPDATE SET turns = l.turns + excluded.turns, tool_calls = l.tool_calls + excluded.tool_calls,
				tokens = l.tokens + excluded.tokens, cost = l.cost + excluded.cost
			WHERE (c_turns = 0 OR l.turns + excluded.turns <= c_turns) AND (c_calls = 0 OR l.tool_calls + excluded.tool_calls <= c_calls)
				AND (c_tokens = 0 OR l.tokens + excluded.tokens <= c_tokens) AND (c_cost = 0 OR l.cost + excluded.cost <= c_cost)
			RETURNING true, l.turns, l.tool_calls, l.tokens, l.cost;
		IF FOUND THEN
			RETURN;
		END IF;
	END IF;
	RETURN QUERY SELECT false, l.turns, l.tool_calls, l.tokens, l.cost FROM ledger l WHERE l.request = p_request;
	IF NOT FOUND THEN
		RETURN QUERY SELECT false, 0::BIGINT, 0::BIGINT, 0::BIGINT, 0::BIGINT;
	END IF;
END $$;
`},
}

func init() {
	pgMigrations = append(pgMigrations, migration{2, "several instances", `
-- The instances that share the store, each life of each: owner is
-- "<instance>/<life>", as idempotency claims name it; seen is the server's
-- clock at its last heartbeat (reach_now), so that instances with skewed
-- clocks agree on who is alive.
CREATE TABLE instances (
	owner   TEXT PRIMARY KEY,
	name    TEXT NOT NULL,
	started BIGINT NOT NULL,
	seen    BIGINT NOT NULL
);
CREATE FUNCTION reach_now() RETURNS BIGINT LANGUAGE sql VOLATILE AS $$
	SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::BIGINT
$$;

-- A request's stop mode (1 soft, 2 cancel, 3 isolate; 0 running), beside
-- its state: raised, never lowered, by reach_stop, which wakes the other
-- instances (pg_notify). The durable row is the truth; the notification
-- only the wake-up.
ALTER TABLE requests ADD COLUMN stop INTEGER NOT NULL DEFAULT 0;
CREATE INDEX requests_stops ON requests (updated) WHERE stop > 0;

-- The instances that run calls of each request: a request's calls may
-- arrive at any instance, each of which joins it. It ends when the last
-- one leaves; it is orphaned when every one is dead.
CREATE TABLE replicas (
	request TEXT NOT NULL,
	owner   TEXT NOT NULL,
	PRIMARY KEY (request, owner)
);
CREATE INDEX replicas_owner ON replicas (owner);

-- Who wrote a checkpoint (its instance's life), for the recovery of a
-- dead instance's calls; and the call's stack (its ancestors, innermost
-- first, as JSON), so that a call that arrives at another instance under
-- this frame sees its ancestors (reach_frame).
ALTER TABLE frames ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE frames ADD COLUMN stack TEXT;
CREATE INDEX frames_frame ON frames (frame);
CREATE INDEX frames_owner_open ON frames (owner)
	WHERE state NOT IN ('completed', 'failed', 'refused', 'cancelled');

-- Locks the ledgers of ids, in one order (so that two calls never wait for
-- each other), making those that are missing. Every function that debits
-- or stops takes the ledger first and the request after.
CREATE FUNCTION reach_lock_ledgers(p_ids TEXT[]) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ledger (request) SELECT DISTINCT x FROM unnest(p_ids) AS x ORDER BY 1 ON CONFLICT (request) DO NOTHING;
	PERFORM 1 FROM ledger WHERE request = ANY(p_ids) ORDER BY request FOR UPDATE;
END $$;

-- Begins a request, or joins it: a request of that id that runs (and is
-- not orphaned: some instance that runs it is alive) is joined, and
-- returned as it was begun; one that ended is begun again (its ledger
-- starts over); a stopped or interrupted one is final, and returned so.
CREATE FUNCTION ` + reachJoinHead + reachJoinRest + `

-- An instance leaves a request it joined: the last one to leave (the
-- others gone, or dead) ends it, with what it says (ended, or stopped
-- with its cause; a stop stored before stays).
CREATE FUNCTION reach_leave(p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_state TEXT, p_usage TEXT, p_cause TEXT, p_ended BIGINT)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM requests WHERE id = p_id FOR UPDATE;
	DELETE FROM replicas WHERE request = p_id AND owner = p_owner;
	IF EXISTS (SELECT 1 FROM replicas x JOIN instances i ON i.owner = x.owner
		WHERE x.request = p_id AND i.seen >= reach_now() - p_ttl) THEN
		RETURN false;
	END IF;
	UPDATE requests SET state = CASE WHEN state = 'stopped' OR stop > 0 THEN 'stopped' ELSE p_state END,
		usage = p_usage, cause = coalesce(cause, p_cause), ended = p_ended, updated = p_ended
	WHERE id = p_id AND state = 'running' OR id = p_id AND state = 'stopped' AND ended = 0;
	RETURN true;
END $$;

-- Stops a request: its mode is raised (never lowered), under the lock of
-- its ledger, which every debit takes first: a debit that comes after it
-- sees it. The change wakes the other instances.
CREATE FUNCTION reach_stop(p_id TEXT, p_mode INTEGER, p_cause TEXT, p_updated BIGINT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
	PERFORM reach_lock_ledgers(ARRAY[p_id]);
	UPDATE requests SET state = 'stopped', stop = p_mode, cause = p_cause, updated = p_updated
	WHERE id = p_id AND stop < p_mode AND state <> 'interrupted';
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	PERFORM pg_notify('reach', 'stop:' || p_id);
	RETURN true;
END $$;

-- Admits a step of the request ids[1] (with its ancestors after it): under
-- their ledgers' locks, a stop of any of them refuses it (o_stopped names
-- it); a debit that would pass a cap of any refuses it (o_over, 1-based,
-- and o_dim); otherwise d is debited from each, and what ids[1] has spent
-- is returned.
CREATE FUNCTION ` + reachAdmitHead + `	UPDATE ledger SET turns = turns + d_turns, tool_calls = tool_calls + d_calls, tokens = tokens + d_tokens, cost = cost + d_cost
	WHERE request = ANY(p_ids);
` + reachAdmitTail + `
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{3, "A2A tasks", `
-- The A2A tasks of the agents reach serves (internal/a2a): any instance
-- answers for a task another one runs, and a final one keeps its state,
-- whoever writes later.
CREATE TABLE tasks (
	agent     TEXT NOT NULL,
	id        TEXT NOT NULL,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	request   TEXT NOT NULL DEFAULT '',
	state     TEXT NOT NULL,
	final     BOOLEAN NOT NULL DEFAULT false,
	data      TEXT NOT NULL,
	created   BIGINT NOT NULL,
	updated   BIGINT NOT NULL,
	PRIMARY KEY (agent, id)
);
CREATE INDEX tasks_owner ON tasks (agent, principal, tenant, created DESC);
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{4, "requests joined by their principal only", `
-- reach_join as in version 2, but a request of that id that belongs to
-- another principal or tenant is answered 'foreign' before anything is
-- written: the caller is refused, and this instance is not made one of
-- the request's replicas (one left behind kept the request running after
-- its owner ended it, and had a later recovery undo its finished writes).
-- Whoever it belongs to, whatever its state, its id is not taken over.
CREATE OR REPLACE FUNCTION ` + reachJoinHead + reachJoinForeign + reachJoinRest + `
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{5, "requests ended by their client", `
-- A request its client ended (POST /v1/requests/{id}/end): its sagas are
-- settled. Every instance ends its part (pg_notify 'end:<id>'), and a
-- recovery never undoes its calls, even when an instance that ran some of
-- them died before it ended its part. settled is the start of the request
-- so ended (0: not ended by its client): a request begun again under the
-- same id (reach_join) has another start, and is not settled.
ALTER TABLE requests ADD COLUMN settled BIGINT NOT NULL DEFAULT 0;
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{6, "a request its client ended is not joined", `
-- reach_join as in version 4, but a request that its client ended while
-- some instance's part of it still runs is answered 'ended' and not
-- joined: an instance that did not hear the end (it was not listening, or
-- heard it a TTL ago and forgot it) would otherwise run new calls in it.
-- Nothing is written. Once every part has left, the request is ended, and
-- a call naming its id begins it again, as before.
CREATE OR REPLACE FUNCTION ` + reachJoinHead + reachJoinForeign + reachJoinEnded + reachJoinRest + `
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{7, "MCP sessions", `
-- The MCP sessions the gateway's clients opened (store.Sessions), by their
-- id's SHA-256, so that any instance takes one over when its client comes
-- to it with its id; a record lives until its session ends.
CREATE TABLE sessions (
	hash      TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	protocol  TEXT NOT NULL DEFAULT '',
	init      TEXT NOT NULL,
	request   TEXT NOT NULL DEFAULT '',
	created   BIGINT NOT NULL,
	used      BIGINT NOT NULL
);
CREATE INDEX sessions_used ON sessions (used);
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{8, "a request whose instances all died is not begun again", `
-- reach_join as in version 6, but a request still running whose every
-- instance is dead (each heartbeat older than the TTL), and which its
-- client did not end, is answered 'final', interrupted, and nothing is
-- written: it is an orphan that a recovery will claim (ClaimOrphans, the
-- same test), interrupt and compensate. It was begun again, its ledger
-- set to zero (the budget it spent given back by the crash) and the
-- caller's instance made its live one, so that no recovery claimed it and
-- its finished writes were never undone.
CREATE OR REPLACE FUNCTION ` + reachJoinHead + reachJoinForeign + reachJoinEnded + reachJoinOrphan + reachJoinRest + `
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{9, "the owners of Responses API answers", `
-- Who each Responses API answer the model proxy passed on belongs to
-- (store.ResponseOwners), by its id's SHA-256, so that another principal's
-- turn naming it is refused on every instance, and the endpoint that gave
-- it, which alone keeps its history; a record lives until it
-- expires, and each write deletes those that did.
CREATE TABLE response_owners (
	hash      TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	endpoint  TEXT NOT NULL DEFAULT '',
	created   BIGINT NOT NULL,
	expires   BIGINT NOT NULL
);
CREATE INDEX response_owners_expires ON response_owners (expires);
`})
}

func init() {
	pgMigrations = append(pgMigrations, migration{10, "entity claims of several instances", `
-- A write claims the entities it writes (store.Entities.ClaimEntities):
-- one new version from the counter, whose row stays locked until the
-- transaction commits, so that claims take turns; then each entity is
-- given it, one with p_check only if it is still at its p_from (0: it has
-- no row), so that two instances never both write on one read of it.
-- Each statement of the function sees what committed before it.
CREATE FUNCTION reach_claim_entities(p_names TEXT[], p_from BIGINT[], p_check BOOLEAN[])
RETURNS TABLE (o_version BIGINT, o_stale TEXT[])
LANGUAGE plpgsql AS $$
DECLARE
	v BIGINT;
	s TEXT[] := '{}';
	n BIGINT;
BEGIN
	UPDATE store_meta SET value = value + 1 WHERE key = 'entity_version' RETURNING value INTO v;
	FOR i IN 1 .. coalesce(array_length(p_names, 1), 0) LOOP
		IF NOT p_check[i] THEN
			INSERT INTO entities (name, version) VALUES (p_names[i], v)
				ON CONFLICT (name) DO UPDATE SET version = excluded.version;
			CONTINUE;
		ELSIF p_from[i] = 0 THEN
			INSERT INTO entities (name, version) VALUES (p_names[i], v) ON CONFLICT (name) DO NOTHING;
		ELSE
			UPDATE entities SET version = v WHERE name = p_names[i] AND entities.version = p_from[i];
		END IF;
		GET DIAGNOSTICS n = ROW_COUNT;
		IF n = 0 THEN
			s := s || p_names[i];
		END IF;
	END LOOP;
	RETURN QUERY SELECT v, s;
END $$;
`})
}

// migration is one step of the schema.
type migration struct {
	version int
	name    string
	sql     string
}

// reach_join as schema 2 created it, and what schema 4 adds to it (see
// there): the head, up to the lock of the request's row, then the rest.
const (
	reachJoinHead = `reach_join(p_id TEXT, p_owner TEXT, p_ttl BIGINT, p_parent TEXT, p_principal TEXT, p_tenant TEXT,
	p_roles TEXT, p_attrs TEXT, p_trace TEXT, p_scene TEXT, p_agent TEXT, p_budget TEXT, p_started BIGINT)
RETURNS TABLE (o_outcome TEXT, o_principal TEXT, o_tenant TEXT, o_roles TEXT, o_attrs TEXT, o_trace TEXT, o_scene TEXT,
	o_agent TEXT, o_state TEXT, o_budget TEXT, o_cause TEXT, o_started BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
	r requests%ROWTYPE;
BEGIN
	PERFORM reach_lock_ledgers(ARRAY[p_id]);
	SELECT * INTO r FROM requests WHERE id = p_id FOR UPDATE;
`
	reachJoinForeign = `	IF FOUND AND (r.principal <> p_principal OR r.tenant <> p_tenant) THEN
		RETURN QUERY SELECT 'foreign', r.principal, r.tenant, NULL::TEXT, NULL::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, ''::TEXT,
			NULL::TEXT, NULL::TEXT, 0::BIGINT;
		RETURN;
	END IF;
`
	reachJoinEnded = `	IF FOUND AND r.state = 'running' AND r.settled <> 0 AND r.settled = r.started
		AND EXISTS (SELECT 1 FROM replicas x JOIN instances i ON i.owner = x.owner WHERE x.request = p_id AND i.seen >= reach_now() - p_ttl) THEN
		RETURN QUERY SELECT 'ended', r.principal, r.tenant, NULL::TEXT, NULL::TEXT, ''::TEXT, ''::TEXT, ''::TEXT, r.state,
			NULL::TEXT, NULL::TEXT, r.started;
		RETURN;
	END IF;
`
	reachJoinOrphan = `	IF FOUND AND r.state = 'running' AND NOT (r.settled <> 0 AND r.settled = r.started)
		AND EXISTS (SELECT 1 FROM replicas x WHERE x.request = p_id)
		AND NOT EXISTS (SELECT 1 FROM replicas x JOIN instances i ON i.owner = x.owner WHERE x.request = p_id AND i.seen >= reach_now() - p_ttl) THEN
		RETURN QUERY SELECT 'final', r.principal, r.tenant, r.roles, r.attributes, r.trace, r.scene, r.agent, 'interrupted'::TEXT, r.budget,
			json_build_object('by', 'reach', 'reason', 'every gateway instance that ran it stopped; its recovery undoes its writes',
				'request', p_id)::TEXT, r.started;
		RETURN;
	END IF;
`
	reachJoinRest = `	IF FOUND AND (r.state = 'interrupted' OR r.state = 'stopped' OR r.stop > 0) THEN
		RETURN QUERY SELECT 'final', r.principal, r.tenant, r.roles, r.attributes, r.trace, r.scene, r.agent, r.state, r.budget,
			r.cause, r.started;
		RETURN;
	END IF;
	IF FOUND AND r.state = 'running' AND EXISTS (SELECT 1 FROM replicas x JOIN instances i ON i.owner = x.owner
		WHERE x.request = p_id AND i.seen >= reach_now() - p_ttl) THEN
		INSERT INTO replicas (request, owner) VALUES (p_id, p_owner) ON CONFLICT DO NOTHING;
		RETURN QUERY SELECT 'joined', r.principal, r.tenant, r.roles, r.attributes, r.trace, r.scene, r.agent, r.state, r.budget,
			r.cause, r.started;
		RETURN;
	END IF;
	INSERT INTO requests (id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, started, updated)
	VALUES (p_id, p_parent, p_principal, p_tenant, p_roles, p_attrs, p_trace, p_scene, p_agent, 'running', p_budget, p_started, p_started)
	ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, principal = excluded.principal, tenant = excluded.tenant,
		roles = excluded.roles, attributes = excluded.attributes, trace = excluded.trace, scene = excluded.scene, agent = excluded.agent,
		state = 'running', budget = excluded.budget, usage = NULL, cause = NULL, started = excluded.started, ended = 0,
		updated = excluded.updated, stop = 0;
	UPDATE ledger SET turns = 0, tool_calls = 0, tokens = 0, cost = 0 WHERE request = p_id;
	DELETE FROM replicas WHERE request = p_id;
	INSERT INTO replicas (request, owner) VALUES (p_id, p_owner);
	RETURN QUERY SELECT 'begun', p_principal, p_tenant, p_roles, p_attrs, p_trace, p_scene, p_agent, 'running'::TEXT, p_budget,
		NULL::TEXT, p_started;
END $$;`
)

// reach_admit as schema 2 created it, up to its debit (head) and after
// it (tail): schema 17 replaces the debit.
const (
	reachAdmitHead = `reach_admit(p_ids TEXT[], d_turns BIGINT, d_calls BIGINT, d_tokens BIGINT, d_cost BIGINT,
	c_turns BIGINT[], c_calls BIGINT[], c_tokens BIGINT[], c_cost BIGINT[])
RETURNS TABLE (o_ok BOOLEAN, o_over INTEGER, o_dim TEXT, o_turns BIGINT, o_calls BIGINT, o_tokens BIGINT, o_cost BIGINT,
	o_stopped TEXT, o_state TEXT, o_cause TEXT)
LANGUAGE plpgsql AS $$
DECLARE
	l ledger%ROWTYPE;
	dim TEXT;
BEGIN
	PERFORM reach_lock_ledgers(p_ids);
	RETURN QUERY SELECT false, 0, ''::TEXT, 0::BIGINT, 0::BIGINT, 0::BIGINT, 0::BIGINT, r.id, r.state, r.cause
		FROM requests r WHERE r.id = ANY(p_ids) AND (r.stop > 0 OR r.state IN ('stopped', 'interrupted'))
		ORDER BY array_position(p_ids, r.id) LIMIT 1;
	IF FOUND THEN
		RETURN;
	END IF;
	FOR i IN 1 .. array_length(p_ids, 1) LOOP
		SELECT * INTO l FROM ledger WHERE request = p_ids[i];
		dim := CASE
			WHEN c_calls[i] > 0 AND l.tool_calls + d_calls > c_calls[i] THEN 'tool_calls'
			WHEN c_turns[i] > 0 AND l.turns + d_turns > c_turns[i] THEN 'turns'
			WHEN c_tokens[i] > 0 AND l.tokens + d_tokens > c_tokens[i] THEN 'tokens'
			WHEN c_cost[i] > 0 AND l.cost + d_cost > c_cost[i] THEN 'cost'
			ELSE '' END;
		IF dim <> '' THEN
			RETURN QUERY SELECT false, i, dim, l.turns, l.tool_calls, l.tokens, l.cost, ''::TEXT, ''::TEXT, NULL::TEXT;
			RETURN;
		END IF;
	END LOOP;
`
	reachAdmitTail = `	RETURN QUERY SELECT true, 0, ''::TEXT, x.turns, x.tool_calls, x.tokens, x.cost, ''::TEXT, ''::TEXT, NULL::TEXT
		FROM ledger x WHERE x.request = p_ids[1];
END $$;`
)
