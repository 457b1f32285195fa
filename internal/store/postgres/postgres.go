package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentreach/reach/internal/store"
)

// Options configure Open. A nil *Options means all
// defaults.
type Options struct {
	// MaxConns bounds the pool of connections (the writer's, the audit
	// log's and the readers'); if zero, 10. A pool_max_conns in the URL
	// wins.
	MaxConns int32
	// ConnectTimeout bounds one attempt to connect; if zero, 5s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds one batch of the writer (and one append to the
	// audit log): a database that does not answer fails the writes with an
	// error instead of holding their callers; if zero, 10s.
	WriteTimeout time.Duration
	// Logger reports the queued writes that failed; if nil, logs are
	// discarded.
	Logger *slog.Logger
	// NoMigrate leaves the schema as it is, for commands that only read
	// or check: a database newer than this binary is still refused, and
	// SchemaVersion says what it has (0 for none).
	NoMigrate bool
}

// Store is the store.Store on a PostgreSQL server, for several gateway
// instances that share one control plane (issue 17): the same tables as
// SQLite's, in PostgreSQL's types, through a pool of pgx connections.
// Writes go through one writer per store, which sends everything queued as
// one pipelined transaction (group commit, as SQLite's writer does), each
// write one statement (the claims and debits are functions of the schema),
// prepared once per connection. The audit log is appended in transactions
// of their own, which lock the head of the one chain that every instance
// appends to. Safe for concurrent use; any number of processes may open
// the same database.
type Store struct {
	pool  *pgxpool.Pool
	cfg   *pgxpool.Config
	where string // host:port/database, for messages (no credentials)
	log   *slog.Logger
	o     Options

	q        chan *pgWrite
	qMu      sync.RWMutex
	qClosed  bool
	qDrained bool
	wDone    chan struct{}
	lost     map[string]bool // as SQLite's writer: checkpoints whose claims were told and not committed

	batches      atomic.Int64
	queuedFailed atomic.Int64

	auditMu sync.Mutex // one append at a time from this process

	close    sync.Once
	closed   atomic.Bool
	stop     chan struct{} // closed by Close: ends the listener
	nameLost chan struct{} // closed when HoldInstance cannot take its name again (NameLost)
	bg       sync.WaitGroup
	lis      listener
}

var _ store.Store = (*Store)(nil)

// IsURL reports whether s names a PostgreSQL database
// (postgres:// or postgresql://), as the configuration's store: does.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the PostgreSQL database at url
// (postgres://USER@HOST:PORT/DB?sslmode=...), applies the schema
// migrations it lacks, and starts the writer. A server that cannot be
// reached fails at once, with an error that says where it tried.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxConns == 0 {
		o.MaxConns = 10
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("opening the PostgreSQL store: %w (want postgres://USER@HOST:PORT/DB?sslmode=...)", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = o.MaxConns
	}
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	cfg.HealthCheckPeriod = 5 * time.Second
	where := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))) + "/" + cfg.ConnConfig.Database
	p := &Store{cfg: cfg, where: where, log: o.Logger, o: o, stop: make(chan struct{})}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("opening the PostgreSQL store at %s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	err = p.pool.Ping(pctx)
	cancel()
	if err != nil {
		p.pool.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w; check the store: URL and that the server runs", where, err)
	}
	if o.NoMigrate {
		err = p.checkSchema(ctx)
	} else {
		err = p.migrate(ctx)
	}
	if err != nil {
		p.pool.Close()
		return nil, fmt.Errorf("opening the PostgreSQL store at %s: %w", where, err)
	}
	p.q = make(chan *pgWrite, writerQueue)
	p.lost = map[string]bool{}
	p.wDone = make(chan struct{})
	go p.writer()
	return p, nil
}

// Where returns the server and database the store uses (host:port/db),
// without credentials.
func (p *Store) Where() string { return p.where }

// Ping checks that the database answers.
func (p *Store) Ping(ctx context.Context) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	return p.pool.Ping(ctx)
}

// Close commits the writes queued, stops the listener and closes the
// pool. Later calls fail with ErrClosed.
func (p *Store) Close() error {
	p.close.Do(func() {
		p.qMu.Lock()
		p.qClosed = true
		close(p.q)
		p.qMu.Unlock()
		<-p.wDone
		p.closed.Store(true)
		close(p.stop)
		p.bg.Wait()
		p.pool.Close()
	})
	return nil
}

// pgMigrationLock is the advisory lock that serializes migrations.
const pgMigrationLock = 0x7265616368 // "reach"

// SchemaVersion returns the newest migration applied to the database (0
// for a database without reach's schema).
func (p *Store) SchemaVersion(ctx context.Context) (int, error) {
	if p.closed.Load() {
		return 0, store.ErrClosed
	}
	var v int
	err := p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return 0, nil
	}
	return v, err
}

// checkSchema refuses a database migrated by a newer binary.
func (p *Store) checkSchema(ctx context.Context) error {
	v, err := p.SchemaVersion(ctx)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // no schema_migrations: no schema yet
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if latest := latestMigration(); v > latest {
		return fmt.Errorf("the database has schema version %d, newer than this binary knows (%d): upgrade reach", v, latest)
	}
	return nil
}

// LatestSchema is the newest schema version this binary knows.
func (p *Store) LatestSchema() int { return latestMigration() }

