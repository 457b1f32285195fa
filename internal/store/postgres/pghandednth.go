package postgres

import "github.com/agentreach/reach/internal/store/sqlcore"

func init() {
	pgMigrations = append(pgMigrations, migration{33, "the tasks model turns handed: one record a call", `
-- A turn that hands one task in several calls (two sub-agents asked the
-- same thing at once) keeps a record of each (nth: the calls of the turn
-- that handed it before), so that each sub-agent given it begins a
-- sub-request of its own, on any instance, as on one. Run again (its
-- record lost), it changes nothing.
ALTER TABLE handed_tasks ADD COLUMN IF NOT EXISTS nth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE handed_tasks DROP CONSTRAINT IF EXISTS handed_tasks_pkey;
ALTER TABLE handed_tasks ADD PRIMARY KEY (digest, request, nth);
`})
}

// The statements that lock more than one record of handed_tasks lock
// them in one order, the key's (digest, request, nth), or wait for none:
// two that each held a record the other waited for were a deadlock, one
// of them refused (40P01, answered 503 and retried by the client).
// The claim and the delete of a request's records another turn put lock
// them in the key's order (a locking read ordered by it: the rows are
// locked as the sort returns them, whatever the plan); the sweeps of the
// expired records and of those past a principal's bound skip a record
// another holds (SKIP LOCKED: the next write sweeps it), and never wait.
// A write's puts go in the key's order too (sqlcore.PutHandedTasks).
//
// That orders the records one statement locks, not those of a batch: the
// writer commits several writes in one transaction (a claim of one task
// and a write of another, in the order they were queued), and two
// instances' batches that held one task's records each and went on to the
// other's were a deadlock too. So every transaction that runs a statement
// of the table takes one lock first, handedLockSQL (an advisory lock of
// the transaction, let go at its commit): a second batch waits for the
// first before it locks any record of the table, holding no lock of its
// own (the round takes it at the head of the transaction: addHandedLock).
// The batches that touch the table (a model turn's tool calls, a
// sub-agent's first turn) are serialized across instances, one commit at
// a time; the others never take it.

// handedLockSQL is the lock every transaction that locks records of
// handed_tasks takes before it locks any.
const handedLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('reach handed_tasks', 0))`

// handedStmt is the writer's statements that lock records of handed_tasks
// (by sqlcore.Stmt: a look-up of every statement a round adds).
var handedStmt = func() []bool {
	m := make([]bool, len(statementSQL))
	for _, id := range []sqlcore.Stmt{sqlcore.StHandedSweep, sqlcore.StHandedOthers, sqlcore.StHandedPut,
		sqlcore.StHandedTrim, sqlcore.StHandedClaim, sqlcore.StHandedSub} {
		m[id] = true
	}
	return m
}()

// handedClaimSQL is PostgreSQL's sqlcore.StHandedClaim: the live records
// of the task are locked as they are read (FOR UPDATE), so that of two
// claims at once, on two instances, the second reads what the first took
// (READ COMMITTED reads a locked row anew once its lock is let go) and
// takes the next record not used yet, or none.
const handedClaimSQL = `WITH live AS (
	SELECT h.request, h.nth, h.used FROM handed_tasks h JOIN requests q ON q.id = h.request
	WHERE h.digest = $1 AND h.principal = $2 AND h.tenant = $3 AND h.expires > $4 AND q.state = 'running'
	ORDER BY h.request, h.nth
	FOR UPDATE OF h),
pick AS (SELECT CASE WHEN count(DISTINCT request) = 1 THEN min(request)
		WHEN count(DISTINCT CASE WHEN used = 0 THEN request END) = 1 THEN min(CASE WHEN used = 0 THEN request END) END AS request
	FROM live),
one AS (SELECT l.request, l.nth FROM live l JOIN pick p ON p.request = l.request ORDER BY l.used, l.nth LIMIT 1)
UPDATE handed_tasks t SET used = 1 FROM one
WHERE t.digest = $1 AND t.request = one.request AND t.nth = one.nth
RETURNING t.request, t.frame, t.tool, t.stack, t.created, t.expires, t.sub, t.nth`

// handedSweepSQL is PostgreSQL's sqlcore.StHandedSweep.
const handedSweepSQL = `DELETE FROM handed_tasks t USING (SELECT digest, request, nth FROM handed_tasks WHERE expires <= $1
	ORDER BY digest, request, nth FOR UPDATE SKIP LOCKED) e
WHERE t.digest = e.digest AND t.request = e.request AND t.nth = e.nth`

// handedOthersSQL is PostgreSQL's sqlcore.StHandedOthers.
const handedOthersSQL = `DELETE FROM handed_tasks t USING (SELECT digest, request, nth FROM handed_tasks
	WHERE digest = $1 AND request = $2 AND frame <> $3 ORDER BY nth FOR UPDATE) e
WHERE t.digest = e.digest AND t.request = e.request AND t.nth = e.nth`

// handedTrimSQL is PostgreSQL's sqlcore.StHandedTrim.
const handedTrimSQL = `DELETE FROM handed_tasks t USING (SELECT digest, request, nth FROM handed_tasks
	WHERE principal = $1 AND tenant = $2 AND created <= (SELECT created FROM handed_tasks
		WHERE principal = $1 AND tenant = $2 ORDER BY created DESC LIMIT 1 OFFSET $3)
	ORDER BY digest, request, nth FOR UPDATE SKIP LOCKED) e
WHERE t.digest = e.digest AND t.request = e.request AND t.nth = e.nth`
