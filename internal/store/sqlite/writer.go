package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// The SQLite store writes through one goroutine, the writer: every write
// (a checkpoint, an idempotency claim or record, a request, an audit batch,
// a dead letter, an approval) is a write queued to it. The writer takes
// everything queued, runs it in one transaction with prepared statements,
// commits once, and then answers each caller: group commit. A write that
// must be durable before its caller goes on (PutFrame, ClaimKey, ...) waits
// for the commit of the batch that holds it, not for a transaction of its
// own; a queued write (QueueFrame, QueueCompleteKey, QueueReleaseKey)
// returns at once and is committed with a later batch. Writes are applied
// in the order they were queued, so a queued write is visible to every
// write queued after it (a claim after a queued completion sees the
// result).

// write is one unit of work for the writer.
type write struct {
	// run does the write inside the batch's transaction, with b's prepared
	// statements. An error it returns that is not a *dbError (a conflict,
	// a missing row) must leave nothing written by it; a *dbError rolls
	// the batch back (see commitBatch).
	run func(b *batch) error
	// after, if not nil, runs in the writer once the batch committed
	// (true) or was rolled back for good (false).
	after func(committed bool)
	// done receives the outcome; nil for a queued write, whose failure is
	// logged.
	done chan error
	what string // what a queued write was, for the log
	err  error

	// A claim of a checkpointed call (ClaimKey with a Frame) is answered
	// as soon as it has run (decided is closed), and its checkpoint
	// follows: pair names the checkpoint, and the writer holds the batch
	// open a little for it, so that the claim and the "executing"
	// checkpoint commit together (see commitBatch). claimed is what it
	// decided. A checkpoint names its pair in pairs.
	decided chan struct{}
	answer  func(err error) // takes what the claim decided, before decided is closed
	pair    string
	claimed bool // what its latest run decided
	told    bool // what its caller was told: claimed
	pairs   string
}

// dbError is an error of the database itself while a write ran: the batch
// is rolled back, since the transaction may not be usable any more.
type dbError struct{ err error }

func (e *dbError) Error() string { return e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }

// batch is the transaction of one group commit and its statements.
type batch struct {
	s     *Store
	tx    *sql.Tx
	stmts [numStmts]*sql.Stmt
	rows  int // rows written, for the checkpointer
}

var bg = context.Background()

// stmt returns the prepared statement id in the batch's transaction.
func (b *batch) stmt(id stmtID) *sql.Stmt {
	if b.stmts[id] == nil {
		b.stmts[id] = b.tx.StmtContext(bg, b.s.stmts[id])
	}
	return b.stmts[id]
}

// exec runs statement id; an error is a *dbError.
func (b *batch) exec(id stmtID, args ...any) (sql.Result, error) {
	res, err := b.stmt(id).ExecContext(bg, args...)
	if err != nil {
		return nil, &dbError{err}
	}
	return res, nil
}

// affected runs statement id and returns how many rows it changed.
func (b *batch) affected(id stmtID, args ...any) (int64, error) {
	res, err := b.exec(id, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, &dbError{err}
	}
	b.rows += int(n)
	return n, nil
}

// queryRow runs the query statement id; a Scan error other than
// sql.ErrNoRows is a database error (see scanErr).
func (b *batch) queryRow(id stmtID, args ...any) *sql.Row {
	return b.stmt(id).QueryRowContext(bg, args...)
}

// scanErr wraps an error of a Scan of queryRow: sql.ErrNoRows stays as it
// is, anything else is a *dbError.
func scanErr(err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return &dbError{err}
}

// maxBatch bounds the writes of one transaction.
const maxBatch = 1024

// writerQueue is how many writes may wait for the writer before a caller
// waits for room.
const writerQueue = 4096

// writerYields bounds how often the writer yields to let a batch grow.
const writerYields = 4

// startWriter starts the writer goroutine.
func (s *Store) startWriter() {
	s.q = make(chan *write, writerQueue)
	s.lost = map[string]bool{}
	s.wDone = make(chan struct{})
	go s.writer()
}