// latestMigration is the highest version of pgMigrations.
func latestMigration() int {
	v := 0
	for _, m := range pgMigrations {
		v = max(v, m.version)
	}
	return v
}

// migrate applies the migrations the database lacks, each in its own
// transaction under an advisory lock, in the order of their versions; a
// version the database lacks is applied even below one it has (branches
// that added versions 4 and 5 apart). It refuses a database migrated by a
// newer binary.
func (p *Store) migrate(ctx context.Context) error {
	latest := latestMigration()
	ms := slices.Clone(pgMigrations)
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for _, m := range ms {
		err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(pgMigrationLock)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	name    TEXT NOT NULL,
	applied BIGINT NOT NULL
)`); err != nil {
				return fmt.Errorf("creating schema_migrations: %w", err)
			}
			var have int
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
				return fmt.Errorf("reading the schema version: %w", err)
			}
			if have > latest {
				return fmt.Errorf("the database has schema version %d, newer than this binary knows (%d): upgrade reach", have, latest)
			}
			var applied bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.version).Scan(&applied); err != nil {
				return fmt.Errorf("reading the schema version: %w", err)
			}
			if applied {
				return nil
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pgNull stores an empty value as NULL.
func pgNull(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// emptyNil reads a value stored by pgNull.
func emptyNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// PutRequest implements Requests: durable when it returns.
func (p *Store) PutRequest(ctx context.Context, r *store.Request) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	now := time.Now()
	var roles, attrs []byte
	if len(r.Roles) > 0 {
		roles, _ = json.Marshal(r.Roles)
	}
	if len(r.Attrs) > 0 {
		attrs, _ = json.Marshal(r.Attrs)
	}
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `INSERT INTO requests
	(id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
	ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, principal = excluded.principal, tenant = excluded.tenant,
		roles = excluded.roles, attributes = excluded.attributes, trace = excluded.trace, scene = excluded.scene,
		agent = excluded.agent, state = excluded.state, budget = excluded.budget, usage = excluded.usage,
		cause = excluded.cause, started = excluded.started, ended = excluded.ended, updated = excluded.updated
	WHERE requests.state <> 'interrupted' AND (requests.state <> 'stopped' OR excluded.state = 'stopped')`,
			[]any{r.ID, r.Parent, r.Principal, r.Tenant, pgNull(roles), pgNull(attrs), r.Trace, r.Scene, r.Agent, r.State,
				pgNull(r.Budget), pgNull(r.Usage), pgNull(r.Cause), store.UnixNano(r.Started), store.UnixNano(r.Ended), now.UnixNano()},
			func(n int64) error {
				if n == 0 {
					return errFinal
				}
				return nil
			})
	}})
	if err != nil {
		if errors.Is(err, errFinal) {
			state := "interrupted by a restart"
			if old, gerr := p.GetRequest(context.WithoutCancel(ctx), r.ID); gerr == nil && old.State == "stopped" {
				state = "stopped"
			}
			return fmt.Errorf("storing request %s: it was %s, and stays so: %w", r.ID, state, store.ErrConflict)
		}
		return fmt.Errorf("storing request %s: %w", r.ID, err)
	}
	r.Updated = store.Round(now)
	return nil
}

const pgRequestColumns = `id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated`

func scanPgRequest(sc interface{ Scan(...any) error }) (*store.Request, error) {
	var r store.Request
	var roles, attrs, budget, usage, cause []byte
	var started, ended, updated int64
	if err := sc.Scan(&r.ID, &r.Parent, &r.Principal, &r.Tenant, &roles, &attrs, &r.Trace, &r.Scene, &r.Agent, &r.State,
		&budget, &usage, &cause, &started, &ended, &updated); err != nil {
		return nil, err
	}
	if len(roles) > 0 {
		if err := json.Unmarshal(roles, &r.Roles); err != nil {
			return nil, fmt.Errorf("request %s: its roles: %w", r.ID, err)
		}
	}
	if len(attrs) > 0 {
		if err := json.Unmarshal(attrs, &r.Attrs); err != nil {
			return nil, fmt.Errorf("request %s: its attributes: %w", r.ID, err)
		}
	}
	r.Budget, r.Usage, r.Cause = emptyNil(budget), emptyNil(usage), emptyNil(cause)
	r.Started, r.Ended, r.Updated = store.FromUnixNano(started), store.FromUnixNano(ended), store.FromUnixNano(updated)
	return &r, nil
}

// GetRequest implements Requests.
func (p *Store) GetRequest(ctx context.Context, id string) (*store.Request, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	r, err := scanPgRequest(p.pool.QueryRow(ctx, `SELECT `+pgRequestColumns+` FROM requests WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("request %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading request %s: %w", id, err)
	}
	return r, nil
}

