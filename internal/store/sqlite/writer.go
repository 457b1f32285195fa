package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/store/sqlcore"
	"github.com/agentreach/reach/internal/strview"
)

// The SQLite store writes through the writer of internal/store/sqlcore:
// one goroutine commits whatever is queued in one transaction of the one
// write connection (group commit). This file is the engine under it: a
// batch runs each statement as it is added, with the statements prepared
// once on the write connection, and a callback's statement right after
// the callback.

var bg = context.Background()

// engine is the Store as sqlcore.Engine.
type engine struct{ s *Store }

// Begin implements sqlcore.Engine: an IMMEDIATE transaction on the write
// connection.
func (e engine) Begin(bool) (sqlcore.Tx, error) {
	if _, err := e.s.exec(e.s.txBegin, nil); err != nil {
		e.s.wrote1(err)
		return nil, fmt.Errorf("beginning a write: %w", err)
	}
	return &batch{s: e.s}, nil
}

// Sequential implements sqlcore.Engine: a statement runs when it is added.
func (engine) Sequential() bool { return true }

// Resend implements sqlcore.Engine: a failed batch is not sent again as it
// was.
func (engine) Resend(error) bool { return false }

// Gather implements sqlcore.Engine: queued writes alone wait up to 5 ms
// for more (a call's end for the next call's claim), as the audit log's
// events do. A variable only so that a test can change it.
func (engine) Gather() time.Duration { return Gather }

// Gather is what engine.Gather returns.
var Gather = 5 * time.Millisecond

// Hold implements sqlcore.Engine: under a crowd of calls in flight, a
// batch that a caller waits for is held open up to 5 ms for their writes,
// so that one commit carries many calls (docs/STATE.md). A variable only
// so that a test can change it.
func (engine) Hold() time.Duration { return Hold }

// Hold is what engine.Hold returns.
var Hold = 5 * time.Millisecond

// batch is the transaction of one group commit and its statements.
type batch struct {
	s    *Store
	rows int // rows written, for the checkpointer

	fatal error          // a database error: the batch is rolled back
	at    *sqlcore.Write // the write whose statement failed
	inFn  bool           // a callback runs: statements it adds wait for it
	next  []func()       // what it added
}

// dbError is an error of the database itself while a write of the audit
// log ran: the batch is rolled back, since the transaction may not be
// usable any more.
type dbError struct{ err error }

func (e *dbError) Error() string { return e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }

// stmt returns the prepared statement id: it runs in the batch's
// transaction, which its connection holds.
func (b *batch) stmt(id stmtID) (*sql.Stmt, error) {
	if st := b.s.stmts[id]; st != nil {
		return st, nil
	}
	// Prepared when first used: only the statements that return rows run
	// through database/sql (the others run on the driver's own, exec), and
	// most of them are rare (a key found held, a ledger's debit, ...).
	st, err := b.s.wc.PrepareContext(bg, statementSQL[id])
	if err != nil {
		return nil, fmt.Errorf("preparing statement %d: %w", id, err)
	}
	b.s.stmts[id] = st
	return st, nil
}

// Has implements sqlcore.Batch.
func (b *batch) Has(id sqlcore.Stmt) bool { return statementSQL[id] != "" }

// fail records a database error of w's: nothing more runs in the batch.
func (b *batch) fail(w *sqlcore.Write, err error) {
	if b.fatal == nil {
		b.s.wrote1(err)
		b.fatal, b.at = storageError(err), w
	}
}

