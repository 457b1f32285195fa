package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentreach/reach/internal/store/sqlcore"
)

// The PostgreSQL store writes through the writer of internal/store/sqlcore,
// as SQLite's does: one goroutine takes every write queued, and commits
// them together. This file is the engine under it. Each write is one
// statement (a function of the schema where it needs more than one step),
// so a batch is sent as one pipeline: the statements and one Sync, which
// PostgreSQL runs as one implicit transaction, committed at the Sync, in
// one round trip. A batch that holds the claim of a checkpointed call is an
// explicit transaction instead: the claims are answered when their round
// comes back, the writer holds the transaction open a little (linger) for
// their "executing" checkpoints, and sends those with the COMMIT, so that
// the call waits for one commit that holds both. Statements are prepared
// once per connection (pgx's statement cache).

// engine is the Store as sqlcore.Engine.
type engine struct{ p *Store }

// Begin implements sqlcore.Engine: a connection of the pool, for one
// round (and an explicit transaction if asked).
func (e engine) Begin(explicit bool) (sqlcore.Tx, error) {
	p := e.p
	ctx, cancel := context.WithTimeout(context.Background(), p.o.WriteTimeout)
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", p.where, err)
	}
	r := &round{p: p, ctx: ctx, cancel: cancel, conn: conn, explicit: explicit}
	if explicit {
		r.control("BEGIN")
	}
	return r, nil
}

// Sequential implements sqlcore.Engine: statements are sent together.
func (engine) Sequential() bool { return false }

// Resend implements sqlcore.Engine: a connection that failed before
// anything was sent is replaced, and the batch sent again.
func (engine) Resend(err error) bool { return pgconn.SafeToRetry(err) }

// Gather implements sqlcore.Engine: a batch of queued writes commits at
// once, so that the other instances see a call's end without delay.
func (engine) Gather() time.Duration { return 0 }

// Hold implements sqlcore.Engine: a batch is not held for the calls in
// flight. A commit's cost here is the server's round trip and its WAL
// flush, during which the writer's queue grows by itself; a hold's
// saving, the gateway's CPU per commit, was measured on SQLite only.
func (engine) Hold() time.Duration { return 0 }

// round is the pipeline of one batch: the statements added since the last
// Flush, on the batch's connection.
type round struct {
	p        *Store
	ctx      context.Context
	cancel   context.CancelFunc
	conn     *pgxpool.Conn
	explicit bool
	b        pgx.Batch
	items    []item
	reading  bool // the results of a round are read: nothing may be added
	sent     bool // a pipeline of the transaction was sent (an explicit one's)
	handed   bool // the transaction takes handedLockSQL (see addHandedLock)
}

// item reads the result of one statement of a round: w's (nil for BEGIN
// and COMMIT), by exec (rows affected) or rows.
type item struct {
	w    *sqlcore.Write
	exec func(n int64) error
	rows func(rows sqlcore.Rows) error
}

// Has implements sqlcore.Batch.
func (r *round) Has(id sqlcore.Stmt) bool { return statementSQL[id] != "" }

// add queues statement id, unless the engine has none.
func (r *round) add(w *sqlcore.Write, id sqlcore.Stmt, args []any, it item) {
	if !r.Has(id) {
		return
	}
	if r.reading {
		// The engine's statements answer in one: sqlcore adds a second one
		// only where a first has none (see sqlcore.Engine.Sequential).
		w.Fail(fmt.Errorf("statement %d follows another's result, which PostgreSQL's pipeline cannot do", id))
		return
	}
	if handedStmt[id] && !r.handed {
		r.addHandedLock()
	}
	r.b.Queue(statementSQL[id], args...)
	r.items = append(r.items, it)
}

