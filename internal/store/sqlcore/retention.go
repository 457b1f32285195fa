package sqlcore

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// The retention sweep (store.Retention, docs/STATE.md "Retention"): each
// batch is one write of the writer, so one transaction, that deletes up to
// a batch's worth of finished rows last written before a cutoff: requests
// with their frames (checkpoints), ledger and replicas; A2A tasks in a
// final state; approvals decided or expired. A request goes whole or not
// at all: its rows are deleted by statements of one transaction, each
// naming the same requests (those the selection below picks: nothing else
// writes them meanwhile, the writer being the store's one writer on
// SQLite, and PostgreSQL's statement taking them in one snapshot, locked).

// finishedRequests selects the requests a batch removes: ended (a stopped
// or interrupted request stays, however old: its row is what refuses a
// call naming its id, and PutRequest refuses its id to a new request,
// docs/STATE.md "Interrupted and stopped requests"; such requests are few,
// a stop's or a crash's), last written before $1, none with a dead letter
// waiting for a human, none whose parent still runs (its recovery or stop
// would look for it), none with a child that still runs (a delegation
// that outlived it: the child's admissions debit its ledger too, its stop
// and recovery look for it; the index requests_parent finds them), none
// that an A2A task not yet final names (the task may still be resumed,
// canceled or read with its request; the index tasks_request finds them),
// the oldest first, at most $2. started <= updated, so
// the index of the ended requests by their start (requests_state) finds
// them from the oldest, and stops at the batch's end, never reading the
// stopped and interrupted ones (they are never removed: found first by
// the index of all requests by their start, every batch read them all,
// and a client that stops its own requests can make them many: 400,000
// held each batch's write for 0.2-0.6 s). order is the batch's order:
// SQLite's by the start alone, which that index gives with no sort (with
// the id after it, its planner sorted the requests started at the same
// time, all of them in a batch's worth of bulk); its three statements of
// a batch read the same rows in the same order, so they name the same
// requests. PostgreSQL's planner chooses by its statistics.
func finishedRequests(order string) string {
	return `SELECT id FROM requests r
	WHERE r.started < $1 AND r.updated < $1 AND r.state = 'ended'
	AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.state IN ('open', 'taken') AND d.request = r.id)
	AND (r.parent = '' OR NOT EXISTS (SELECT 1 FROM requests p WHERE p.id = r.parent AND p.state = 'running'))
	AND NOT EXISTS (SELECT 1 FROM requests c WHERE c.parent <> '' AND c.parent = r.id AND c.state = 'running')
	AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.request = r.id AND NOT t.final)
	ORDER BY ` + order
}

// RetainSelect selects the requests a batch of the sweep removes ($1 the
// cut-off, $2 the batch's size), as the statements retentionSQL sets read
// them: an engine that writes its own statement of the frames (SQLite's)
// reads the same requests.
func RetainSelect() string { return finishedRequests("r.started") + ` LIMIT $2` }

// retentionSQL sets the statements of the sweep that both engines can run
// as they are (PostgreSQL replaces the request's, RetentionPostgres).
func retentionSQL(q []string) {
	sel := RetainSelect()
	q[StRetainFrames] = `DELETE FROM frames WHERE request IN (` + sel + `)`
	q[StRetainLedger] = `DELETE FROM ledger WHERE request IN (` + sel + `)`
	q[StRetainRequests] = `DELETE FROM requests WHERE id IN (` + sel + `)`
	q[StRetainTasks] = `DELETE FROM tasks WHERE (agent, id) IN
	(SELECT agent, id FROM tasks WHERE final AND created < $1 AND updated < $1 ORDER BY created LIMIT $2)`
	done := `SELECT id FROM approvals WHERE ` + approvalsDone + ` ORDER BY created LIMIT $2`
	// Each approval's keys by a range of the table's key (text in
	// SQLite's binary order: "approval ID " up to "approval ID!"), one
	// search an approval, not one for each of its possible actions.
	q[StRetainOnces] = `DELETE FROM audit_once WHERE once IN (SELECT o.once FROM (` + done + `) d
	JOIN audit_once o ON o.once >= 'approval ' || d.id || ' ' AND o.once < 'approval ' || d.id || '!')`
	q[StRetainApprovals] = `DELETE FROM approvals WHERE id IN (` + done + `)`
}

// approvalsDone is the condition of the approvals the sweep removes
// (last written before $1): decided, used or expired, or approved and
// past the window of its call, and audited: an approval whose last
// action is not audited yet (its mark, store.UnauditedCondition) is
// kept, however old, for the restart or a survivor that audits it
// (Load, Adopt read the marked rows). Before, the sweep removed it, and
// its action was never audited.
const approvalsDone = `created < $1 AND updated < $1
	AND (status IN ('used', 'denied', 'expired') OR status = 'approved' AND expires <> 0 AND expires < $1)
	AND NOT (` + store.UnauditedCondition + `)`