// ListRequests implements Requests.
func (p *Store) ListRequests(ctx context.Context, f store.RequestFilter) ([]*store.Request, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + pgRequestColumns + ` FROM requests WHERE true`
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.State != "" {
		q += ` AND state = ` + arg(f.State)
	}
	if f.Parent != "" {
		q += ` AND parent = ` + arg(f.Parent) + ` AND parent <> ''`
	}
	if f.Roots {
		q += ` AND parent = ''`
	}
	if !f.Before.IsZero() {
		q += ` AND started < ` + arg(f.Before.UnixNano())
	}
	q += ` ORDER BY started DESC, id DESC LIMIT ` + arg(limit)
	rows, err := p.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	defer rows.Close()
	var out []*store.Request
	for rows.Next() {
		r, err := scanPgRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("listing requests: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	return out, nil
}

// PutFrame implements Frames: durable when it returns.
func (p *Store) PutFrame(ctx context.Context, f *store.Frame) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	if err := p.do(ctx, p.frameWrite(f)); err != nil {
		return fmt.Errorf("storing frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	return nil
}

// QueueFrame implements Frames: it returns at once, and the frame is
// written with a later batch.
func (p *Store) QueueFrame(f *store.Frame) {
	w := p.frameWrite(f)
	w.what = "frame " + f.Frame + " of request " + f.Request
	p.queue(w)
}

func (p *Store) frameWrite(f *store.Frame) *pgWrite {
	now := time.Now()
	f.Updated = store.Round(now)
	key := frameKey(f.Request, f.Frame)
	return &pgWrite{pairs: key, queue: func(b *pgRound, w *pgWrite) {
		if p.lost[key] {
			delete(p.lost, key)
			w.err = fmt.Errorf("the idempotency claim of its call was not recorded, so the call must not run: %w", store.ErrConflict)
			return
		}
		b.exec(w, `INSERT INTO frames
	(request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, owner, stack)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
	ON CONFLICT (request, frame) DO UPDATE SET parent = excluded.parent, kind = excluded.kind,
		name = excluded.name, call_id = excluded.call_id, idem_key = excluded.idem_key,
		state = excluded.state, args = excluded.args, undo = excluded.undo, error = excluded.error,
		started = excluded.started, updated = excluded.updated, owner = excluded.owner,
		stack = coalesce(excluded.stack, frames.stack)`,
			[]any{f.Request, f.Frame, f.Parent, f.Kind, f.Name, f.CallID, []byte(f.IdemKey), f.State, pgNull(f.Args), pgNull(f.Undo),
				pgNull(f.Error), store.UnixNano(f.Started), now.UnixNano(), f.Owner, pgNull(f.Stack)}, nil)
	}}
}

const pgFrameColumns = `request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated, owner, stack`

func (p *Store) queryFrames(ctx context.Context, where string, args ...any) ([]*store.Frame, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+pgFrameColumns+` FROM frames WHERE `+where+` ORDER BY started, seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading frames: %w", err)
	}
	defer rows.Close()
	var out []*store.Frame
	for rows.Next() {
		var f store.Frame
		var started, updated int64
		var idem []byte
		if err := rows.Scan(&f.Request, &f.Frame, &f.Parent, &f.Kind, &f.Name, &f.CallID, &idem, &f.State,
			&f.Args, &f.Undo, &f.Error, &started, &updated, &f.Owner, &f.Stack); err != nil {
			return nil, fmt.Errorf("reading frames: %w", err)
		}
		f.IdemKey = string(idem)
		f.Args, f.Undo, f.Error, f.Stack = emptyNil(f.Args), emptyNil(f.Undo), emptyNil(f.Error), emptyNil(f.Stack)
		f.Started, f.Updated = store.FromUnixNano(started), store.FromUnixNano(updated)
		out = append(out, &f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading frames: %w", err)
	}
	return out, nil
}

// RequestFrames implements Frames.
func (p *Store) RequestFrames(ctx context.Context, request string) ([]*store.Frame, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	return p.queryFrames(ctx, `request = $1`, request)
}

// OpenFrames implements Frames.
func (p *Store) OpenFrames(ctx context.Context) ([]*store.Frame, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	return p.queryFrames(ctx, `state NOT IN ('completed', 'failed', 'refused', 'cancelled')`)
}

// ClaimKey implements IdemRecords, as SQLite's does: the claim of a
// checkpointed call is answered as soon as it is decided, and committed
// with the call's "executing" checkpoint, which the writer waits for
// (briefly) before it commits.
func (p *Store) ClaimKey(ctx context.Context, c *store.IdemRecord) (rec *store.IdemRecord, claimed bool, err error) {
	if p.closed.Load() {
		return nil, false, store.ErrClosed
	}
	w := &pgWrite{}
	var found *store.IdemRecord
	w.queue = func(b *pgRound, w *pgWrite) {
		w.claimed, found = false, nil
		b.query(w, `SELECT o_claimed, o_owner, o_state, o_args, o_request, o_frame, o_result, o_at, o_expires
	FROM reach_claim($1, $2, $3, $4, $5, $6, $7)`,
			[]any{[]byte(c.Key), c.Owner, c.Args, c.Request, c.Frame, store.UnixNano(c.Claimed), store.UnixNano(c.Expires)},
			func(rows pgx.Rows) error {
				if !rows.Next() {
					return nil // rows.Err says why
				}
				var r store.IdemRecord
				var ok bool
				var at, exp int64
				if err := rows.Scan(&ok, &r.Owner, &r.State, &r.Args, &r.Request, &r.Frame, &r.Result, &at, &exp); err != nil {
					return err
				}
				if ok {
					w.claimed = true
					return nil
				}
				r.Key, r.Claimed, r.Expires, r.Result = c.Key, store.FromUnixNano(at), store.FromUnixNano(exp), emptyNil(r.Result)
				found = &r
				return nil
			})
	}
	if c.Frame != "" && c.Request != "" {
		w.pair, w.decided = frameKey(c.Request, c.Frame), make(chan struct{})
		var aRec *store.IdemRecord
		var aClaimed bool
		var aErr error
		w.answer = func(e error) { aRec, aClaimed, aErr = found, w.claimed && e == nil, e }
		if err := p.send(w); err != nil {
			return nil, false, err
		}
		select {
		case <-w.decided:
			// The writer answered before closing decided; after a
			// context's end it may still be answering.
			rec, claimed, err = aRec, aClaimed, aErr
		case <-ctx.Done():
			return nil, false, context.Cause(ctx)
		}
	} else if err = p.do(ctx, w); err == nil {
		// Read only after the writer answered: on a context's end it may
		// still be running the write.
		rec, claimed = found, w.claimed
	}
	if err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", c.Key, err)
	}
	if !claimed && rec == nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: no record was returned", c.Key)
	}
	return rec, claimed, nil
}

// CompleteKey implements IdemRecords: durable when it returns.
func (p *Store) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	return p.do(ctx, pgCompleteWrite(key, owner, result, expires))
}

// QueueCompleteKey implements IdemRecords.
func (p *Store) QueueCompleteKey(key, owner string, result []byte, expires time.Time) {
	w := pgCompleteWrite(key, owner, result, expires)
	w.what = "the result of idempotency key " + strconv.Quote(key)
	p.queue(w)
}

func pgCompleteWrite(key, owner string, result []byte, expires time.Time) *pgWrite {
	return &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `UPDATE idempotency SET state = 'done', result = $1, expires = $2 WHERE key = $3 AND owner = $4 AND state = 'claimed'`,
			[]any{result, store.UnixNano(expires), []byte(key), owner}, func(n int64) error {
				if n == 0 {
					return fmt.Errorf("completing idempotency key %q: not claimed by %s: %w", key, owner, store.ErrConflict)
				}
				return nil
			})
	}}
}

// ReleaseKey implements IdemRecords: durable when it returns.
func (p *Store) ReleaseKey(ctx context.Context, key, owner string) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	return p.do(ctx, pgReleaseWrite(key, owner))
}

// QueueReleaseKey implements IdemRecords.
func (p *Store) QueueReleaseKey(key, owner string) {
	w := pgReleaseWrite(key, owner)
	w.what = "the release of idempotency key " + strconv.Quote(key)
	p.queue(w)
}

func pgReleaseWrite(key, owner string) *pgWrite {
	return &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `DELETE FROM idempotency WHERE key = $1 AND owner = $2 AND state = 'claimed'`, []any{[]byte(key), owner}, nil)
	}}
}

// SettleClaim implements IdemRecords.
func (p *Store) SettleClaim(ctx context.Context, c *store.IdemRecord, result []byte, expires time.Time) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	return p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		gone := func(n int64) error {
			if n == 0 {
				return fmt.Errorf("settling idempotency key %q: its claim by %s is gone: %w", c.Key, c.Owner, store.ErrConflict)
			}
			return nil
		}
		if result == nil {
			b.exec(w, `DELETE FROM idempotency WHERE key = $1 AND owner = $2 AND claimed = $3 AND state = 'claimed'`,
				[]any{[]byte(c.Key), c.Owner, store.UnixNano(c.Claimed)}, gone)
			return
		}
		b.exec(w, `UPDATE idempotency SET state = 'done', result = $1, expires = $2
	WHERE key = $3 AND owner = $4 AND claimed = $5 AND state = 'claimed'`,
			[]any{result, store.UnixNano(expires), []byte(c.Key), c.Owner, store.UnixNano(c.Claimed)}, gone)
	}})
}

// SettleKey implements IdemRecords. The record keeps the arguments and
// checkpoint it was claimed with, if it had any.
func (p *Store) SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	return p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `INSERT INTO idempotency (key, owner, state, result, claimed, expires) VALUES ($1, '', 'done', $2, $3, $4)
	ON CONFLICT (key) DO UPDATE SET state = 'done', result = excluded.result, expires = excluded.expires`,
			[]any{[]byte(key), result, time.Now().UnixNano(), store.UnixNano(expires)}, nil)
	}})
}

const pgIdemColumns = `key, owner, state, args, request, frame, result, claimed, expires`

func scanPgIdem(sc interface{ Scan(...any) error }) (*store.IdemRecord, error) {
	var r store.IdemRecord
	var claimed, expires int64
	var key []byte
	if err := sc.Scan(&key, &r.Owner, &r.State, &r.Args, &r.Request, &r.Frame, &r.Result, &claimed, &expires); err != nil {
		return nil, err
	}
	r.Key, r.Claimed, r.Expires, r.Result = string(key), store.FromUnixNano(claimed), store.FromUnixNano(expires), emptyNil(r.Result)
	return &r, nil
}

// ClaimedKeys implements IdemRecords.
func (p *Store) ClaimedKeys(ctx context.Context) ([]*store.IdemRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgIdemColumns+` FROM idempotency WHERE state = 'claimed' ORDER BY claimed, key`)
	if err != nil {
		return nil, fmt.Errorf("listing idempotency claims: %w", err)
	}
	defer rows.Close()
	var out []*store.IdemRecord
	for rows.Next() {
		r, err := scanPgIdem(rows)
		if err != nil {
			return nil, fmt.Errorf("listing idempotency claims: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing idempotency claims: %w", err)
	}
	return out, nil
}

// SweepKeys implements IdemRecords.
func (p *Store) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	if p.closed.Load() {
		return 0, store.ErrClosed
	}
	var n int64
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `DELETE FROM idempotency WHERE state = 'done' AND expires <= $1 AND expires <> 0`, []any{now.UnixNano()},
			func(c int64) error { n = c; return nil })
	}})
	if err != nil {
		return 0, fmt.Errorf("sweeping idempotency keys: %w", err)
	}
	return int(n), nil
}

// Debit implements Ledger: one call of reach_debit, in the writer's batch.
func (p *Store) Debit(ctx context.Context, request string, d, limit store.Spend) (store.Spend, bool, error) {
	if p.closed.Load() {
		return store.Spend{}, false, store.ErrClosed
	}
	var spent store.Spend
	var ok bool
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.query(w, `SELECT o_ok, o_turns, o_calls, o_tokens, o_cost FROM reach_debit($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			[]any{request, d.Turns, d.ToolCalls, d.Tokens, d.CostNano, limit.Turns, limit.ToolCalls, limit.Tokens, limit.CostNano},
			func(rows pgx.Rows) error {
				if !rows.Next() {
					return nil
				}
				return rows.Scan(&ok, &spent.Turns, &spent.ToolCalls, &spent.Tokens, &spent.CostNano)
			})
	}})
	if err != nil {
		return store.Spend{}, false, fmt.Errorf("debiting the budget of request %s: %w", request, err)
	}
	return spent, ok, nil
}

