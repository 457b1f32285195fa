package sqlcore

import (
	"context"
	"errors"
)

// Stmt names a statement of the writer. Shared holds the SQL that both
// engines run as it is (parameters are $1, $2, ...: SQLite reads them by
// their number too); an engine's table starts from it, replaces what it
// runs otherwise, and may add statements of its own after NumStmts.
type Stmt int

// The statements of the operations of Core.
const (
	StPutRequest Stmt = iota
	StPutFrame
	StUpdateFrame // an engine without it always writes with StPutFrame
	StIdemClaim   // rows: claimed, owner, state, args, request, frame, result, claimed, expires, the cut-off write $8 unexpired at $9, and where the engine marks claims with it ($8 and the root request $10), the oldest other live claim of $8 (root, claimed, request); or, where StIdemGet is, rows changed
	StIdemGet
	StIdemComplete
	StIdemRelease
	StIdemSettleDelete
	StIdemSettleUpdate
	StIdemSettleKey
	StIdemSweep
	StDeadAdd
	StDeadUpdate
	StDeadTake // rows: taken, then the dead letter; none if it is not open (then StDeadGet)
	StDeadGet
	StLedgerDebit // rows: debited, then the spend; none if refused (then StLedgerGet)
	StLedgerGet
	StApprovalInsert
	StApprovalUpdate
	StEntityBump // rows: the new version
	StEntitySet  // an engine whose StEntityBump does not write the entities writes them with it
	StPinPut
	StPinDelete
	StPinsVersion
	StTaskPut
	// StPutClaimedFrame writes the "executing" checkpoint of a call with
	// the claim of its key: only if the key's claim is this very claim
	// ($14 key, $15 owner, $16 claimed, $17 request, $18 frame; the
	// frame's columns as in StPutFrame, PostgreSQL's owner and stack as
	// $19 and $20). An engine that runs statements as they come
	// (Engine.Sequential) needs none: the claim's outcome is known when
	// its checkpoint is added, written with StPutFrame if it was taken.
	StPutClaimedFrame
	StSessionPut
	StSessionTouch
	StSessionDelete
	StSessionSweep
	StOwnerPut
	StOwnerSweep
	// StEndFrame writes the end of a checkpoint put before (Frame.EndOnly):
	// $1 state, $2 undo, $3 error, $4 updated, of the frame $5 request, $6
	// frame; rows changed. An engine without it writes ends with
	// StUpdateFrame.
	StEndFrame
	// StEntityClaim claims entities in one statement (store.Entities's
	// ClaimEntities): $1 their names, $2 the versions they must be at, $3
	// whether each must; rows: the new version, then the names that were
	// not at theirs. An engine without it (one that runs statements as
	// they come) bumps the counter with StEntityBump, and then writes each
	// entity with StEntitySet, StEntityCAS or StEntityCreate.
	StEntityClaim
	// StEntityCAS sets entity $2 to version $1 if it is at $3; rows changed.
	StEntityCAS
	// StEntityCreate writes entity $2 at version $1 if it has no version; rows changed.
	StEntityCreate
	// StIdemSweepSome deletes the results that expired before $1 among
	// some of the records, the next ones of a pass over them all (each
	// sweep takes the next span), where an engine has no index of the
	// results by expiry. An engine without it sweeps them all with
	// StIdemSweep.
	StIdemSweepSome
	// The retention sweep (retention.go): each deletes the rows of one
	// table that the batch's selection of finished rows names ($1 the
	// cutoff, $2 the batch's size).
	StRetainFrames
	StRetainLedger
	StRetainReplicas // an engine without replicas (SQLite) has none
	StRetainRequests
	StRetainTasks
	// StRetainOnces deletes the audit log's keys (audit_once) of the
	// approvals StRetainApprovals deletes, before it, by the same
	// selection; an engine that deletes them in StRetainApprovals's one
	// statement (PostgreSQL) has none.
	StRetainOnces
	StRetainApprovals
	// StEndExecuting writes the end of a checkpoint only where it is still
	// "executing": $1 state, $2 undo, $3 error, $4 updated, of the frame
	// $5 request, $6 frame; rows changed (store.FrameEnder). A recovery
	// that marked it meanwhile is not overwritten.
	StEndExecuting
	// StEndExecutingOwned is StEndExecuting of the life $7 only (an
	// engine whose frames keep their owner, PostgreSQL). SQLite needs
	// none: one life at a time holds its data folder (its lock), and the
	// only other writer of an executing checkpoint is its own recovery at
	// start, which runs after the kept file is written.
	StEndExecutingOwned
	// The writes cut off before their answer was delivered (cutoffs.go):
	// StCutOffSweep deletes those expired at $1; StCutOffPut stores one,
	// replacing the one of its key; StCutOffTake deletes the one of $1 if
	// it is still request $2's call $3 (rows changed); StCutOffHand
	// makes it request $4's call $5 if it is still $2's $3 (rows changed).
	StCutOffSweep
	StCutOffPut
	StCutOffTake
	StCutOffHand
	// StLedgerRefused adds one to the refusals in a row of request $1,
	// after setting them back to zero if $2 is not 0; rows: the count.
	StLedgerRefused
	// StLedgerRefusedReset sets the refusals in a row of request $1 back
	// to zero, if they are not.
	StLedgerRefusedReset
	// The tasks model turns handed (store.HandedTasks): StHandedSweep
	// deletes those expired at $1; StHandedOthers deletes those of digest
	// $1 and request $2 another turn than $3 put; StHandedPut stores one
	// ($1 digest, $2 request, $3 principal, $4 tenant, $5 frame, $6 tool,
	// $7 stack, $8 created, $9 expires, $10 nth), replacing the one of its
	// digest, request and nth; StHandedTrim
	// deletes the principal $1's (tenant $2) past its newest $3 (those
	// put at once with the last past it too).
	StHandedSweep
	StHandedOthers
	StHandedPut
	StHandedTrim
	// StHandedClaim marks used, and returns, the record of digest $1,
	// principal $2 and tenant $3 unexpired at $4 (its request running)
	// that a sub-agent given the task joins: of the one request whose
	// turn handed it, else of the one request whose records are not all
	// used yet, the one not used yet of the lowest nth, else its nth 0
	// (a record used meanwhile by another claim is not taken again).
	// Rows: request, frame, tool, stack, created, expires, sub, nth.
	StHandedClaim
	// StHandedSub records sub-request $4 as begun from the record of
	// digest $1, request $2 and nth $5, if the one recorded is still $3;
	// rows changed.
	StHandedSub
	// StHandedSubs returns the sub-requests begun from the records of
	// request $1's turn $2.
	StHandedSubs
	NumStmts
)

