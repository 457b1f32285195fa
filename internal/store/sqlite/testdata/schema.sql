-- table approvals on approvals
CREATE TABLE approvals (
	id      TEXT PRIMARY KEY,
	key     TEXT NOT NULL, -- the call it approves, across retries
	status  TEXT NOT NULL,
	version INTEGER NOT NULL,
	created INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	data    TEXT NOT NULL
, alt TEXT NOT NULL DEFAULT '');
-- index approvals_alt on approvals
CREATE INDEX approvals_alt ON approvals (alt, created DESC) WHERE alt != '';
-- index approvals_created on approvals
CREATE INDEX approvals_created ON approvals (created DESC);
-- index approvals_key on approvals
CREATE INDEX approvals_key ON approvals (key, created DESC);
-- index approvals_live on approvals
CREATE INDEX approvals_live ON approvals (status) WHERE status IN ('pending', 'approved');
-- index approvals_unaudited on approvals
CREATE INDEX approvals_unaudited ON approvals (created DESC, id DESC) WHERE data LIKE '%"unaudited":true%';
-- table audit on audit
CREATE TABLE audit (
	seq       INTEGER PRIMARY KEY,
	time      INTEGER NOT NULL,
	request   TEXT NOT NULL,
	event     TEXT NOT NULL, -- JSON, written by the package audit
	prev_hash BLOB NOT NULL,
	hash      BLOB NOT NULL
);
-- table audit_meta on audit_meta
CREATE TABLE audit_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
-- trigger audit_no_delete on audit
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
-- trigger audit_no_update on audit
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
-- table audit_once on audit_once
CREATE TABLE audit_once (
	once TEXT PRIMARY KEY,
	seq  INTEGER NOT NULL
) WITHOUT ROWID;
-- table audit_passes on audit_passes
CREATE TABLE audit_passes (
	pass INTEGER PRIMARY KEY, -- the first seq the pass covers
	last INTEGER NOT NULL     -- the last
);
-- table audit_requests on audit_requests
CREATE TABLE audit_requests (
	pass    INTEGER NOT NULL,
	request TEXT NOT NULL,
	seqs    BLOB NOT NULL, -- ascending seqs as uvarint deltas from pass-1
	PRIMARY KEY (pass, request)
) WITHOUT ROWID;
-- index audit_tenant on audit
CREATE INDEX audit_tenant ON audit ((CASE WHEN json_valid(event) THEN event ->> 'tenant' END), seq)
	WHERE (CASE WHEN json_valid(event) THEN event ->> 'tenant' END) IS NOT NULL;