// Exec implements sqlcore.Batch.
func (b *batch) Exec(w *sqlcore.Write, id sqlcore.Stmt, args []any, fn func(n int64) error) {
	if b.inFn { // after the callback that runs
		b.next = append(b.next, func() { b.Exec(w, id, args, fn) })
		return
	}
	if b.fatal != nil || !b.Has(id) {
		return
	}
	var n int64
	var err error
	if id == sqlcore.StIdemSweepSome { // the span it sweeps
		if _, err = b.affected(stKeysSweepFrom); err == nil {
			_, err = b.affected(stKeysSweepTo)
		}
	}
	if err == nil {
		n, err = b.affected(stmtID(id), args...)
	}
	if err == nil && n > 0 && deletesRecords(id) {
		_, err = b.affected(stClaimsLower)
	}
	if err == nil && n > 0 && id == sqlcore.StRetainFrames {
		_, err = b.affected(stFramesLower) // retention.go
	}
	if err != nil {
		b.fail(w, err)
		return
	}
	if fn != nil {
		b.inFn = true
		err := fn(n)
		b.inFn = false
		b.called(w, err, nil)
	}
}

// Query implements sqlcore.Batch.
func (b *batch) Query(w *sqlcore.Write, id sqlcore.Stmt, args []any, fn func(rows sqlcore.Rows) error) {
	if b.inFn { // after the callback that runs
		b.next = append(b.next, func() { b.Query(w, id, args, fn) })
		return
	}
	if b.fatal != nil || !b.Has(id) {
		return
	}
	st, err := b.stmt(stmtID(id))
	if err != nil {
		b.fail(w, err)
		return
	}
	rows, err := st.QueryContext(bg, b.s.bound(stmtID(id), args)...)
	if err != nil {
		b.fail(w, err)
		return
	}
	b.rows++
	b.inFn = true
	err = fn(Rows{rows})
	b.inFn = false
	b.called(w, err, rows)
}

// called takes the outcome of a callback of w, err, closes its rows (if
// not nil), and then runs what the callback added.
func (b *batch) called(w *sqlcore.Write, err error, rows *sql.Rows) {
	if rows != nil {
		rows.Close()
		if rerr := rows.Err(); rerr != nil {
			b.fail(w, rerr)
			b.next = nil
			return
		}
	}
	if err != nil {
		w.Fail(err)
	}
	next := b.next
	b.next = nil
	for _, f := range next {
		f()
	}
}

// Flush implements sqlcore.Tx: the statements ran as they were added.
func (b *batch) Flush() (*sqlcore.Write, error) { return b.at, b.fatal }

// Commit implements sqlcore.Tx.
func (b *batch) Commit() (*sqlcore.Write, error) {
	if b.fatal != nil {
		return b.at, b.fatal
	}
	if _, err := b.s.exec(b.s.txCommit, nil); err != nil {
		// A COMMIT that failed may leave the transaction open: the batch
		// is rolled back (Rollback).
		b.s.wrote1(err)
		return nil, fmt.Errorf("committing: %w", storageError(err))
	}
	b.s.wrote1(nil)
	b.s.wrote(b.rows)
	return nil, nil
}

// Rollback implements sqlcore.Tx.
func (b *batch) Rollback() {
	// An error here is that of a transaction already ended (SQLite rolls
	// some failed statements back itself): nothing is open after it.
	b.s.exec(b.s.txRollback, nil)
	b.s.rolledBack()
}

// affected runs statement id and returns how many rows it changed.
func (b *batch) affected(id stmtID, args ...any) (int64, error) {
	if len(args) < b.s.nparams[id] {
		return 0, &dbError{fmt.Errorf("statement %d: %d arguments for %d parameters", id, len(args), b.s.nparams[id])}
	}
	n, err := b.s.exec(b.s.raw[id], b.s.bound(id, args))
	if err != nil {
		return 0, &dbError{err}
	}
	b.rows += int(n)
	return n, nil
}