// Spent implements Ledger.
func (p *Store) Spent(ctx context.Context, request string) (store.Spend, error) {
	if p.closed.Load() {
		return store.Spend{}, store.ErrClosed
	}
	var sp store.Spend
	err := p.pool.QueryRow(ctx, `SELECT turns, tool_calls, tokens, cost FROM ledger WHERE request = $1`, request).
		Scan(&sp.Turns, &sp.ToolCalls, &sp.Tokens, &sp.CostNano)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Spend{}, nil
	}
	if err != nil {
		return store.Spend{}, fmt.Errorf("reading the budget spent by request %s: %w", request, err)
	}
	return sp, nil
}

// PutApproval implements Approvals.
func (p *Store) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	now := time.Now()
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		check := func(n int64) error {
			if n > 0 {
				return nil
			}
			if a.Version == 0 {
				return fmt.Errorf("approval %s exists already: %w", a.ID, store.ErrConflict)
			}
			return fmt.Errorf("approval %s changed since version %d: %w", a.ID, a.Version, store.ErrConflict)
		}
		count := func(rows pgx.Rows) error {
			n := int64(0)
			for rows.Next() {
				n++
			}
			return check(n)
		}
		// The write wakes the other instances' queues (see Watch).
		if a.Version == 0 {
			b.query(w, `WITH a AS (INSERT INTO approvals (id, key, alt, status, version, created, expires, updated, data)
		VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id)
	SELECT pg_notify('`+notifyChannel+`', '`+notifyApproval+`' || id) FROM a`,
				[]any{a.ID, a.Key, a.Alt, a.Status, store.UnixNano(a.Created), store.UnixNano(a.Expires), now.UnixNano(), string(a.Data)}, count)
			return
		}
		b.query(w, `WITH a AS (UPDATE approvals SET key = $1, alt = $2, status = $3, version = version + 1, created = $4, expires = $5,
		updated = $6, data = $7 WHERE id = $8 AND version = $9 RETURNING id)
	SELECT pg_notify('`+notifyChannel+`', '`+notifyApproval+`' || id) FROM a`,
			[]any{a.Key, a.Alt, a.Status, store.UnixNano(a.Created), store.UnixNano(a.Expires), now.UnixNano(), string(a.Data), a.ID, a.Version}, count)
	}})
	if err != nil {
		return fmt.Errorf("storing approval %s: %w", a.ID, err)
	}
	a.Version++
	a.Updated = store.Round(now)
	return nil
}