// Shared returns the SQL of the statements both engines run as they are.
func Shared() []string {
	q := make([]string, NumStmts)
	q[StPutRequest] = `INSERT INTO requests
	(id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
	ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, principal = excluded.principal, tenant = excluded.tenant,
		roles = excluded.roles, attributes = excluded.attributes, trace = excluded.trace, scene = excluded.scene,
		agent = excluded.agent, state = excluded.state, budget = excluded.budget, usage = excluded.usage,
		cause = excluded.cause, started = excluded.started, ended = excluded.ended, updated = excluded.updated
	WHERE requests.state <> 'interrupted' AND (requests.state <> 'stopped' OR excluded.state = 'stopped')
		AND (requests.parent = '' OR requests.parent = excluded.parent OR requests.state <> 'ended')`
	q[StIdemGet] = `SELECT false, ` + idemColumns + ` FROM idempotency WHERE key = $1`
	q[StEndExecuting] = `UPDATE frames SET state = $1, undo = $2, error = $3, updated = $4
	WHERE request = $5 AND frame = $6 AND state = 'executing'`
	q[StIdemComplete] = `UPDATE idempotency SET state = 'done', result = $1, expires = $2 WHERE key = $3 AND owner = $4 AND state = 'claimed'`
	q[StIdemRelease] = `DELETE FROM idempotency WHERE key = $1 AND owner = $2 AND state = 'claimed'`
	q[StIdemSettleDelete] = `DELETE FROM idempotency WHERE key = $1 AND owner = $2 AND claimed = $3 AND state = 'claimed'`
	q[StIdemSettleUpdate] = `UPDATE idempotency SET state = 'done', result = $1, expires = $2
	WHERE key = $3 AND owner = $4 AND claimed = $5 AND state = 'claimed'`
	q[StIdemSettleKey] = `INSERT INTO idempotency (key, owner, state, result, claimed, expires) VALUES ($1, '', 'done', $2, $3, $4)
	ON CONFLICT (key) DO UPDATE SET state = 'done', result = excluded.result, expires = excluded.expires`
	q[StIdemSweep] = `DELETE FROM idempotency WHERE state = 'done' AND expires <= $1 AND expires <> 0`
	q[StDeadAdd] = `INSERT INTO dead_letters (request, frame, tool, args, error, attempts, state, note, created, updated, principal, tenant)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`
	q[StDeadUpdate] = `UPDATE dead_letters SET state = $1, note = $2, error = $3, attempts = $4, updated = $5 WHERE id = $6`
	q[StDeadGet] = `SELECT false, ` + DeadColumns + ` FROM dead_letters WHERE id = $1`
	q[StLedgerGet] = `SELECT false, turns, tool_calls, tokens, cost FROM ledger WHERE request = $1`
	q[StLedgerRefused] = `INSERT INTO ledger (request, refused) VALUES ($1, 1)
	ON CONFLICT (request) DO UPDATE SET refused = CASE WHEN $2 <> 0 THEN 1 ELSE ledger.refused + 1 END
	RETURNING refused`
	q[StLedgerRefusedReset] = `UPDATE ledger SET refused = 0 WHERE request = $1 AND refused <> 0`
	q[StPinPut] = `INSERT INTO pins (tool, data, updated) VALUES ($1, $2, $3)
	ON CONFLICT (tool) DO UPDATE SET data = excluded.data, updated = excluded.updated`
	q[StPinDelete] = `DELETE FROM pins WHERE tool = $1`
	q[StPinsVersion] = `UPDATE store_meta SET value = value + 1 WHERE key = 'pins_version' RETURNING value`
	q[StTaskPut] = `INSERT INTO tasks (agent, id, principal, tenant, request, state, final, data, created, updated)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
	ON CONFLICT (agent, id) DO UPDATE SET principal = excluded.principal, tenant = excluded.tenant, request = excluded.request,
		state = excluded.state, final = excluded.final, data = excluded.data, updated = excluded.updated
	WHERE NOT tasks.final`
	q[StSessionPut] = `INSERT INTO sessions (hash, principal, tenant, protocol, init, request, created, used)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (hash) DO UPDATE SET principal = excluded.principal, tenant = excluded.tenant, protocol = excluded.protocol,
		init = excluded.init, request = excluded.request, created = excluded.created, used = excluded.used`
	q[StSessionTouch] = `UPDATE sessions SET used = $1, request = $2 WHERE hash = $3`
	q[StSessionDelete] = `DELETE FROM sessions WHERE hash = $1`
	q[StSessionSweep] = `DELETE FROM sessions WHERE used < $1`
	q[StOwnerPut] = `INSERT INTO response_owners (hash, principal, tenant, endpoint, created, expires) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (hash) DO UPDATE SET principal = excluded.principal, tenant = excluded.tenant, endpoint = excluded.endpoint,
		created = excluded.created, expires = excluded.expires
	WHERE response_owners.principal = excluded.principal AND response_owners.tenant = excluded.tenant
		OR response_owners.expires <= excluded.created`
	q[StOwnerSweep] = `DELETE FROM response_owners WHERE expires <= $1`
	q[StHandedSweep] = `DELETE FROM handed_tasks WHERE expires <= $1`
	q[StHandedOthers] = `DELETE FROM handed_tasks WHERE digest = $1 AND request = $2 AND frame <> $3`
	q[StHandedPut] = `INSERT INTO handed_tasks (digest, request, principal, tenant, frame, tool, stack, created, expires, nth)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (digest, request, nth) DO UPDATE SET principal = excluded.principal, tenant = excluded.tenant, frame = excluded.frame,
		tool = excluded.tool, stack = excluded.stack, created = excluded.created, expires = excluded.expires, used = 0, sub = ''`
	handedLive := `FROM handed_tasks h JOIN requests q ON q.id = h.request
		WHERE h.digest = $1 AND h.principal = $2 AND h.tenant = $3 AND h.expires > $4 AND q.state = 'running'`
	// One writer runs the claims one after the other (SQLite's); PostgreSQL
	// has its own, which locks the records it reads.
	q[StHandedClaim] = `UPDATE handed_tasks SET used = 1
	WHERE digest = $1 AND principal = $2 AND tenant = $3 AND expires > $4
		AND request = (SELECT CASE WHEN count(DISTINCT h.request) = 1 THEN min(h.request)
			WHEN count(DISTINCT CASE WHEN h.used = 0 THEN h.request END) = 1 THEN min(CASE WHEN h.used = 0 THEN h.request END) END ` + handedLive + `)
		AND nth = (SELECT h.nth ` + handedLive + ` AND h.request = handed_tasks.request ORDER BY h.used, h.nth LIMIT 1)
	RETURNING request, frame, tool, stack, created, expires, sub, nth`
	q[StHandedSub] = `UPDATE handed_tasks SET sub = $4 WHERE digest = $1 AND request = $2 AND sub = $3 AND nth = $5`
	q[StHandedSubs] = `SELECT sub FROM handed_tasks WHERE request = $1 AND frame = $2 AND sub <> ''`
	q[StHandedTrim] = `DELETE FROM handed_tasks WHERE principal = $1 AND tenant = $2 AND created <= (SELECT created FROM handed_tasks
		WHERE principal = $1 AND tenant = $2 ORDER BY created DESC LIMIT 1 OFFSET $3)`
	q[StCutOffSweep] = `DELETE FROM cut_offs WHERE expires <= $1`
	q[StCutOffPut] = `INSERT INTO cut_offs (key, tool, root, request, call_id, began, at, restart, stopped, expires)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (key) DO UPDATE SET tool = excluded.tool, root = excluded.root, request = excluded.request,
		call_id = excluded.call_id, began = excluded.began, at = excluded.at, restart = excluded.restart,
		stopped = excluded.stopped, expires = excluded.expires`
	q[StCutOffTake] = `DELETE FROM cut_offs WHERE key = $1 AND request = $2 AND call_id = $3`
	q[StCutOffHand] = `UPDATE cut_offs SET request = $4, call_id = $5 WHERE key = $1 AND request = $2 AND call_id = $3`
	retentionSQL(q)
	return q
}

