package sqlite

// migration is one step of the SQLite schema. Steps are applied in order,
// each in its own transaction together with its row in schema_migrations.
// Never edit a released step: add a new one.
type migration struct {
	version int
	name    string
	sql     string
}

var migrations = []migration{
	{1, "initial schema", `
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
);
CREATE INDEX requests_started ON requests (started DESC, id DESC);
CREATE INDEX requests_state ON requests (state, started DESC);

CREATE TABLE frames (
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
	UNIQUE (request, frame)
);
CREATE INDEX frames_open ON frames (started)
	WHERE state NOT IN ('completed', 'failed', 'refused', 'cancelled');

CREATE TABLE idempotency (
	key     TEXT PRIMARY KEY,
	owner   TEXT NOT NULL,
	state   TEXT NOT NULL,
	result  BLOB,
	claimed INTEGER NOT NULL,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX idempotency_expires ON idempotency (expires) WHERE expires != 0;

CREATE TABLE audit (
	seq       INTEGER PRIMARY KEY,
	time      INTEGER NOT NULL,
	request   TEXT NOT NULL,
	event     TEXT NOT NULL, -- JSON, written by the package audit
	prev_hash BLOB NOT NULL,
	hash      BLOB NOT NULL
);
-- Where a request's events are: filled in passes over the records after
-- audit_meta 'indexed' (see SQLite.indexAudit). A pass adds one row per
-- request it saw, with the seqs as a blob, keyed by the pass so that a pass
-- writes at the end of the tree; records after 'indexed' are found by
-- scanning. An index on audit(request) would dirty a page per request per
-- commit.
CREATE TABLE audit_passes (
	pass INTEGER PRIMARY KEY, -- the first seq the pass covers
	last INTEGER NOT NULL     -- the last
);
CREATE TABLE audit_requests (
	pass    INTEGER NOT NULL,
	request TEXT NOT NULL,
	seqs    BLOB NOT NULL, -- ascending seqs as uvarint deltas from pass-1
	PRIMARY KEY (pass, request)
) WITHOUT ROWID;
CREATE TABLE audit_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
INSERT INTO audit_meta (key, value) VALUES ('indexed', 0);
-- Append-only: the application never updates or deletes audit rows. The
-- triggers stop accidents; the hash chain catches everything else.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;

CREATE TABLE checkpoints (
	seq  INTEGER PRIMARY KEY,
	hash BLOB NOT NULL,
	time INTEGER NOT NULL
);

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
);
CREATE INDEX dead_letters_state ON dead_letters (state, id);
`},
	{2, "request identity, trace, sub-requests", `
-- Who a request acts for and its trace, so that a restarted gateway
-- compensates an interrupted request as its principal (in its tenant, with
-- its roles and attributes) and in its trace.
ALTER TABLE requests ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN roles TEXT;      -- JSON array
ALTER TABLE requests ADD COLUMN attributes TEXT; -- JSON object
ALTER TABLE requests ADD COLUMN trace TEXT NOT NULL DEFAULT '';
-- A request's sub-requests (RequestFilter.Parent).
CREATE INDEX requests_parent ON requests (parent, started DESC) WHERE parent != '';
`},
	{3, "idempotency claims name their call", `
-- What a claim was made for: the call's arguments (a digest), so that a key
-- reused for other arguments is refused, and the call's checkpoint
-- (request, frame), so that a claim left by a crash is settled by what the
-- checkpoint says: released if the call never started, answered with
-- "may have run" (or "completed") if it did.
ALTER TABLE idempotency ADD COLUMN args TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency ADD COLUMN request TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency ADD COLUMN frame TEXT NOT NULL DEFAULT '';
-- The claims, for recovery: only the calls in flight, so it stays small.
-- A claim's lease (expires) is not in the index of expiring results: only
-- results are swept, and a claim's lease is read with its record.
CREATE INDEX idempotency_claims ON idempotency (claimed) WHERE state = 'claimed';
DROP INDEX idempotency_expires;
CREATE INDEX idempotency_expires ON idempotency (expires) WHERE state = 'done';
`},
	{4, "approvals, budget ledgers, entity versions, pins", `
-- Approvals (package approval): a pending one survives a restart with its
-- votes and expiry, and a decided one answers the retries of its call.
-- data is the approval as package approval writes it; version is the
-- number of its last write, which the next one compares (two writers never
-- lose each other's vote).
CREATE TABLE approvals (
	id      TEXT PRIMARY KEY,
	key     TEXT NOT NULL, -- the call it approves, across retries
	status  TEXT NOT NULL,
	version INTEGER NOT NULL,
	created INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	data    TEXT NOT NULL
);
CREATE INDEX approvals_created ON approvals (created DESC);
CREATE INDEX approvals_live ON approvals (status) WHERE status IN ('pending', 'approved');

-- What each request has spent, debited with one conditional update, so
-- that writers that share the store never pass a budget together.
CREATE TABLE ledger (
	request    TEXT PRIMARY KEY,
	turns      INTEGER NOT NULL DEFAULT 0,
	tool_calls INTEGER NOT NULL DEFAULT 0,
	tokens     INTEGER NOT NULL DEFAULT 0,
	cost       INTEGER NOT NULL DEFAULT 0 -- billionths of the price unit
) WITHOUT ROWID;

-- Entity versions (S3): one counter for all entities, as in the runtime.
CREATE TABLE entities (
	name    TEXT PRIMARY KEY,
	version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE store_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('entity_version', 0);

-- Pinned tool definitions (P7; package pin writes data). pins_version
-- moves on with every write, so that a reader (a gateway while
-- reach tools approve writes) reads them again only when they changed.
CREATE TABLE pins (
	tool    TEXT PRIMARY KEY,
	data    TEXT NOT NULL,
	updated INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO store_meta (key, value) VALUES ('pins_version', 0);
`},
	{5, "approvals found by either key of their call", `
-- The other key of the call an approval approves (its caller's idempotency
-- key), so that an instance finds by either key an approval another one
-- asked (ApprovalFilter.Keys).
ALTER TABLE approvals ADD COLUMN alt TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_key ON approvals (key, created DESC);
CREATE INDEX approvals_alt ON approvals (alt, created DESC) WHERE alt != '';
`},
	{6, "A2A tasks", `
-- The A2A tasks of the agents reach serves (internal/a2a): a final one
-- keeps its state, whoever writes later.
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
CREATE INDEX tasks_owner ON tasks (agent, principal, tenant, created DESC);
`},
	{7, "frames and idempotency records by seq, the open ones found from marks", `
-- Fewer pages written to the WAL by each write call (docs/BENCHMARKS.md).
--
-- The open frames (not yet final) and the claims (records in state
-- 'claimed'), which a restart settles, are found without the partial
-- indexes frames_open and idempotency_claims, which every call's
-- checkpoint and claim entered and its end left (each a page written by
-- every commit): every row whose rowid is at most its table's mark in
-- store_meta ('frames_settled', 'claims_settled') is settled, except those
-- its held list (frames_held, idempotency_held) names. The writer moves
-- the marks now and then (Store.settleMarks): the rows above a mark still
-- open are held, and the mark goes to the last row.
INSERT INTO store_meta (key, value) VALUES ('frames_settled', 0), ('claims_settled', 0);
CREATE TABLE frames_held (
	frame INTEGER PRIMARY KEY -- the rowid of a frame of frames
);
CREATE TABLE idempotency_held (
	claim INTEGER PRIMARY KEY -- the rowid of a record of idempotency
);
-- The marks and held lists name rows by their rowid, which SQLite keeps
-- only for a table whose INTEGER PRIMARY KEY it is: VACUUM "may change"
-- the others, and sqlite3's .dump writes none of them, so a restore would
-- number the rows again and the marks point at other rows. So each table
-- is copied once, with its rowid as a column (seq), an alias of it that
-- costs no space: the frames at the rowids they had, the records in the
-- order they were claimed.
--
-- idempotency becomes a rowid table thereby, with the key in an index of
-- its own: a claim appends its row at the end of the table, where the
-- claims of the calls just before it are, and its completion (the result)
-- rewrites the row there. Keyed by the key (WITHOUT ROWID), a claim and, a
-- commit later, its completion each dirtied a page at a random place of
-- the table, with the row's whole width.
CREATE TABLE frames_rows (
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
	UNIQUE (request, frame)
);
INSERT INTO frames_rows (seq, request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated)
	SELECT rowid, request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated FROM frames ORDER BY rowid;
DROP TABLE frames; -- and frames_open with it
ALTER TABLE frames_rows RENAME TO frames;
CREATE TABLE idempotency_rows (
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
);
INSERT INTO idempotency_rows (key, owner, state, result, claimed, expires, args, request, frame)
	SELECT key, owner, state, result, claimed, expires, args, request, frame FROM idempotency ORDER BY claimed, key;
DROP TABLE idempotency; -- and idempotency_claims with it
ALTER TABLE idempotency_rows RENAME TO idempotency;
CREATE UNIQUE INDEX idempotency_key ON idempotency (key);
CREATE INDEX idempotency_expires ON idempotency (expires) WHERE state = 'done';
`},
	{8, "frames keep their place among their peers when put open again", `
-- Frames are listed by their start, then in the order they were first
-- written (store.Frames). A frame put open again moves to the end of the
-- table (a new seq: where the open frames are looked for, frames.go), so
-- it keeps its first place in origin: the seq it was first written at, or
-- NULL for its own seq. Adding a column rewrites no row: the frames of an
-- upgraded store keep the places they had (one put open again before keeps
-- its later one).
ALTER TABLE frames ADD COLUMN origin INTEGER;
`},
	{9, "MCP sessions", `
-- The MCP sessions the gateway's clients opened (store.Sessions), by their
-- id's SHA-256, so that a restart takes one over when its client comes
-- back with its id; a record lives until its session ends.
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
CREATE INDEX sessions_used ON sessions (used);
`},
	{10, "the owners of Responses API answers", `
-- Who each Responses API answer the model proxy passed on belongs to
-- (store.ResponseOwners), by its id's SHA-256, so that another principal's
-- turn naming it is refused after a restart too, and the endpoint that
-- gave it, which alone keeps its history; a record lives until it
-- expires, and each write deletes those that did.
CREATE TABLE response_owners (
	hash      TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	endpoint  TEXT NOT NULL DEFAULT '',
	created   INTEGER NOT NULL,
	expires   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX response_owners_expires ON response_owners (expires);
`},
	{11, "expired results found without an index", `
-- A page fewer written by each write call's commit one at a time
-- (docs/BENCHMARKS.md): the index of the results by expiry, which every
-- call's result entered, goes. The sweep after every 1,024th completion
-- looks at the next records of a pass over them all instead, in rowid
-- order, from where the sweep before stopped ('keys_sweep_from' to
-- 'keys_sweep_to'; writer.go, stKeysSweepTo). SweepKeys, which deletes
-- every expired result at once, reads the whole table.
DROP INDEX idempotency_expires;
INSERT INTO store_meta (key, value) VALUES ('keys_sweep_from', 0), ('keys_sweep_to', 0);
`},
	{12, "the retention sweep finds final tasks by their age", `
-- The retention sweep (sqlcore/retention.go) removes the final tasks
-- oldest first: the index tasks_owner leads with the agent. A task is
-- written at each change of its state, not by the calls of tools.
CREATE INDEX tasks_created ON tasks (created);
`},
	{13, "the retention sweep keeps the requests of tasks not final", `
-- The retention sweep (sqlcore/retention.go) keeps an ended request that
-- an A2A task not yet final names: the index finds such tasks by their
-- request, for each request a batch removes.
CREATE INDEX tasks_request ON tasks (request);
`},
	{14, "who took a dead letter", `
-- The life that took a dead letter (store.DeadLetter.Taker) and the
-- updated its take wrote: the taker holds only while no later write
-- changed the row. One process owns a folder, so its restart gives back
-- every dead letter taken, whoever took it; the columns are those of
-- the PostgreSQL schema, which shares the statements.
ALTER TABLE dead_letters ADD COLUMN taker TEXT NOT NULL DEFAULT '';
ALTER TABLE dead_letters ADD COLUMN taken INTEGER NOT NULL DEFAULT 0;
`},
	{15, "writes cut off before their answer was delivered", `
-- The writes cut off before their answer was delivered (reach.CutOffStore),
-- by the digest of their owner, tool and arguments, until they expire: a
-- restart's next life catches their retries. The columns are those of the
-- PostgreSQL schema, which shares the statements.
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
CREATE INDEX cut_offs_expires ON cut_offs (expires);
`},
	{16, "refusals in a row", `
-- The count of a request's refusals in a row (store.Refusals), kept in its
-- ledger's row: the next life of a restarted gateway counts on from it.
ALTER TABLE ledger ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;
`},
	{17, "a claim keeps room for its result", `
-- A page or two fewer written by each commit of a batch of write calls
-- (docs/BENCHMARKS.md): a claim is appended to a page that it and the
-- claims before it fill, and its completion, a commit later, made its row
-- longer by the result: the page overflowed, and SQLite spread its rows
-- over it and its neighbours, writing them all. A claim now keeps room
-- (zeroes) as long as the results recorded lately (the ninth decile,
-- 'result_room', which the writer sets now and then: writer.go,
-- stResultRoom), and its completion writes its result in place of the
-- room. Adding a column rewrites no row: a record written before has no
-- room (NULL) and reads as it did.
ALTER TABLE idempotency ADD COLUMN room BLOB;
INSERT INTO store_meta (key, value) VALUES ('result_room', 0);
`},
	{18, "the audit log's events found by their tenant", `
-- A tenant's operator's page of the audit log (GET /v1/audit, the UI's
-- audit page) reads its tenant's newest events from this index, however
-- many of other tenants' came after them, instead of reading back through
-- theirs. Partial: an event of no tenant (its JSON has no "tenant") has no
-- entry, so a gateway without tenants writes no more than before; one
-- with tenants appends each commit's events at the end of their tenants'
-- ranges (seq grows), a page or so per tenant a commit.
-- An event that is not JSON (damage: the views show it unreadable) has no
-- entry either: ->> alone would fail on it, and with it this migration and
-- every later write of such a row (auditField writes the same expression).
CREATE INDEX audit_tenant ON audit ((CASE WHEN json_valid(event) THEN event ->> 'tenant' END), seq)
	WHERE (CASE WHEN json_valid(event) THEN event ->> 'tenant' END) IS NOT NULL;
`},
	{19, "a dead letter keeps its owner", `
-- The owner of the root of the request whose undo failed (principal and
-- tenant), kept with its dead letter when it is added: a tenant's
-- operator sees and acts on the dead letters of its tenant by them, after
-- the request is gone too (retention keeps a settled dead letter longer
-- than its request, and a later request of another tenant may take its
-- id). A dead letter added before has neither (''): it is scoped by its
-- request, as before, if that began before it. The columns are those of
-- the PostgreSQL schema, which shares the statements.
ALTER TABLE dead_letters ADD COLUMN principal TEXT NOT NULL DEFAULT '';
ALTER TABLE dead_letters ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
`},
	{20, "a call's checkpoint enters no index of its request", `
-- The index that kept frames unique, (request, frame), was entered by
-- every call's "executing" checkpoint where its request's frames are: in
-- a served session (a request all its calls share) each call of a commit
-- wrote a leaf of its own, half the pages a write call wrote to the WAL
-- under load (docs/BENCHMARKS.md). Frame ids are made in time order, so
-- keyed (frame, request) the checkpoints of a commit are appended to the
-- same leaf or two. A request's frames are found by an index of their
-- request that only the listed frames enter (listed, set with the mark of
-- the settled frames: frames.go), and the frames above the mark, read in
-- rowid order. Every frame kept is listed. The table is copied once: a
-- UNIQUE constraint is part of its table's definition.
CREATE TABLE frames_rows (
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
INSERT INTO frames_rows (seq, request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, origin, listed)
	SELECT seq, request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, origin, 1 FROM frames ORDER BY seq;
DROP TABLE frames;
ALTER TABLE frames_rows RENAME TO frames;
CREATE INDEX frames_request ON frames (request) WHERE listed;
`},
	{21, "the tasks model turns handed", `
-- The tool calls model turns chose, by the digest of each string they were
-- given (store.HandedTasks), so that a sub-agent the agent runs in its own
-- process, given one as its task, finds the turn that handed it on any
-- instance: the digest's principal and tenant, never the task. A record
-- lives until it expires, a principal keeps a bounded number, and each
-- write deletes those expired and those past the bound.
CREATE TABLE handed_tasks (
	digest    TEXT NOT NULL,
	request   TEXT NOT NULL,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	frame     TEXT NOT NULL DEFAULT '',
	tool      TEXT NOT NULL DEFAULT '',
	stack     BLOB,
	created   INTEGER NOT NULL,
	expires   INTEGER NOT NULL,
	PRIMARY KEY (digest, request)
) WITHOUT ROWID;
CREATE INDEX handed_tasks_principal ON handed_tasks (principal, tenant, created);
CREATE INDEX handed_tasks_expires ON handed_tasks (expires);
`},
	{22, "the tasks model turns handed: used, and the sub-request begun", `
-- A handed task's record says whether a sub-agent given the task has
-- joined it (used, store.HandedTasks.ClaimHandedTask) and the sub-request
-- begun from it (sub), for every instance alike: a later sub-agent given
-- the same task joins that sub-request, or is refused a guess, as on one
-- instance, and the turn's conversation going on ends it wherever it runs.
ALTER TABLE handed_tasks ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
ALTER TABLE handed_tasks ADD COLUMN sub TEXT NOT NULL DEFAULT '';
CREATE INDEX handed_tasks_frame ON handed_tasks (request, frame);
`},
	{23, "the tasks model turns handed: one record a call", `
-- A turn that hands one task in several calls (two sub-agents asked the
-- same thing at once) keeps a record of each (nth: the calls of the turn
-- that handed it before), so that each sub-agent given it begins a
-- sub-request of its own, on any instance, as on one.
CREATE TABLE handed_tasks_nth (
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
INSERT INTO handed_tasks_nth (digest, request, nth, principal, tenant, frame, tool, stack, created, expires, used, sub)
	SELECT digest, request, 0, principal, tenant, frame, tool, stack, created, expires, used, sub FROM handed_tasks;
DROP TABLE handed_tasks;
ALTER TABLE handed_tasks_nth RENAME TO handed_tasks;
CREATE INDEX handed_tasks_principal ON handed_tasks (principal, tenant, created);
CREATE INDEX handed_tasks_expires ON handed_tasks (expires);
CREATE INDEX handed_tasks_frame ON handed_tasks (request, frame);
`},
	{24, "the approvals whose last action is not audited yet, indexed; the audit events that happen once, keyed", `
-- An approval whose last action is stored and not yet audited carries a
-- mark in its data (package approval); a restart reads the marked rows
-- however old. This index holds those rows only (its predicate is the
-- query's condition, word for word): before, the table was read through.
CREATE INDEX approvals_unaudited ON approvals (created DESC, id DESC) WHERE data LIKE '%"unaudited":true%';

-- The keys of the audit events that happen once whoever records them (an
-- approval's action): the log's writer looks its records' keys up before
-- it chains them and appends none whose key is here; the key refuses a
-- second record all the same.
CREATE TABLE audit_once (
	once TEXT PRIMARY KEY,
	seq  INTEGER NOT NULL
) WITHOUT ROWID;
`},
}