const pgApprovalColumns = `id, key, alt, status, version, created, expires, updated, data`

func scanPgApproval(sc interface{ Scan(...any) error }) (*store.ApprovalRecord, error) {
	var a store.ApprovalRecord
	var created, expires, updated int64
	if err := sc.Scan(&a.ID, &a.Key, &a.Alt, &a.Status, &a.Version, &created, &expires, &updated, &a.Data); err != nil {
		return nil, err
	}
	a.Created, a.Expires, a.Updated = store.FromUnixNano(created), store.FromUnixNano(expires), store.FromUnixNano(updated)
	return &a, nil
}

// GetApproval implements Approvals.
func (p *Store) GetApproval(ctx context.Context, id string) (*store.ApprovalRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	a, err := scanPgApproval(p.pool.QueryRow(ctx, `SELECT `+pgApprovalColumns+` FROM approvals WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading approval %s: %w", id, err)
	}
	return a, nil
}

// ListApprovals implements Approvals.
func (p *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]*store.ApprovalRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT ` + pgApprovalColumns + ` FROM approvals WHERE true`
	args := []any{}
	if f.Live {
		q += ` AND status IN ('pending', 'approved')`
	}
	if len(f.Keys) > 0 {
		args = append(args, f.Keys)
		q += ` AND (key = ANY($1) OR alt = ANY($1))`
	}
	args = append(args, limit)
	rows, err := p.pool.Query(ctx, q+` ORDER BY created DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("listing approvals: %w", err)
	}
	defer rows.Close()
	var out []*store.ApprovalRecord
	for rows.Next() {
		a, err := scanPgApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("listing approvals: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing approvals: %w", err)
	}
	return out, nil
}

// BumpEntities implements Entities: the counter and the entities in one
// statement.
func (p *Store) BumpEntities(ctx context.Context, names []string) (uint64, error) {
	if p.closed.Load() {
		return 0, store.ErrClosed
	}
	var v int64
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.query(w, `WITH v AS (UPDATE store_meta SET value = value + 1 WHERE key = 'entity_version' RETURNING value),
	e AS (INSERT INTO entities (name, version) SELECT n, v.value FROM v, unnest($1::TEXT[]) AS n
		ON CONFLICT (name) DO UPDATE SET version = excluded.version)
	SELECT value FROM v`, []any{names}, func(rows pgx.Rows) error {
			if !rows.Next() {
				return nil
			}
			return rows.Scan(&v)
		})
	}})
	if err != nil {
		return 0, fmt.Errorf("writing entity versions: %w", err)
	}
	return uint64(v), nil
}

// EntityVersions implements Entities.
func (p *Store) EntityVersions(ctx context.Context, names []string) (map[string]uint64, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	out := map[string]uint64{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := p.pool.Query(ctx, `SELECT name, version FROM entities WHERE name = ANY($1)`, names)
	if err != nil {
		return nil, fmt.Errorf("reading entity versions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return nil, fmt.Errorf("reading entity versions: %w", err)
		}
		out[name] = uint64(v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading entity versions: %w", err)
	}
	return out, nil
}

// PutPin implements Pins.
func (p *Store) PutPin(ctx context.Context, tool string, data []byte) (int64, error) {
	if p.closed.Load() {
		return 0, store.ErrClosed
	}
	var v int64
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.query(w, `WITH pin AS (INSERT INTO pins (tool, data, updated) VALUES ($1, $2, $3)
		ON CONFLICT (tool) DO UPDATE SET data = excluded.data, updated = excluded.updated)
	UPDATE store_meta SET value = value + 1 WHERE key = 'pins_version' RETURNING value`,
			[]any{tool, data, time.Now().UnixNano()}, func(rows pgx.Rows) error {
				if !rows.Next() {
					return nil
				}
				return rows.Scan(&v)
			})
	}})
	if err != nil {
		return 0, fmt.Errorf("storing the pin of %s: %w", tool, err)
	}
	return v, nil
}

// ListPins implements Pins: the pins and their version, in one statement.
func (p *Store) ListPins(ctx context.Context) (map[string][]byte, int64, error) {
	if p.closed.Load() {
		return nil, 0, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT '', NULL::TEXT, value FROM store_meta WHERE key = 'pins_version'
	UNION ALL SELECT tool, data, 0 FROM pins`)
	if err != nil {
		return nil, 0, fmt.Errorf("reading pins: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	var version int64
	for rows.Next() {
		var tool string
		var data []byte
		var v int64
		if err := rows.Scan(&tool, &data, &v); err != nil {
			return nil, 0, fmt.Errorf("reading pins: %w", err)
		}
		if data == nil {
			version = v
			continue
		}
		out[tool] = data
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("reading pins: %w", err)
	}
	return out, version, nil
}

// PinsVersion implements Pins.
func (p *Store) PinsVersion(ctx context.Context) (int64, error) {
	if p.closed.Load() {
		return 0, store.ErrClosed
	}
	var v int64
	if err := p.pool.QueryRow(ctx, `SELECT value FROM store_meta WHERE key = 'pins_version'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the pins' version: %w", err)
	}
	return v, nil
}

// AddDeadLetter implements DeadLetters: durable when it returns.
func (p *Store) AddDeadLetter(ctx context.Context, d *store.DeadLetter) (int64, error) {
	if p.closed.Load() {
		return 0, store.ErrClosed
	}
	now := time.Now()
	var id int64
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.query(w, `INSERT INTO dead_letters (request, frame, tool, args, error, attempts, state, note, created, updated)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			[]any{d.Request, d.Frame, d.Tool, pgNull(d.Args), d.Error, d.Attempts, store.DeadOpen, d.Note, now.UnixNano(), now.UnixNano()},
			func(rows pgx.Rows) error {
				if !rows.Next() {
					return nil
				}
				return rows.Scan(&id)
			})
	}})
	if err != nil {
		return 0, fmt.Errorf("storing a dead letter: %w", err)
	}
	d.ID, d.State, d.Created, d.Updated = id, store.DeadOpen, store.Round(now), store.Round(now)
	return id, nil
}

const pgDeadColumns = `id, request, frame, tool, args, error, attempts, state, note, created, updated`

func scanPgDead(sc interface{ Scan(...any) error }) (*store.DeadLetter, error) {
	var d store.DeadLetter
	var created, updated int64
	if err := sc.Scan(&d.ID, &d.Request, &d.Frame, &d.Tool, &d.Args, &d.Error, &d.Attempts, &d.State, &d.Note,
		&created, &updated); err != nil {
		return nil, err
	}
	d.Args, d.Created, d.Updated = emptyNil(d.Args), store.FromUnixNano(created), store.FromUnixNano(updated)
	return &d, nil
}

// ListDeadLetters implements DeadLetters.
func (p *Store) ListDeadLetters(ctx context.Context, state string) ([]*store.DeadLetter, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	q := `SELECT ` + pgDeadColumns + ` FROM dead_letters`
	var args []any
	if state != "" {
		q += ` WHERE state = $1`
		args = append(args, state)
	}
	rows, err := p.pool.Query(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	defer rows.Close()
	var out []*store.DeadLetter
	for rows.Next() {
		d, err := scanPgDead(rows)
		if err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	return out, nil
}

// UpdateDeadLetter implements DeadLetters: durable when it returns.
func (p *Store) UpdateDeadLetter(ctx context.Context, d *store.DeadLetter) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	now := time.Now()
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `UPDATE dead_letters SET state = $1, note = $2, error = $3, attempts = $4, updated = $5 WHERE id = $6`,
			[]any{d.State, d.Note, d.Error, d.Attempts, now.UnixNano(), d.ID}, func(n int64) error {
				if n == 0 {
					return fmt.Errorf("dead letter %d: %w", d.ID, store.ErrNotFound)
				}
				return nil
			})
	}})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("updating dead letter %d: %w", d.ID, err)
	}
	d.Updated = store.Round(now)
	return nil
}