// approvalOnces selects the audit log's keys (store.ApprovalOnce) of the
// approvals ids selects (a subquery of their id), each by its name: the
// sweep removes an approval's keys with it, once it is final and
// audited, and the table of keys does not grow for good. (PostgreSQL's:
// its text order is its collation's, in which a range of a prefix is not
// one.)
func approvalOnces(ids string) string {
	union := func(col string, vs []string) string {
		var b strings.Builder
		b.WriteString("(")
		for i, v := range vs {
			if i > 0 {
				b.WriteString(" UNION ALL ")
			}
			b.WriteString("SELECT '" + v + "' AS " + col)
		}
		return b.String() + ")"
	}
	// CROSS JOIN, the approvals first: SQLite joins in the order written
	// then, selecting them once, not once for each action and requirement.
	return `SELECT 'approval ' || d.id || ' ' || x.action || ' (' || y.requires || ')' FROM ` + ids + ` d CROSS JOIN ` +
		union("action", store.ApprovalOnceActions) + ` x CROSS JOIN ` + union("requires", store.ApprovalOnceRequires) + ` y`
}

// RetentionPostgres sets PostgreSQL's statements of the sweep: a batch's
// requests, their frames, ledgers and replicas in one statement (one
// snapshot: each statement of a READ COMMITTED transaction takes its own,
// and a request written in between would lose its frames and stay), the
// requests locked (SKIP LOCKED: one that an instance holds is left for a
// later sweep), and only by the instance that holds the sweep's advisory
// lock for the transaction: two instances that sweep at once do not both
// delete, one batch of the other's at a time. Each table is read by its
// index of the request (= ANY of an array: with IN, the planner, which
// cannot know the batch's size, hashes the batch and reads the whole
// table of frames for each batch). Its rows: the requests removed, the
// frames.
func RetentionPostgres(q []string) {
	q[StRetainFrames], q[StRetainLedger], q[StRetainReplicas] = "", "", ""
	q[StRetainRequests] = `WITH doomed AS (` + finishedRequests("r.started, r.id") +
		` LIMIT CASE WHEN pg_try_advisory_xact_lock(` + retentionLock + `) THEN $2 ELSE 0 END FOR UPDATE OF r SKIP LOCKED),
	f AS (DELETE FROM frames WHERE request = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1),
	l AS (DELETE FROM ledger WHERE request = ANY(ARRAY(SELECT id FROM doomed))),
	p AS (DELETE FROM replicas WHERE request = ANY(ARRAY(SELECT id FROM doomed))),
	r AS (DELETE FROM requests WHERE id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING 1)
	SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM f)`
	q[StRetainTasks] = `DELETE FROM tasks WHERE (agent, id) IN
	(SELECT agent, id FROM tasks WHERE final AND created < $1 AND updated < $1 AND pg_try_advisory_xact_lock(` + retentionLock + `)
	ORDER BY created LIMIT $2 FOR UPDATE SKIP LOCKED)`
	// The approvals and their audit keys in one statement (one
	// snapshot); its rows changed: the approvals removed.
	q[StRetainOnces] = ""
	q[StRetainApprovals] = `WITH doomed AS (SELECT id FROM approvals
	WHERE ` + approvalsDone + ` AND pg_try_advisory_xact_lock(` + retentionLock + `)
	ORDER BY created LIMIT $2 FOR UPDATE SKIP LOCKED),
	o AS (DELETE FROM audit_once WHERE once = ANY(ARRAY(` + approvalOnces("doomed") + `)))
	DELETE FROM approvals WHERE id IN (SELECT id FROM doomed)`
}

// retentionLock is the advisory lock of the sweep on PostgreSQL, taken for
// a batch's transaction.
const retentionLock = `hashtextextended('reach retention', 0)`

// retained counts what the sweeps of this store removed (WriterStats).
type retained struct{ requests, frames, tasks, approvals atomic.Int64 }

// SweepFinished implements store.Retention: one batch, one transaction.
func (c *Core) SweepFinished(ctx context.Context, before time.Time, limit int) (store.Retained, error) {
	if c.Closed() {
		return store.Retained{}, store.ErrClosed
	}
	var got store.Retained
	args := []any{before.UnixNano(), int64(limit)}
	w := &Write{What: "the retention sweep", Run: func(b Batch, w *Write) {
		got = store.Retained{}
		if b.Has(StRetainFrames) { // statement by statement
			b.Exec(w, StRetainFrames, args, count(&got.Frames))
			crashpoint.Reached("retention") // the frames deleted, not the requests: uncommitted
			b.Exec(w, StRetainLedger, args, nil)
			b.Exec(w, StRetainReplicas, args, nil)
			b.Exec(w, StRetainRequests, args, count(&got.Requests))
		} else {
			b.Query(w, StRetainRequests, args, func(rows Rows) error {
				for rows.Next() {
					if err := rows.Scan(&got.Requests, &got.Frames); err != nil {
						return err
					}
				}
				return rows.Err()
			})
		}
		b.Exec(w, StRetainTasks, args, count(&got.Tasks))
		b.Exec(w, StRetainOnces, args, nil) // before the approvals whose keys it selects
		b.Exec(w, StRetainApprovals, args, count(&got.Approvals))
	}}
	if err := c.W.Do(ctx, w); err != nil {
		return store.Retained{}, fmt.Errorf("retention sweep: %w", err)
	}
	c.kept.requests.Add(got.Requests)
	c.kept.frames.Add(got.Frames)
	c.kept.tasks.Add(got.Tasks)
	c.kept.approvals.Add(got.Approvals)
	return got, nil
}

// RetainedTotal returns what the retention sweeps of this store removed
// since it was opened.
func (c *Core) RetainedTotal() store.Retained {
	return store.Retained{Requests: c.kept.requests.Load(), Frames: c.kept.frames.Load(),
		Tasks: c.kept.tasks.Load(), Approvals: c.kept.approvals.Load()}
}