// do queues w and waits for its outcome: for a write that must be durable
// when it returns. If ctx ends first, do returns its cause and w may or may
// not be written.
func (s *Store) do(ctx context.Context, w *write) error {
	w.done = make(chan error, 1)
	if err := s.send(w); err != nil {
		return err
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// queue queues w and returns at once; a failure is logged.
func (s *Store) queue(w *write) {
	if err := s.send(w); err != nil {
		s.log.Error("store: a queued write was not written", "write", w.what, "err", err)
	}
}

// send hands w to the writer, waiting for room in the queue.
func (s *Store) send(w *write) error {
	s.qMu.RLock()
	defer s.qMu.RUnlock()
	if s.qClosed {
		return store.ErrClosed
	}
	s.q <- w
	return nil
}

// stopWriter lets the writer commit what is queued, and stops it.
func (s *Store) stopWriter() {
	s.qMu.Lock()
	if !s.qClosed {
		s.qClosed = true
		close(s.q)
	}
	s.qMu.Unlock()
	<-s.wDone
}

// writer takes what is queued, commits it as one batch, and answers.
func (s *Store) writer() {
	defer close(s.wDone)
	ws := make([]*write, 0, 64)
	open := true
	drain := func() int {
		n := 0
		for open && len(ws) < maxBatch {
			select {
			case w, ok := <-s.q:
				if !ok {
					open = false
					return n
				}
				ws = append(ws, w)
				n++
			default:
				return n
			}
		}
		return n
	}
	for open && !s.qDrained {
		w, ok := <-s.q
		if !ok {
			break
		}
		ws = append(ws[:0], w)
		drain()
		// Callers woken by the last commit are about to queue again: let
		// them, while that makes the batch grow, so that one commit carries
		// them all instead of one each.
		for range writerYields {
			runtime.Gosched()
			if drain() == 0 {
				break
			}
		}
		ws = s.commitBatch(ws)
		clear(ws)
	}
}

// linger bounds how long the writer holds a batch open for the
// checkpoints of the claims it decided (see write.pair). A variable only
// so that a test can hold the batch open for as long as it needs.
var linger = 500 * time.Microsecond

// commitBatch runs ws in one transaction and commits it, and returns ws
// with the writes that joined it. While a claim of the batch waits for its
// checkpoint, the batch stays open (at most linger): the writes queued
// meanwhile join it. A database error in one
// write rolls the batch back; that write fails, and the others run again
// once, without it. A second database error, or a failed commit, fails
// them all.
func (s *Store) commitBatch(ws []*write) []*write {
	var failed []bool
	for attempt := 1; ; attempt++ {
		b := &batch{s: s}
		tx, err := s.w.BeginTx(bg, nil)
		if err != nil {
			failed = grow(failed, len(ws))
			s.finishAll(ws, failed, fmt.Errorf("beginning a write: %w", err))
			return ws
		}
		b.tx = tx
		at := -1
		var fatal error
		waiting := map[string]bool{} // pairs of claims decided in this batch, not yet arrived
		run := func(i int, w *write) bool {
			w.err = w.run(b)
			if de := (*dbError)(nil); errors.As(w.err, &de) {
				at, fatal = i, w.err
				return false
			}
			if w.pair != "" && w.claimed && w.err == nil {
				waiting[w.pair] = true
			}
			if w.pairs != "" {
				delete(waiting, w.pairs)
			}
			if w.decided != nil && attempt == 1 {
				w.told = w.claimed && w.err == nil
				w.answer(w.err)
				close(w.decided)
			}
			return true
		}
		for i := 0; i < len(ws); i++ {
			failed = grow(failed, len(ws))
			if failed[i] {
				continue
			}
			if !run(i, ws[i]) {
				break
			}
		}
		if fatal == nil && attempt == 1 && len(waiting) > 0 {
			t := time.NewTimer(linger)
		hold:
			for len(waiting) > 0 && len(ws) < maxBatch {
				select {
				case w, ok := <-s.q:
					if !ok {
						s.qDrained = true
						break hold
					}
					ws = append(ws, w)
					failed = grow(failed, len(ws))
					if !run(len(ws)-1, w) {
						break hold
					}
				case <-t.C:
					break hold
				}
			}
			t.Stop()
		}
		if fatal == nil {
			if err := tx.Commit(); err != nil {
				fatal = fmt.Errorf("committing: %w", err)
			} else {
				s.wrote(b.rows)
				s.batches.Add(1)
				for i, w := range ws {
					if !failed[i] {
						s.finish(w, true)
					}
				}
				return ws
			}
		}
		tx.Rollback()
		s.rolledBack()
		if at < 0 || attempt == 2 {
			s.finishAll(ws, failed, fatal)
			return ws
		}
		failed[at] = true
		s.finish(ws[at], false)
	}
}

// grow extends failed to n entries.
func grow(failed []bool, n int) []bool {
	for len(failed) < n {
		failed = append(failed, false)
	}
	return failed
}

// finishAll fails every write of ws not failed yet with err.
func (s *Store) finishAll(ws []*write, failed []bool, err error) {
	for i, w := range ws {
		if !failed[i] {
			w.err = err
			s.finish(w, false)
		}
	}
}

// finish answers w (committed reports whether its batch committed).
func (s *Store) finish(w *write, committed bool) {
	if w.after != nil {
		w.after(committed)
	}
	if w.decided != nil {
		if w.err == nil && !committed {
			w.err = errors.New("its batch was not committed")
		}
		select {
		case <-w.decided:
		default: // not answered yet (it first ran in a second attempt): now it is known
			w.answer(w.err)
			close(w.decided)
		}
		if w.err != nil && w.told {
			// Its caller went on with the claim: its checkpoint, unless it
			// failed with it in this batch, must not be written alone.
			s.lost[w.pair] = true
		}
		return
	}
	if w.pairs != "" && !committed {
		delete(s.lost, w.pairs) // failed with its claim
	}
	if w.done != nil {
		w.done <- w.err
		return
	}
	if w.err != nil {
		s.queuedFailed.Add(1)
		s.log.Error("store: a queued write failed", "write", w.what, "err", w.err)
	}
}

// rolledBack forgets what the writer keeps in memory about rows that a
// rolled-back batch wrote: the audit records kept for the next index pass
// (they are read back from the table instead).
func (s *Store) rolledBack() {
	s.recent = nil
	s.indexed.Store(s.indexedCommitted)
}

// WriterStats returns the writer's counters.
func (s *Store) WriterStats() store.WriterStats {
	return store.WriterStats{Batches: s.batches.Load(), QueuedFailed: s.queuedFailed.Load()}
}

// stmtID names a prepared statement of the writer.
type stmtID int

const (
	stPutRequest stmtID = iota
	stPutFrame
	stUpdateFrame
	stIdemGet
	stIdemClaim
	stIdemComplete
	stIdemRelease
	stIdemSettleDelete
	stIdemSettleUpdate
	stIdemSettleKey
	stIdemSweep
	stAuditHead
	stAuditInsert128
	stAuditInsert16
	stAuditInsert1
	stAuditCheckpoint
	stAuditIndexed
	stAuditIndexRow
	stAuditPass
	stAuditSetIndexed
	stAuditScanFrom
	stDeadAdd
	stDeadUpdate
	stDeadTake
	stDeadGet
	stLedgerDebit
	stLedgerGet
	stApprovalInsert
	stApprovalUpdate
	stEntityCounter
	stEntitySet
	stPinPut
	stPinsVersion
	stTaskPut
	numStmts
)

// auditChunks are the row counts of the prepared multi-row INSERTs, largest
// first, and their statements: a batch is inserted with as few statements
// as they allow.
var auditChunks = [...]struct {
	rows int
	id   stmtID
}{{128, stAuditInsert128}, {16, stAuditInsert16}, {1, stAuditInsert1}}

const auditColumns = `seq, time, request, event, prev_hash, hash`

const auditColumnCount = 6

// statements returns the SQL of every prepared statement of the writer.
func statements() [numStmts]string {
	var q [numStmts]string
	q[stPutRequest] = `INSERT INTO requests
	(id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, principal = excluded.principal, tenant = excluded.tenant,
		roles = excluded.roles, attributes = excluded.attributes, trace = excluded.trace, scene = excluded.scene,
		agent = excluded.agent, state = excluded.state, budget = excluded.budget, usage = excluded.usage,
		cause = excluded.cause, started = excluded.started, ended = excluded.ended, updated = excluded.updated
	WHERE requests.state != 'interrupted' AND (requests.state != 'stopped' OR excluded.state = 'stopped')`
	q[stPutFrame] = `INSERT INTO frames
	(request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (request, frame) DO UPDATE SET parent = excluded.parent, kind = excluded.kind,
		name = excluded.name, call_id = excluded.call_id, idem_key = excluded.idem_key,
		state = excluded.state, args = excluded.args, undo = excluded.undo, error = excluded.error,
		started = excluded.started, updated = excluded.updated`
	q[stUpdateFrame] = `UPDATE frames SET parent = ?, kind = ?, name = ?, call_id = ?, idem_key = ?, state = ?, args = ?, undo = ?,
		error = ?, started = ?, updated = ? WHERE request = ? AND frame = ?`
	q[stIdemGet] = `SELECT ` + idemColumns + ` FROM idempotency WHERE key = ?`
	// A claim in one statement: a key with no record, or whose result has
	// expired (as of the claim), is claimed; any other record stays, and
	// is read (stIdemGet).
	q[stIdemClaim] = `INSERT INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires)
	VALUES (?1, ?2, 'claimed', ?3, ?4, ?5, NULL, ?6, ?7)
	ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, state = 'claimed', args = excluded.args,
		request = excluded.request, frame = excluded.frame, result = NULL, claimed = excluded.claimed, expires = excluded.expires
	WHERE idempotency.state = 'done' AND idempotency.expires != 0 AND idempotency.expires <= excluded.claimed`
	q[stIdemComplete] = `UPDATE idempotency SET state = 'done', result = ?, expires = ? WHERE key = ? AND owner = ? AND state = 'claimed'`
	q[stIdemRelease] = `DELETE FROM idempotency WHERE key = ? AND owner = ? AND state = 'claimed'`
	q[stIdemSettleDelete] = `DELETE FROM idempotency WHERE key = ? AND owner = ? AND claimed = ? AND state = 'claimed'`
	q[stIdemSettleUpdate] = `UPDATE idempotency SET state = 'done', result = ?, expires = ?
	WHERE key = ? AND owner = ? AND claimed = ? AND state = 'claimed'`
	q[stIdemSettleKey] = `INSERT INTO idempotency (key, owner, state, result, claimed, expires)
	VALUES (?, '', 'done', ?, ?, ?)
	ON CONFLICT (key) DO UPDATE SET state = 'done', result = excluded.result, expires = excluded.expires`
	q[stIdemSweep] = `DELETE FROM idempotency WHERE state = 'done' AND expires <= ? AND expires != 0`
	q[stAuditHead] = `SELECT ifnull(max(seq), 0) FROM audit`
	row := "(?" + repeat(", ?", auditColumnCount-1) + ")"
	for _, c := range auditChunks {
		// OR ROLLBACK: a taken seq ends the whole transaction, which spares
		// SQLite a statement journal for the multi-row INSERT. The head is
		// checked first in the same transaction, so it never happens here.
		q[c.id] = `INSERT OR ROLLBACK INTO audit (` + auditColumns + `) VALUES ` + row + repeat(", "+row, c.rows-1)
	}
	q[stAuditCheckpoint] = `INSERT OR IGNORE INTO checkpoints (seq, hash, time) VALUES (?, ?, ?)`
	q[stAuditIndexed] = `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`
	q[stAuditIndexRow] = `INSERT INTO audit_requests (pass, request, seqs) VALUES (?, ?, ?)`
	q[stAuditPass] = `INSERT INTO audit_passes (pass, last) VALUES (?, ?)`
	q[stAuditSetIndexed] = `INSERT OR REPLACE INTO audit_meta (key, value) VALUES ('indexed', ?)`
	q[stAuditScanFrom] = `SELECT seq, request FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`
	q[stDeadAdd] = `INSERT INTO dead_letters
	(request, frame, tool, args, error, attempts, state, note, created, updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	q[stDeadUpdate] = `UPDATE dead_letters SET state = ?, note = ?, error = ?, attempts = ?, updated = ? WHERE id = ?`
	q[stDeadTake] = `UPDATE dead_letters SET state = ?, updated = ? WHERE id = ? AND state = ?`
	q[stDeadGet] = `SELECT id, request, frame, tool, args, error, attempts, state, note, created, updated FROM dead_letters WHERE id = ?`
	// One conditional update: the caps (?6 to ?9, zero for none) are
	// compared with the sums in the same statement that writes them. A
	// first debit is checked against them by the caller.
	q[stLedgerDebit] = `INSERT INTO ledger (request, turns, tool_calls, tokens, cost) VALUES (?1, ?2, ?3, ?4, ?5)
	ON CONFLICT (request) DO UPDATE SET turns = turns + excluded.turns, tool_calls = tool_calls + excluded.tool_calls,
		tokens = tokens + excluded.tokens, cost = cost + excluded.cost
	WHERE (?6 = 0 OR turns + excluded.turns <= ?6) AND (?7 = 0 OR tool_calls + excluded.tool_calls <= ?7)
		AND (?8 = 0 OR tokens + excluded.tokens <= ?8) AND (?9 = 0 OR cost + excluded.cost <= ?9)
	RETURNING turns, tool_calls, tokens, cost`
	q[stLedgerGet] = `SELECT turns, tool_calls, tokens, cost FROM ledger WHERE request = ?`
	q[stApprovalInsert] = `INSERT INTO approvals (id, key, alt, status, version, created, expires, updated, data)
	VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	q[stApprovalUpdate] = `UPDATE approvals SET key = ?, alt = ?, status = ?, version = version + 1, created = ?, expires = ?, updated = ?, data = ?
	WHERE id = ? AND version = ?`
	q[stEntityCounter] = `UPDATE store_meta SET value = value + 1 WHERE key = 'entity_version' RETURNING value`
	q[stEntitySet] = `INSERT INTO entities (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version`
	q[stPinPut] = `INSERT INTO pins (tool, data, updated) VALUES (?, ?, ?)
	ON CONFLICT (tool) DO UPDATE SET data = excluded.data, updated = excluded.updated`
	q[stPinsVersion] = `UPDATE store_meta SET value = value + 1 WHERE key = 'pins_version' RETURNING value`
	q[stTaskPut] = `INSERT INTO tasks (agent, id, principal, tenant, request, state, final, data, created, updated)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
	ON CONFLICT (agent, id) DO UPDATE SET principal = excluded.principal, tenant = excluded.tenant, request = excluded.request,
		state = excluded.state, final = excluded.final, data = excluded.data, updated = excluded.updated
	WHERE NOT tasks.final`
	return q
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// prepareWriter prepares the writer's statements on the write connection.
func (s *Store) prepareWriter(ctx context.Context) error {
	for id, q := range statements() {
		if q == "" {
			return fmt.Errorf("statement %d has no SQL", id)
		}
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("preparing statement %d: %w", id, err)
		}
		s.stmts[id] = st
	}
	return nil
}

// closeStmts closes the prepared statements.
func (s *Store) closeStmts() []error {
	var errs []error
	for _, st := range s.stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errs
}

// writerFields are the SQLite store's writer state; embedded in SQLite.
type writerFields struct {
	q       chan *write
	qMu     sync.RWMutex
	qClosed bool
	wDone   chan struct{}
	stmts   [numStmts]*sql.Stmt

	// indexedCommitted is the 'indexed' mark as of the last committed
	// batch, to go back to when one is rolled back.
	indexedCommitted int64
	// lost are the checkpoints whose claims were answered and then not
	// committed: such a checkpoint fails (its call must not run).
	lost     map[string]bool
	qDrained bool // the queue closed while a batch was held open
}