// TakeDeadLetter implements DeadLetters: the update and the read are one
// statement.
func (p *Store) TakeDeadLetter(ctx context.Context, id int64) (*store.DeadLetter, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	now := time.Now()
	var d *store.DeadLetter
	var took bool
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		d, took = nil, false
		b.query(w, `WITH t AS (UPDATE dead_letters SET state = $1, updated = $2 WHERE id = $3 AND state = $4 RETURNING `+pgDeadColumns+`)
	SELECT true, `+pgDeadColumns+` FROM t
	UNION ALL SELECT false, `+pgDeadColumns+` FROM dead_letters WHERE id = $3 AND NOT EXISTS (SELECT 1 FROM t)`,
			[]any{store.DeadTaken, now.UnixNano(), id, store.DeadOpen}, func(rows pgx.Rows) error {
				if !rows.Next() {
					return nil
				}
				var dl store.DeadLetter
				var created, updated int64
				if err := rows.Scan(&took, &dl.ID, &dl.Request, &dl.Frame, &dl.Tool, &dl.Args, &dl.Error, &dl.Attempts,
					&dl.State, &dl.Note, &created, &updated); err != nil {
					return err
				}
				dl.Args, dl.Created, dl.Updated = emptyNil(dl.Args), store.FromUnixNano(created), store.FromUnixNano(updated)
				d = &dl
				switch {
				case took:
					return nil
				case dl.State == store.DeadTaken:
					return fmt.Errorf("dead letter %d is taken: %w", id, store.ErrConflict)
				default:
					return fmt.Errorf("dead letter %d is %s: %w", id, dl.State, store.ErrNotFound)
				}
			})
	}})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		return nil, fmt.Errorf("taking dead letter %d: %w", id, err)
	}
	if d == nil {
		return nil, fmt.Errorf("dead letter %d: %w", id, store.ErrNotFound)
	}
	return d, nil
}