// addHandedLock takes handedLockSQL in the round's transaction before its
// first statement that locks records of handed_tasks: at the head of the
// transaction when nothing of it was sent yet (the pipeline of an
// implicit transaction is the transaction; an explicit one's first
// pipeline follows its BEGIN), so the transaction waits for it holding no
// lock; else before the statement (a write that joined an explicit
// transaction held open for its checkpoints: the writes of handed tasks
// are Apart, and never join one, so this is only a guard).
func (r *round) addHandedLock() {
	r.handed = true
	q := &pgx.QueuedQuery{SQL: handedLockSQL}
	at := len(r.b.QueuedQueries)
	if !r.sent {
		at = 0
		if r.explicit {
			at = 1 // after BEGIN
		}
	}
	r.b.QueuedQueries = slices.Insert(r.b.QueuedQueries, at, q)
	r.items = slices.Insert(r.items, at, item{exec: func(int64) error { return nil }})
}

// Exec implements sqlcore.Batch.
func (r *round) Exec(w *sqlcore.Write, id sqlcore.Stmt, args []any, fn func(n int64) error) {
	if fn == nil {
		fn = func(int64) error { return nil }
	}
	r.add(w, id, args, item{w: w, exec: fn})
}

// Query implements sqlcore.Batch.
func (r *round) Query(w *sqlcore.Write, id sqlcore.Stmt, args []any, fn func(rows sqlcore.Rows) error) {
	r.add(w, id, args, item{w: w, rows: fn})
}

// control queues BEGIN or COMMIT.
func (r *round) control(sql string) {
	r.b.Queue(sql)
	r.items = append(r.items, item{exec: func(int64) error { return nil }})
}

// Flush implements sqlcore.Tx: it sends the round.
func (r *round) Flush() (*sqlcore.Write, error) {
	at, err := r.run()
	r.b, r.items = pgx.Batch{}, nil
	if err != nil {
		return at, fmt.Errorf("writing to PostgreSQL at %s: %w", r.p.where, err)
	}
	return nil, nil
}

// Commit implements sqlcore.Tx: what is left, with the COMMIT of an
// explicit transaction (an implicit one committed at its round's Sync).
func (r *round) Commit() (*sqlcore.Write, error) {
	if r.explicit {
		r.control("COMMIT")
	}
	at, err := r.Flush()
	if err == nil {
		r.Rollback() // nothing to roll back: the connection goes back to the pool
	}
	return at, err
}

// Rollback implements sqlcore.Tx: the connection goes back to the pool,
// which closes it instead of reusing it if a transaction stays open on it.
func (r *round) Rollback() {
	if r.conn != nil {
		r.conn.Release()
		r.cancel()
		r.conn = nil
	}
}

// run sends the round and reads its results, each by its callback: an
// error a callback returns is its write's; an error of the server or the
// connection is returned, with the write whose statement failed (nil for
// none, or BEGIN or COMMIT).
func (r *round) run() (*sqlcore.Write, error) {
	if len(r.items) == 0 {
		return nil, nil
	}
	r.reading, r.sent = true, true
	defer func() { r.reading = false }()
	br := r.conn.SendBatch(r.ctx, &r.b)
	for _, it := range r.items {
		var err error
		if it.rows != nil {
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				cerr := it.rows(rows)
				rows.Close()
				if err = rows.Err(); err == nil && cerr != nil {
					it.w.Fail(cerr)
				}
			}
		} else {
			var ct pgconn.CommandTag
			if ct, err = br.Exec(); err == nil {
				if cerr := it.exec(ct.RowsAffected()); cerr != nil && it.w != nil {
					it.w.Fail(cerr)
				}
			}
		}
		if err != nil {
			br.Close()
			return it.w, err
		}
	}
	return nil, br.Close()
}

// reader is the pool as sqlcore.Reader.
type reader struct{ pool *pgxpool.Pool }