// rawStmt is a prepared statement of the driver's, as exec runs it.
type rawStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// exec runs st, a statement of the writer's, with args, on the driver's
// connection, and returns how many rows it changed. database/sql's
// (*sql.Stmt).ExecContext would check and convert each argument anew (the
// writer's are already what a driver takes, or are converted as
// database/sql converts them: see driverValue), allocate them a slice,
// and wrap the result, every statement. The connection is the writer's
// alone, and is locked while st runs (Raw), as database/sql locks it.
// Only the writer calls exec.
func (s *Store) exec(st rawStmt, args []any) (int64, error) {
	nv := s.nv[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			clear(nv) // those converted before, too
			return 0, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	var res driver.Result
	err := s.wc.Raw(func(any) error {
		var err error
		res, err = st.ExecContext(bg, nv)
		return err
	})
	clear(nv) // holds no argument past the statement
	s.nv = nv[:0]
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// driverValue returns v as the driver binds it: as it is if it is a
// driver.Value already, else converted as database/sql converts it (an
// int to an int64, a driver.Valuer to its value, ...).
func driverValue(v any) (driver.Value, error) {
	switch v.(type) {
	case nil, string, int64, []byte, bool, float64, time.Time:
		return v, nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}

// queryInt runs the query statement id, of no argument, whose one row is
// one integer (an aggregate: the audit log's head, its index's mark), on
// the driver's connection, as exec runs a statement (database/sql's
// QueryRow allocates about ten times for it). A database error is a
// *dbError; no row is sql.ErrNoRows.
func (b *batch) queryInt(id stmtID) (int64, error) {
	var v int64
	var dest [1]driver.Value
	err := b.s.wc.Raw(func(any) error {
		rows, err := b.s.raw[id].QueryContext(bg, nil)
		if err != nil {
			return err
		}
		err = rows.Next(dest[:])
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		n, ok := dest[0].(int64)
		if !ok {
			return fmt.Errorf("statement %d returned %T, not an integer", id, dest[0])
		}
		v = n
		return nil
	})
	if errors.Is(err, io.EOF) {
		return 0, sql.ErrNoRows
	}
	if err != nil {
		return 0, &dbError{err}
	}
	return v, nil
}

// run runs f, a write of this package's own (the audit log's), in the
// batch: an error of the database it returns is the batch's, any other the
// write's.
func (b *batch) run(w *sqlcore.Write, f func() error) {
	if b.fatal != nil {
		return
	}
	err := f()
	if de := (*dbError)(nil); errors.As(err, &de) {
		b.fail(w, de.err)
	} else if err != nil {
		w.Fail(err)
	}
}

// Rows are *sql.Rows as sqlcore.Rows.
type Rows struct{ *sql.Rows }

// Close implements sqlcore.Rows.
func (r Rows) Close() { r.Rows.Close() }

// reader is the read pool, or a read transaction, as sqlcore.Reader.
type reader struct {
	db interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (r reader) Query(ctx context.Context, q string, args ...any) (sqlcore.Rows, error) {
	rows, err := r.db.QueryContext(ctx, readSQL(q), args...)
	if err != nil {
		return nil, err
	}
	return Rows{rows}, nil
}

// readSQLs holds the reads' SQL as positional writes it, by sqlcore's.
var readSQLs sync.Map

// readSQL returns sqlcore's read q as SQLite binds it (positional).
func readSQL(q string) string {
	if p, ok := readSQLs.Load(q); ok {
		return p.(string)
	}
	p := positional(q)
	readSQLs.Store(q, p)
	return p
}

// dialect is how SQLite binds and reads what sqlcore's reads need.
var dialect = sqlcore.Dialect{
	AuditField: auditField,
	IndexReady: `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = $1)`,
	Text: func(b []byte) any {
		if len(b) == 0 {
			return nil
		}
		return string(b)
	},
	Doc: func(b []byte) any { return strview.Of(b) },
	Key: func(k string) any { return k },
	List: func(l []string) any {
		b, _ := json.Marshal(l)
		return string(b)
	},
	AnyOf: func(col, p string) string { return col + ` IN (SELECT value FROM json_each(` + p + `))` },
	// SQLite keeps no owner, stack or entities: one instance owns every
	// frame, and keeps entity versions in memory.
	FrameSelect: `SELECT request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, '', NULL, NULL FROM frames`,
	FrameOrder:  `started, ifnull(origin, seq)`, // the first place of a frame put open again (migration 8)
	// The columns are read through casts, so that a row edited by hand to
	// hold a value of another type is still read (and then fails
	// verification) rather than breaking the scan.
	AuditSelect: `SELECT seq, ifnull(cast(time AS INTEGER), 0), ifnull(cast(request AS TEXT), ''),
	ifnull(cast(event AS BLOB), x''), ifnull(cast(prev_hash AS BLOB), x''), ifnull(cast(hash AS BLOB), x'')
	FROM audit `,
	CheckpointSelect: `SELECT seq, ifnull(cast(hash AS BLOB), x''), ifnull(cast(time AS INTEGER), 0) FROM checkpoints`,
	// The claims above their mark and the held ones (frames.go).
	Claims: `rowid IN (SELECT claim FROM idempotency_held UNION ALL
	SELECT rowid FROM idempotency WHERE rowid > (SELECT value FROM store_meta WHERE key = 'claims_settled'))
	AND state = 'claimed'`,
	AuditHead: `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`,
}

// stmtID names a prepared statement of the writer: sqlcore's, then the
// audit log's.
type stmtID = sqlcore.Stmt

const (
	stAuditHead stmtID = sqlcore.NumStmts + iota
	stAuditInsert128
	stAuditInsert16
	stAuditInsert1
	stAuditCheckpoint
	stAuditIndexed
	stAuditIndexRow
	stAuditPass
	stAuditSetIndexed
	stAuditScanFrom
	stFramesHold
	stFramesSettled
	stFramesUnhold
	stClaimsHold
	stClaimsSettled
	stClaimsUnhold
	stClaimsLower
	stFramesLower
	stFramesList
	stKeysSweepFrom
	stKeysSweepTo
	stResultRoom
	stAuditOnce
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

// statementSQL is the SQL of every prepared statement of the writer.
var statementSQL = statements()

// statements returns the SQL of every prepared statement of the writer:
// sqlcore's shared ones, SQLite's own where it runs them otherwise (in two
// statements where PostgreSQL has a function), and the audit log's.
func statements() []string {
	q := append(sqlcore.Shared(), make([]string, numStmts-sqlcore.NumStmts)...)
	retainSel := sqlcore.RetainSelect()
	// A frame that is not final is written as a new row, at the end of the
	// table (one written before is moved there, keeping its first place in
	// origin, migration 8): above the mark of the settled frames
	// (frames.go), where the open frames are looked for. A final one is
	// updated in place (StUpdateFrame).
	q[sqlcore.StPutFrame] = `INSERT INTO frames
	(parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, request, frame)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
	ON CONFLICT (frame, request) DO UPDATE SET seq = (SELECT max(seq) + 1 FROM frames), origin = ifnull(frames.origin, frames.seq),
		parent = excluded.parent, kind = excluded.kind, name = excluded.name, call_id = excluded.call_id,
		idem_key = excluded.idem_key, state = excluded.state, args = excluded.args, undo = excluded.undo,
		error = excluded.error, started = excluded.started, updated = excluded.updated`
	// A request's frames (migration 20): those listed, by the index of
	// their request, and those above the mark not listed yet.
	q[sqlcore.StRetainFrames] = `DELETE FROM frames WHERE rowid IN (SELECT rowid FROM frames WHERE listed AND request IN (` + retainSel + `)
	UNION ALL SELECT rowid FROM frames WHERE rowid > (SELECT value FROM store_meta WHERE key = 'frames_settled') AND NOT listed
		AND request IN (` + retainSel + `))`
	q[sqlcore.StUpdateFrame] = `UPDATE frames SET parent = $1, kind = $2, name = $3, call_id = $4, idem_key = $5, state = $6, args = $7,
		undo = $8, error = $9, started = $10, updated = $11 WHERE request = $12 AND frame = $13`
	// The end of a checkpoint written before (store.Frame.EndOnly): the
	// columns that change, bound and converted, not the seven that do not.
	q[sqlcore.StEndFrame] = `UPDATE frames SET state = $1, undo = $2, error = $3, updated = $4 WHERE request = $5 AND frame = $6`
	// A claim in one statement: a key with no record, or whose result has
	// expired (as of the claim), is claimed; any other record stays, and
	// is read (StIdemGet). A claim is a row at the end of the table, above
	// the mark of the settled claims (frames.go): a new one, or the
	// expired record it takes, moved there. It keeps room for its result
	// (migration 17), which its completion gives back (StIdemComplete).
	q[sqlcore.StIdemClaim] = `INSERT INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires, room)
	VALUES ($1, $2, 'claimed', $3, $4, $5, NULL, $6, $7, zeroblob((SELECT value FROM store_meta WHERE key = 'result_room')))
	ON CONFLICT (key) DO UPDATE SET rowid = (SELECT max(rowid) + 1 FROM idempotency), owner = excluded.owner, state = 'claimed', args = excluded.args,
		request = excluded.request, frame = excluded.frame, result = NULL, claimed = excluded.claimed, expires = excluded.expires, room = excluded.room
	WHERE idempotency.state = 'done' AND idempotency.expires <> 0 AND idempotency.expires <= excluded.claimed`
	// The result takes the room its claim kept: the row is rewritten in
	// its place as long as the result is no larger than the room.
	q[sqlcore.StIdemComplete] = `UPDATE idempotency SET state = 'done', result = $1, expires = $2, room = NULL
	WHERE key = $3 AND owner = $4 AND state = 'claimed'`
	// A claim a recovery or an operator settles (SettleClaim, SettleKey)
	// gives its room back too: a settled record kept its zeroes until its
	// result expired.
	q[sqlcore.StIdemSettleUpdate] = `UPDATE idempotency SET state = 'done', result = $1, expires = $2, room = NULL
	WHERE key = $3 AND owner = $4 AND claimed = $5 AND state = 'claimed'`
	q[sqlcore.StIdemSettleKey] = `INSERT INTO idempotency (key, owner, state, result, claimed, expires) VALUES ($1, '', 'done', $2, $3, $4)
	ON CONFLICT (key) DO UPDATE SET state = 'done', result = excluded.result, expires = excluded.expires, room = NULL`
	q[sqlcore.StDeadTake] = `UPDATE dead_letters SET state = $1, updated = $2, taker = $5, taken = $2 WHERE id = $3 AND state = $4
		RETURNING true, ` + sqlcore.DeadColumns
	// One conditional update: the caps ($6 to $9, zero for none) are
	// compared with the sums in the same statement that writes them. A
	// first debit is checked against them by the caller.
	q[sqlcore.StLedgerDebit] = `INSERT INTO ledger (request, turns, tool_calls, tokens, cost) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (request) DO UPDATE SET turns = turns + excluded.turns, tool_calls = tool_calls + excluded.tool_calls,
		tokens = tokens + excluded.tokens, cost = cost + excluded.cost
	WHERE ($6 = 0 OR turns + excluded.turns <= $6) AND ($7 = 0 OR tool_calls + excluded.tool_calls <= $7)
		AND ($8 = 0 OR tokens + excluded.tokens <= $8) AND ($9 = 0 OR cost + excluded.cost <= $9)
	RETURNING true, turns, tool_calls, tokens, cost`
	q[sqlcore.StApprovalInsert] = `INSERT INTO approvals (id, key, alt, status, version, created, expires, updated, data)
	VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id`
	q[sqlcore.StApprovalUpdate] = `UPDATE approvals SET key = $1, alt = $2, status = $3, version = version + 1, created = $4, expires = $5,
		updated = $6, data = $7 WHERE id = $8 AND version = $9 RETURNING id`
	q[sqlcore.StEntityBump] = `UPDATE store_meta SET value = value + 1 WHERE key = 'entity_version' RETURNING value`
	q[sqlcore.StEntitySet] = `INSERT INTO entities (name, version) SELECT value, $2 FROM json_each($1) WHERE true
	ON CONFLICT (name) DO UPDATE SET version = excluded.version`
	q[sqlcore.StEntityCAS] = `UPDATE entities SET version = $1 WHERE name = $2 AND version = $3`
	q[sqlcore.StEntityCreate] = `INSERT INTO entities (name, version) VALUES ($2, $1) ON CONFLICT (name) DO NOTHING`
	q[stAuditHead] = `SELECT ifnull(max(seq), 0) FROM audit`
	row := "(?" + strings.Repeat(", ?", auditColumnCount-1) + ")"
	for _, c := range auditChunks {
		// OR ROLLBACK: a taken seq ends the whole transaction, which spares
		// SQLite a statement journal for the multi-row INSERT. The head is
		// checked first in the same transaction, so it never happens here.
		q[c.id] = `INSERT OR ROLLBACK INTO audit (` + auditColumns + `) VALUES ` + row + strings.Repeat(", "+row, c.rows-1)
	}
	q[stAuditCheckpoint] = `INSERT OR IGNORE INTO checkpoints (seq, hash, time) VALUES (?, ?, ?)`
	q[stAuditOnce] = `INSERT INTO audit_once (once, seq) VALUES (?, ?)`
	q[stAuditIndexed] = `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`
	q[stAuditIndexRow] = `INSERT INTO audit_requests (pass, request, seqs) VALUES (?, ?, ?)`
	q[stAuditPass] = `INSERT INTO audit_passes (pass, last) VALUES (?, ?)`
	q[stAuditSetIndexed] = `INSERT OR REPLACE INTO audit_meta (key, value) VALUES ('indexed', ?)`
	q[stAuditScanFrom] = `SELECT seq, request FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`
	q[stFramesHold] = `INSERT OR IGNORE INTO frames_held (frame) SELECT rowid FROM frames
	WHERE rowid > (SELECT value FROM store_meta WHERE key = 'frames_settled') AND state NOT IN ` + sqlcore.FinalStates
	// The frames above the mark enter the index of their request
	// (migration 20) as the mark moves past them: a commit's worth of
	// calls each entered a leaf of their own request's; a settling, with
	// thousands of frames, enters each request's leaf once.
	q[stFramesList] = `UPDATE frames SET listed = 1
	WHERE rowid > (SELECT value FROM store_meta WHERE key = 'frames_settled') AND NOT listed`
	q[stFramesSettled] = `UPDATE store_meta SET value = max(value, (SELECT ifnull(max(rowid), 0) FROM frames)) WHERE key = 'frames_settled'`
	q[stFramesUnhold] = `DELETE FROM frames_held WHERE NOT EXISTS
	(SELECT 1 FROM frames f WHERE f.rowid = frames_held.frame AND f.state NOT IN ` + sqlcore.FinalStates + `)`
	q[stClaimsHold] = `INSERT OR IGNORE INTO idempotency_held (claim) SELECT rowid FROM idempotency
	WHERE rowid > (SELECT value FROM store_meta WHERE key = 'claims_settled') AND state = 'claimed'`
	q[stClaimsSettled] = `UPDATE store_meta SET value = max(value, (SELECT ifnull(max(rowid), 0) FROM idempotency)) WHERE key = 'claims_settled'`
	q[stClaimsUnhold] = `DELETE FROM idempotency_held WHERE NOT EXISTS
	(SELECT 1 FROM idempotency i WHERE i.rowid = idempotency_held.claim AND i.state = 'claimed')`
	q[stClaimsLower] = `UPDATE store_meta SET value = (SELECT ifnull(max(rowid), 0) FROM idempotency)
	WHERE key = 'claims_settled' AND value > (SELECT ifnull(max(rowid), 0) FROM idempotency)`
	// The room a claim keeps (migration 17): the ninth decile of the
	// lengths of the last results recorded, up to 256 (the longest but a
	// tenth of them, the (n/10+1)th longest of n), or none if that is
	// over resultRoomMax (a room that most results would not fit in is
	// only written); as it was while fewer than 10 are recorded. It was
	// the 26th longest however many were recorded: of 30, one shorter
	// than all but four, and more pages split as their results came.
	q[stResultRoom] = `UPDATE store_meta SET value = ifnull((SELECT iif(l <= ` + strconv.Itoa(resultRoomMax) + `, l, 0)
	FROM (SELECT length(result) AS l, row_number() OVER (ORDER BY length(result) DESC) AS k, count(*) OVER () AS n
		FROM (SELECT result FROM idempotency WHERE state = 'done' AND result IS NOT NULL ORDER BY rowid DESC LIMIT 256))
	WHERE n >= 10 AND k = n / 10 + 1), value) WHERE key = 'result_room'`
	q[stFramesLower] = `UPDATE store_meta SET value = (SELECT ifnull(max(rowid), 0) FROM frames)
	WHERE key = 'frames_settled' AND value > (SELECT ifnull(max(rowid), 0) FROM frames)`
	// The sweep of expired results, a span at a time (migration 11: no
	// index of the results by expiry, which every completion entered, a
	// page more a commit). The span is sweepSpan rowids from the first
	// record after the span of the sweep before ('keys_sweep_from' to
	// 'keys_sweep_to' in store_meta): one seek, and the DELETE reads the
	// span's rows once. After the last record the span is empty and the
	// pass begins again from the first. A claim takes the next rowid, so a
	// sweep every 1,024 completions (store.IdempotencyOptions) looks at
	// some 8,192 records while about 1,024 are added: a pass goes round
	// the records while a seventh of their lifetime passes, and a result
	// is deleted within about a sixth of its TTL after it expired (until
	// then it is free to claim all the same). A gap of deleted records
	// at the start of a span is skipped.
	q[stKeysSweepFrom] = `UPDATE store_meta SET value = (SELECT value FROM store_meta WHERE key = 'keys_sweep_to') WHERE key = 'keys_sweep_from'`
	q[stKeysSweepTo] = `UPDATE store_meta SET value = ifnull((SELECT rowid FROM idempotency
	WHERE rowid > (SELECT value FROM store_meta WHERE key = 'keys_sweep_from') ORDER BY rowid LIMIT 1) + ` + strconv.Itoa(sweepSpan-1) + `, 0)
	WHERE key = 'keys_sweep_to'`
	q[sqlcore.StIdemSweepSome] = `DELETE FROM idempotency
	WHERE rowid > (SELECT value FROM store_meta WHERE key = 'keys_sweep_from') AND rowid <= (SELECT value FROM store_meta WHERE key = 'keys_sweep_to')
	AND state = 'done' AND expires <= $1 AND expires <> 0`
	for i := range q {
		q[i] = positional(q[i])
	}
	return q
}

// resultRoomMax is the most room a claim keeps for its result, a quarter
// of a page (migration 17): the room is written with every claim, and a
// longer result may not fit in the page anyway.
const resultRoomMax = 1024

// sweepSpan is how many rowids a queued sweep of expired results looks at
// (sqlcore.StIdemSweepSome).
const sweepSpan = 8192

// positional writes the parameters of q, $1, $2, ..., as ? when each
// stands once and in order: SQLite binds a named parameter ($1) by its
// name, which costs the driver an allocation a parameter and an execution,
// and a ? by its place. Otherwise it writes them ?1, ?2, ...: SQLite's
// numbered parameters, which every driver binds by their number (a $1
// would be bound by the place its name first stands in q).
func positional(q string) string {
	if p := numbered(q, false); p != q {
		return p
	}
	return numbered(q, true)
}

// numbered writes q's parameters $N as ? (bare, if each stands once and in
// order; q unchanged if not) or as ?N.
func numbered(q string, keep bool) string {
	var b strings.Builder
	next := 1
	for i := 0; i < len(q); i++ {
		if q[i] != '$' || i+1 == len(q) || q[i+1] < '0' || q[i+1] > '9' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		if keep {
			b.WriteString("?" + q[i+1:j])
		} else if n, _ := strconv.Atoi(q[i+1 : j]); n != next {
			return q
		} else {
			b.WriteByte('?')
		}
		next++
		i = j - 1
	}
	return b.String()
}

// numParams returns how many arguments q (as positional writes it) binds:
// its bare ?s, or its largest ?N.
func numParams(q string) int {
	bare, most := 0, 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		if j == i+1 {
			bare++
		} else if n, _ := strconv.Atoi(q[i+1 : j]); n > most {
			most = n
		}
		i = j - 1
	}
	return max(bare, most)
}

// prepareWriter takes the write connection for the writer, and prepares
// its statements on it.
func (s *Store) prepareWriter(ctx context.Context) error {
	wc, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("taking the write connection: %w", err)
	}
	s.wc = wc
	for id, q := range statementSQL {
		s.nparams[id] = numParams(q)
	}
	return wc.Raw(func(dc any) error {
		prep := func(q string) (rawStmt, error) {
			var st driver.Stmt
			var err error
			if p, ok := dc.(driver.ConnPrepareContext); ok {
				st, err = p.PrepareContext(ctx, q)
			} else {
				st, err = dc.(driver.Conn).Prepare(q)
			}
			if err != nil {
				return nil, fmt.Errorf("preparing %q: %w", q, err)
			}
			r, ok := st.(rawStmt)
			if !ok {
				st.Close()
				return nil, fmt.Errorf("preparing %q: the driver's statement %T has no ExecContext or QueryContext", q, st)
			}
			return r, nil
		}
		for id, q := range statementSQL {
			if q == "" {
				continue
			}
			if s.raw[id], err = prep(q); err != nil {
				return err
			}
		}
		for _, t := range []struct {
			st *rawStmt
			q  string
		}{{&s.txBegin, "BEGIN IMMEDIATE"}, {&s.txCommit, "COMMIT"}, {&s.txRollback, "ROLLBACK"}} {
			if *t.st, err = prep(t.q); err != nil {
				return err
			}
		}
		return nil
	})
}

// bound returns the arguments statement id binds: sqlcore passes both
// engines the same arguments, and some of them (PostgreSQL's) SQLite's
// statements do not use. (A driver may refuse more arguments than a
// statement has parameters.)
func (s *Store) bound(id stmtID, args []any) []any {
	if n := s.nparams[id]; len(args) > n {
		return args[:n]
	}
	return args
}

// closeStmts closes the prepared statements.
func (s *Store) closeStmts() []error {
	var errs []error
	for _, st := range s.stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.wc == nil {
		return errs
	}
	// The driver's, on the connection they were prepared on.
	errs = append(errs, s.wc.Raw(func(any) error {
		for _, st := range append(s.raw[:], s.txBegin, s.txCommit, s.txRollback) {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		return nil
	}))
	return errs
}

// rolledBack forgets what the writer keeps in memory about rows that a
// rolled-back batch wrote: the audit records kept for the next index pass
// (they are read back from the table instead).
func (s *Store) rolledBack() {
	s.recent = nil
	s.indexed.Store(s.indexedCommitted)
}

// auditField is the expression of an audit event's field, as audit_tenant
// (migration 18) indexes the tenant: NULL for an event that is not JSON
// (which ->> would refuse with an error, failing the whole statement).
func auditField(field string) string {
	return "(CASE WHEN json_valid(event) THEN event ->> '" + field + "' END)"
}