-- table checkpoints on checkpoints
CREATE TABLE checkpoints (
	seq  INTEGER PRIMARY KEY,
	hash BLOB NOT NULL,
	time INTEGER NOT NULL
);
-- table cut_offs on cut_offs
CREATE TABLE cut_offs (
	key      TEXT PRIMARY KEY,
	tool     TEXT NOT NULL,
	root     TEXT NOT NULL DEFAULT '',
	request  TEXT NOT NULL,
	call_id  TEXT NOT NULL,
	began    INTEGER NOT NULL DEFAULT 0,
	at       INTEGER NOT NULL,
	restart  INTEGER NOT NULL DEFAULT 0,
	stopped  TEXT NOT NULL DEFAULT '',
	expires  INTEGER NOT NULL
) WITHOUT ROWID;
-- index cut_offs_expires on cut_offs
CREATE INDEX cut_offs_expires ON cut_offs (expires);
-- table dead_letters on dead_letters
CREATE TABLE dead_letters (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	request  TEXT NOT NULL DEFAULT '',
	frame    TEXT NOT NULL DEFAULT '',
	tool     TEXT NOT NULL DEFAULT '',
	args     TEXT,
	error    TEXT NOT NULL DEFAULT '',
	attempts INTEGER NOT NULL DEFAULT 0,
	state    TEXT NOT NULL,
	note     TEXT NOT NULL DEFAULT '',
	created  INTEGER NOT NULL,
	updated  INTEGER NOT NULL
, taker TEXT NOT NULL DEFAULT '', taken INTEGER NOT NULL DEFAULT 0, principal TEXT NOT NULL DEFAULT '', tenant TEXT NOT NULL DEFAULT '');
-- index dead_letters_state on dead_letters
CREATE INDEX dead_letters_state ON dead_letters (state, id);
-- table entities on entities
CREATE TABLE entities (
	name    TEXT PRIMARY KEY,
	version INTEGER NOT NULL
) WITHOUT ROWID;
-- table frames on frames
CREATE TABLE "frames" (
	seq      INTEGER PRIMARY KEY,
	request  TEXT NOT NULL,
	frame    TEXT NOT NULL,
	parent   TEXT NOT NULL DEFAULT '',
	kind     TEXT NOT NULL DEFAULT '',
	name     TEXT NOT NULL DEFAULT '',
	call_id  TEXT NOT NULL DEFAULT '',
	idem_key TEXT NOT NULL DEFAULT '',
	state    TEXT NOT NULL,
	args     TEXT,
	undo     TEXT,
	error    TEXT,
	started  INTEGER NOT NULL,
	updated  INTEGER NOT NULL,
	origin   INTEGER,
	listed   INTEGER NOT NULL DEFAULT 0,
	UNIQUE (frame, request)
);
-- table frames_held on frames_held
CREATE TABLE frames_held (
	frame INTEGER PRIMARY KEY -- the rowid of a frame of frames
);
-- index frames_request on frames
CREATE INDEX frames_request ON frames (request) WHERE listed;
-- table handed_tasks on handed_tasks
CREATE TABLE "handed_tasks" (
	digest    TEXT NOT NULL,
	request   TEXT NOT NULL,
	nth       INTEGER NOT NULL DEFAULT 0,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	frame     TEXT NOT NULL DEFAULT '',
	tool      TEXT NOT NULL DEFAULT '',
	stack     BLOB,
	created   INTEGER NOT NULL,
	expires   INTEGER NOT NULL,
	used      INTEGER NOT NULL DEFAULT 0,
	sub       TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (digest, request, nth)
) WITHOUT ROWID;
-- index handed_tasks_expires on handed_tasks
CREATE INDEX handed_tasks_expires ON handed_tasks (expires);
-- index handed_tasks_frame on handed_tasks
CREATE INDEX handed_tasks_frame ON handed_tasks (request, frame);
-- index handed_tasks_principal on handed_tasks
CREATE INDEX handed_tasks_principal ON handed_tasks (principal, tenant, created);
-- table idempotency on idempotency
CREATE TABLE "idempotency" (
	seq     INTEGER PRIMARY KEY,
	key     TEXT NOT NULL,
	owner   TEXT NOT NULL,
	state   TEXT NOT NULL,
	result  BLOB,
	claimed INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	args    TEXT NOT NULL DEFAULT '',
	request TEXT NOT NULL DEFAULT '',
	frame   TEXT NOT NULL DEFAULT ''
, room BLOB);
-- table idempotency_held on idempotency_held
CREATE TABLE idempotency_held (
	claim INTEGER PRIMARY KEY -- the rowid of a record of idempotency
);
-- index idempotency_key on idempotency
CREATE UNIQUE INDEX idempotency_key ON idempotency (key);
-- table ledger on ledger
CREATE TABLE ledger (
	request    TEXT PRIMARY KEY,
	turns      INTEGER NOT NULL DEFAULT 0,
	tool_calls INTEGER NOT NULL DEFAULT 0,
	tokens     INTEGER NOT NULL DEFAULT 0,
	cost       INTEGER NOT NULL DEFAULT 0 -- billionths of the price unit
, refused INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
-- table pins on pins
CREATE TABLE pins (
	tool    TEXT PRIMARY KEY,
	data    TEXT NOT NULL,
	updated INTEGER NOT NULL
) WITHOUT ROWID;
-- table requests on requests
CREATE TABLE requests (
	id        TEXT PRIMARY KEY,
	parent    TEXT NOT NULL DEFAULT '',
	principal TEXT NOT NULL DEFAULT '',
	scene     TEXT NOT NULL DEFAULT '',
	agent     TEXT NOT NULL DEFAULT '',
	state     TEXT NOT NULL,
	budget    TEXT,
	usage     TEXT,
	cause     TEXT,
	started   INTEGER NOT NULL,
	ended     INTEGER NOT NULL DEFAULT 0,
	updated   INTEGER NOT NULL
, tenant TEXT NOT NULL DEFAULT '', roles TEXT, attributes TEXT, trace TEXT NOT NULL DEFAULT '');
-- index requests_parent on requests
CREATE INDEX requests_parent ON requests (parent, started DESC) WHERE parent != '';
-- index requests_started on requests
CREATE INDEX requests_started ON requests (started DESC, id DESC);
-- index requests_state on requests
CREATE INDEX requests_state ON requests (state, started DESC);
-- table response_owners on response_owners
CREATE TABLE response_owners (
	hash      TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	endpoint  TEXT NOT NULL DEFAULT '',
	created   INTEGER NOT NULL,
	expires   INTEGER NOT NULL
) WITHOUT ROWID;
-- index response_owners_expires on response_owners
CREATE INDEX response_owners_expires ON response_owners (expires);
-- table schema_migrations on schema_migrations
CREATE TABLE schema_migrations (
	version INTEGER PRIMARY KEY,
	name    TEXT NOT NULL,
	applied INTEGER NOT NULL
);
-- table sessions on sessions
CREATE TABLE sessions (
	hash      TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	protocol  TEXT NOT NULL DEFAULT '',
	init      TEXT NOT NULL,
	request   TEXT NOT NULL DEFAULT '',
	created   INTEGER NOT NULL,
	used      INTEGER NOT NULL
) WITHOUT ROWID;
-- index sessions_used on sessions
CREATE INDEX sessions_used ON sessions (used);
-- index sqlite_autoindex_approvals_1 on approvals
-- index sqlite_autoindex_audit_meta_1 on audit_meta
-- index sqlite_autoindex_frames_1 on frames
-- index sqlite_autoindex_requests_1 on requests
-- index sqlite_autoindex_store_meta_1 on store_meta
-- table sqlite_sequence on sqlite_sequence
CREATE TABLE sqlite_sequence(name,seq);
-- table store_meta on store_meta
CREATE TABLE store_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
-- table tasks on tasks
CREATE TABLE tasks (
	agent     TEXT NOT NULL,
	id        TEXT NOT NULL,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	request   TEXT NOT NULL DEFAULT '',
	state     TEXT NOT NULL,
	final     INTEGER NOT NULL DEFAULT 0,
	data      TEXT NOT NULL,
	created   INTEGER NOT NULL,
	updated   INTEGER NOT NULL,
	PRIMARY KEY (agent, id)
) WITHOUT ROWID;
-- index tasks_created on tasks
CREATE INDEX tasks_created ON tasks (created);
-- index tasks_owner on tasks
CREATE INDEX tasks_owner ON tasks (agent, principal, tenant, created DESC);
-- index tasks_request on tasks
CREATE INDEX tasks_request ON tasks (request);
-- store_meta claims_settled
-- store_meta entity_version
-- store_meta frames_settled
-- store_meta keys_sweep_from
-- store_meta keys_sweep_to
-- store_meta pins_version
-- store_meta result_room