// The columns the reads and the statements select, in the order of their
// scans.
const (
	RequestColumns  = `id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated`
	idemColumns     = `owner, state, args, request, frame, result, claimed, expires`
	DeadColumns     = `id, request, frame, tool, args, error, attempts, state, note, created, updated, taker, taken, principal, tenant`
	approvalColumns = `id, key, alt, status, version, created, expires, updated, data`
	taskColumns     = `agent, id, principal, tenant, request, state, final, data, created, updated`
	sessionColumns  = `hash, principal, tenant, protocol, init, request, created, used`
	ownerColumns    = `hash, principal, tenant, endpoint, created, expires`
)

// Rows are the rows of a query: *sql.Rows and pgx.Rows, as an engine's
// adapter gives them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Reader runs the reads of Core: through a pool of read connections,
// outside the writer.
type Reader interface {
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
}

// ErrNoRows is what Core's reads of one row return for none, whatever the
// engine says.
var ErrNoRows = errors.New("no rows")

// Dialect is how an engine differs in the SQL of Core's reads and in the
// values it binds.
type Dialect struct {
	// Text binds a JSON document or other text kept as bytes: nil for an
	// empty one (stored as NULL).
	Text func(b []byte) any
	// Doc binds a document that is never NULL.
	Doc func(b []byte) any
	// Key binds an idempotency key (bytes on PostgreSQL, which keeps
	// them as BYTEA: they hold NUL separators).
	Key func(k string) any
	// List binds a list of strings, read with AnyOf.
	List func(l []string) any
	// AnyOf is the SQL condition that col is one of the list bound as
	// parameter p ("$1").
	AnyOf func(col, p string) string
	// FrameSelect selects the columns of a frame (see Core.QueryFrames),
	// FrameOrder orders them by start, then in the order they were first
	// written (store.Frames).
	FrameSelect string
	FrameOrder  string
	// AuditSelect selects the columns of an audit record (see
	// Core.QueryAudit), CheckpointSelect those of an audit checkpoint,
	// AuditHead the last record's seq and hash (none, or seq 0, for an
	// empty log).
	AuditSelect      string
	CheckpointSelect string
	AuditHead        string
	// AuditField, if not nil, is the SQL expression of an audit event's
	// field (a name of letters and underscores), in place of
	// event ->> 'field': SQLite keeps events as text, so its expression
	// reads a malformed one as NULL, where ->> would fail the query (and
	// the index on the tenant, migration 18, every write of such a row).
	AuditField func(field string) string
	// IndexReady is a query of one boolean: whether the index named $1 is
	// there and usable (ReadIndexes).
	IndexReady string
	// Claims, if not empty, is the condition of the idempotency records
	// that ClaimedKeys lists, in place of state = 'claimed'.
	Claims string
}