// AppendAudit implements AuditLog: one transaction that locks the head of
// the chain, checks that recs follow it, copies them in and moves the
// head. Durable when it returns.
func (p *Store) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	return p.appendAudit(ctx, recs, func(head int64, _ []byte) ([]store.AuditCheckpoint, error) {
		if err := store.Follows(recs, head); err != nil {
			return nil, err
		}
		return cps, nil
	})
}

// AppendAuditChained implements AuditChainer: chain is called with the head
// of the chain, locked, to number and hash recs after it.
func (p *Store) AppendAuditChained(ctx context.Context, recs []*store.AuditRecord, chain func(seq int64, hash []byte) []store.AuditCheckpoint) error {
	return p.appendAudit(ctx, recs, func(head int64, hash []byte) ([]store.AuditCheckpoint, error) {
		return chain(head, hash), nil
	})
}

func (p *Store) appendAudit(ctx context.Context, recs []*store.AuditRecord, at func(head int64, hash []byte) ([]store.AuditCheckpoint, error)) error {
	if p.closed.Load() {
		return store.ErrClosed
	}
	p.auditMu.Lock()
	defer p.auditMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.o.WriteTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var head int64
		var hash []byte
		if err := tx.QueryRow(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE`).Scan(&head, &hash); err != nil {
			return &dbError{err}
		}
		cps, err := at(head, hash)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"audit"}, []string{"seq", "time", "request", "event", "prev_hash", "hash"},
				pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
					r := recs[i]
					return []any{r.Seq, store.UnixNano(r.Time), r.Request, json.RawMessage(r.Data), r.PrevHash, r.Hash}, nil
				})); err != nil {
				return &dbError{err}
			}
		}
		b := &pgx.Batch{}
		if len(recs) > 0 {
			last := recs[len(recs)-1]
			b.Queue(`UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1`, last.Seq, last.Hash)
		}
		for _, cp := range cps {
			b.Queue(`INSERT INTO checkpoints (seq, hash, time) VALUES ($1, $2, $3) ON CONFLICT (seq) DO NOTHING`,
				cp.Seq, cp.Hash, store.UnixNano(cp.Time))
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return &dbError{err}
			}
		}
		return nil
	})
	if err != nil {
		if de := (*dbError)(nil); errors.As(err, &de) {
			return fmt.Errorf("appending audit records: %w", de.err)
		}
		return err
	}
	return nil
}

// AuditHead implements AuditLog.
func (p *Store) AuditHead(ctx context.Context) (int64, []byte, error) {
	if p.closed.Load() {
		return 0, nil, store.ErrClosed
	}
	var seq int64
	var hash []byte
	if err := p.pool.QueryRow(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&seq, &hash); err != nil {
		return 0, nil, fmt.Errorf("reading the audit head: %w", err)
	}
	if seq == 0 {
		return 0, nil, nil
	}
	return seq, hash, nil
}

// The columns are read through casts, so that a row edited by hand to hold
// an odd value is still read (and then fails verification).
const pgAuditSelect = `SELECT seq, time, request, event::TEXT, prev_hash, hash FROM audit `

func (p *Store) queryAudit(ctx context.Context, q string, args ...any) ([]*store.AuditRecord, error) {
	rows, err := p.pool.Query(ctx, pgAuditSelect+q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	var out []*store.AuditRecord
	for rows.Next() {
		var r store.AuditRecord
		var t int64
		var data string
		if err := rows.Scan(&r.Seq, &t, &r.Request, &data, &r.PrevHash, &r.Hash); err != nil {
			return out, fmt.Errorf("reading the audit log: %w", err)
		}
		r.Time, r.Data = store.FromUnixNano(t), []byte(data)
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}

// ScanAudit implements AuditLog.
func (p *Store) ScanAudit(ctx context.Context, after int64, limit int) ([]*store.AuditRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		return p.queryAudit(ctx, `WHERE seq > $1 ORDER BY seq`, after)
	}
	return p.queryAudit(ctx, `WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
}

// RequestAudit implements AuditLog.
func (p *Store) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	return p.queryAudit(ctx, `WHERE request = $1 ORDER BY seq`, request)
}