func (r reader) Query(ctx context.Context, q string, args ...any) (sqlcore.Rows, error) {
	rows, err := r.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// dialect is how PostgreSQL binds and reads what sqlcore's reads need.
var dialect = sqlcore.Dialect{
	IndexReady: `SELECT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass($1::text) AND indisvalid)`,
	Text: func(b []byte) any {
		if len(b) == 0 {
			return nil
		}
		return b
	},
	Doc:         func(b []byte) any { return string(b) },
	Key:         func(k string) any { return []byte(k) },
	List:        func(l []string) any { return l },
	AnyOf:       func(col, p string) string { return col + ` = ANY(` + p + `)` },
	FrameSelect: `SELECT request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, owner, stack, entities FROM frames`,
	FrameOrder:  `started, seq`,
	// The event is read as text: json keeps the bytes as written.
	AuditSelect:      `SELECT seq, time, request, event::TEXT, prev_hash, hash FROM audit `,
	CheckpointSelect: `SELECT seq, hash, time FROM checkpoints`,
	// The head of the one chain every instance appends to (see appendAudit).
	AuditHead: `SELECT seq, hash FROM audit_head WHERE id = 1`,
}

// statementSQL is the SQL of the writer's statements: sqlcore's shared
// ones, and PostgreSQL's own where one statement (a function of the
// schema, a CTE) does what SQLite does in two.
var statementSQL = statements()

func statements() []string {
	q := sqlcore.Shared()
	// A checkpoint a recovery marked (cancelled, interrupted: it may have
	// run) is not overwritten by its call's end: the life that ran it, taken
	// for dead, may go on and end it (failed, held back by its lease), and
	// the mark is what the others acted on.
	q[sqlcore.StPutFrame] = `INSERT INTO frames
	(parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, request, frame, owner, stack, entities)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
	ON CONFLICT (request, frame) DO UPDATE SET parent = excluded.parent, kind = excluded.kind,
		name = excluded.name, call_id = excluded.call_id, idem_key = excluded.idem_key,
		state = excluded.state, args = excluded.args, undo = excluded.undo, error = excluded.error,
		started = excluded.started, updated = excluded.updated, owner = excluded.owner,
		stack = coalesce(excluded.stack, frames.stack), entities = coalesce(excluded.entities, frames.entities)
	WHERE NOT (frames.state = 'cancelled' AND frames.error LIKE '{"code":"interrupted"%' AND excluded.state <> 'cancelled')`
	q[sqlcore.StPutClaimedFrame] = `INSERT INTO frames
	(parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, request, frame, owner, stack, entities)
	SELECT $1::TEXT, $2::TEXT, $3::TEXT, $4::TEXT, $5::BYTEA, $6::TEXT, $7::TEXT, $8::TEXT, $9::TEXT, $10::BIGINT, $11::BIGINT,
		$12::TEXT, $13::TEXT, $19::TEXT, $20::TEXT, $21::TEXT
	WHERE EXISTS (SELECT 1 FROM idempotency WHERE key = $14 AND owner = $15 AND claimed = $16 AND request = $17 AND frame = $18
		AND state = 'claimed')
	ON CONFLICT (request, frame) DO UPDATE SET parent = excluded.parent, kind = excluded.kind,
		name = excluded.name, call_id = excluded.call_id, idem_key = excluded.idem_key,
		state = excluded.state, args = excluded.args, undo = excluded.undo, error = excluded.error,
		started = excluded.started, updated = excluded.updated, owner = excluded.owner,
		stack = coalesce(excluded.stack, frames.stack), entities = coalesce(excluded.entities, frames.entities)
	WHERE NOT (frames.state = 'cancelled' AND frames.error LIKE '{"code":"interrupted"%' AND excluded.state <> 'cancelled')`
	q[sqlcore.StUpdateFrame] = ""
	q[sqlcore.StEndExecutingOwned] = `UPDATE frames SET state = $1, undo = $2, error = $3, updated = $4
	WHERE request = $5 AND frame = $6 AND state = 'executing' AND owner = $7`
	// With the claim, whether the cut-off write $8 (reach.CutOffStore) is
	// unexpired at the claim: the index lookup in this statement, not a
	// round trip of the call's own ("" for none: not looked up).
	// A claim with a cut-off key keeps it, and its root request ($10),
	// while it is held, and reads the oldest other claim of it by a live
	// owner: an identical keyless write in flight (reach_claim_cut).
	q[sqlcore.StIdemClaim] = `SELECT o_claimed, o_owner, o_state, o_args, o_request, o_frame, o_result, o_at, o_expires,
		CASE WHEN $8 = '' THEN false ELSE EXISTS (SELECT 1 FROM cut_offs WHERE key = $8 AND expires > $9) END,
		o_fl_root, o_fl_at, o_fl_request
	FROM reach_claim_cut($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), $10)`
	q[sqlcore.StIdemGet] = "" // reach_claim returns the record that holds the key
	q[sqlcore.StDeadTake] = `WITH t AS (UPDATE dead_letters SET state = $1, updated = $2, taker = $5, taken = $2 WHERE id = $3 AND state = $4
		RETURNING ` + sqlcore.DeadColumns + `)
	SELECT true, ` + sqlcore.DeadColumns + ` FROM t
	UNION ALL SELECT false, ` + sqlcore.DeadColumns + ` FROM dead_letters WHERE id = $3 AND NOT EXISTS (SELECT 1 FROM t)`
	q[sqlcore.StDeadGet] = "" // StDeadTake returns the dead letter it did not take
	q[sqlcore.StHandedClaim] = handedClaimSQL
	q[sqlcore.StHandedSweep] = handedSweepSQL
	q[sqlcore.StHandedOthers] = handedOthersSQL
	q[sqlcore.StHandedTrim] = handedTrimSQL
	q[sqlcore.StLedgerDebit] = `SELECT o_ok, o_turns, o_calls, o_tokens, o_cost FROM reach_debit($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	// The writes of approvals wake the other instances' queues (see Watch).
	q[sqlcore.StApprovalInsert] = `WITH a AS (INSERT INTO approvals (id, key, alt, status, version, created, expires, updated, data)
		VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id)
	SELECT pg_notify('` + notifyChannel + `', '` + notifyApproval + `' || id) FROM a`
	q[sqlcore.StApprovalUpdate] = `WITH a AS (UPDATE approvals SET key = $1, alt = $2, status = $3, version = version + 1, created = $4, expires = $5,
		updated = $6, data = $7 WHERE id = $8 AND version = $9 RETURNING id)
	SELECT pg_notify('` + notifyChannel + `', '` + notifyApproval + `' || id) FROM a`
	// The end of an MCP session's record wakes the other instances, each of
	// which ends the session if it has it in memory (a client's DELETE on
	// one instance, or its idle gap, ends it on all).
	q[sqlcore.StSessionDelete] = `WITH d AS (DELETE FROM sessions WHERE hash = $1 RETURNING hash)
	SELECT pg_notify('` + notifyChannel + `', '` + notifySession + `' || hash) FROM d`
	q[sqlcore.StSessionSweep] = `WITH d AS (DELETE FROM sessions WHERE used < $1 RETURNING hash)
	SELECT pg_notify('` + notifyChannel + `', '` + notifyIdle + `' || hash) FROM d`
	q[sqlcore.StEntityBump] = `WITH v AS (UPDATE store_meta SET value = value + 1 WHERE key = 'entity_version' RETURNING value),
	e AS (INSERT INTO entities (name, version) SELECT n, v.value FROM v, unnest($1::TEXT[]) AS n
		ON CONFLICT (name) DO UPDATE SET version = excluded.version)
	SELECT value FROM v`
	q[sqlcore.StEntitySet] = "" // StEntityBump writes them
	q[sqlcore.StEntityClaim] = `SELECT o_version, o_stale FROM reach_claim_entities($1::TEXT[], $2::BIGINT[], $3::BOOLEAN[])`
	sqlcore.RetentionPostgres(q)
	return q
}