// AuditCheckpoints implements AuditLog.
func (p *Store) AuditCheckpoints(ctx context.Context) ([]store.AuditCheckpoint, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT seq, hash, time FROM checkpoints ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("reading audit checkpoints: %w", err)
	}
	defer rows.Close()
	var out []store.AuditCheckpoint
	for rows.Next() {
		var cp store.AuditCheckpoint
		var t int64
		if err := rows.Scan(&cp.Seq, &cp.Hash, &t); err != nil {
			return nil, fmt.Errorf("reading audit checkpoints: %w", err)
		}
		cp.Time = store.FromUnixNano(t)
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading audit checkpoints: %w", err)
	}
	return out, nil
}

// PutTask implements Tasks: durable when it returns.
func (p *Store) PutTask(ctx context.Context, t *store.TaskRecord) (bool, error) {
	if p.closed.Load() {
		return false, store.ErrClosed
	}
	now := time.Now()
	var n int64
	err := p.do(ctx, &pgWrite{queue: func(b *pgRound, w *pgWrite) {
		b.exec(w, `INSERT INTO tasks (agent, id, principal, tenant, request, state, final, data, created, updated)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
	ON CONFLICT (agent, id) DO UPDATE SET principal = excluded.principal, tenant = excluded.tenant, request = excluded.request,
		state = excluded.state, final = excluded.final, data = excluded.data, updated = excluded.updated
	WHERE NOT tasks.final`, []any{t.Agent, t.ID, t.Principal, t.Tenant, t.Request, t.State, t.Final, string(t.Data), now.UnixNano()},
			func(c int64) error { n = c; return nil })
	}})
	if err != nil {
		return false, fmt.Errorf("storing task %s of %s: %w", t.ID, t.Agent, err)
	}
	if n > 0 {
		t.Updated = store.Round(now)
	}
	return n > 0, nil
}

const pgTaskColumns = `agent, id, principal, tenant, request, state, final, data, created, updated`

func scanPgTask(sc interface{ Scan(...any) error }) (*store.TaskRecord, error) {
	var t store.TaskRecord
	var created, updated int64
	var data string
	if err := sc.Scan(&t.Agent, &t.ID, &t.Principal, &t.Tenant, &t.Request, &t.State, &t.Final, &data, &created, &updated); err != nil {
		return nil, err
	}
	t.Data, t.Created, t.Updated = []byte(data), store.FromUnixNano(created), store.FromUnixNano(updated)
	return &t, nil
}

// GetTask implements Tasks.
func (p *Store) GetTask(ctx context.Context, agent, id string) (*store.TaskRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	t, err := scanPgTask(p.pool.QueryRow(ctx, `SELECT `+pgTaskColumns+` FROM tasks WHERE agent = $1 AND id = $2`, agent, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s of %s: %w", id, agent, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %s of %s: %w", id, agent, err)
	}
	return t, nil
}

// ListTasks implements Tasks.
func (p *Store) ListTasks(ctx context.Context, agent, principal, tenant string, limit int) ([]*store.TaskRecord, error) {
	if p.closed.Load() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgTaskColumns+` FROM tasks WHERE agent = $1 AND principal = $2 AND tenant = $3
	ORDER BY created DESC, id DESC LIMIT $4`, agent, principal, tenant, limit)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	defer rows.Close()
	var out []*store.TaskRecord
	for rows.Next() {
		t, err := scanPgTask(rows)
		if err != nil {
			return nil, fmt.Errorf("listing tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	return out, nil
}
