package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultFile is the name of the SQLite database inside the data folder.
const DefaultFile = "reach.db"

// SQLiteOptions configure Open. A nil *SQLiteOptions means all defaults.
type SQLiteOptions struct {
	// File is the database file's name inside the data folder; if empty,
	// DefaultFile ("reach.db").
	File string
	// Synchronous is SQLite's synchronous setting: "NORMAL" (the default)
	// makes a committed transaction survive a crash of the process (kill
	// -9); "FULL" also survives a crash of the machine or a power loss, at
	// the price of an fsync per commit.
	Synchronous string
	// BusyTimeout is how long a connection waits for a lock held by
	// another process before it fails; if zero, 5s.
	BusyTimeout time.Duration
	// Readers is the number of read connections; if zero, 4.
	Readers int
	// NoCreate makes Open fail when the database file does not exist,
	// instead of creating it (for commands that only read).
	NoCreate bool
}

// SQLite is the embedded Store: one SQLite database in WAL mode, written
// through a single connection (so writes never wait on each other's locks)
// and read through a small pool. The schema is migrated when it is opened.
// Safe for concurrent use; several processes may open the same file, but
// only one should append to its audit log.
type SQLite struct {
	path string
	w    *sql.DB // one connection: every write
	r    *sql.DB // readers

	insAudit [len(auditChunks)]*sql.Stmt
	insCp    *sql.Stmt
	insIdx   *sql.Stmt
	idem     idemStmts    // the idempotency records' statements, on the call path
	indexed  atomic.Int64 // the 'indexed' mark as last seen
	idxMu    sync.Mutex   // serializes AppendAudit, for recent
	recent   []reqSeq     // records appended here after the mark, by seq

	// The WAL is copied into the database by a goroutine of its own, on
	// its own connection, instead of by the writer at commit time.
	ck       *sql.DB
	ckSig    chan struct{} // wakes the checkpointer; never closed
	ckStop   chan struct{} // closed by Close
	ckDone   chan struct{} // closed when the checkpointer returns
	unsynced atomic.Int64  // rows written since the checkpointer was last woken
	close    sync.Once
	closed   atomic.Bool // set by Close: later calls fail with ErrClosed
}

// checkpointEvery is how many rows are written between two wake-ups of
// the checkpointer.
const checkpointEvery = 4096

// walLimit is the WAL size past which the checkpointer makes the writer
// wait for a full checkpoint, so that the WAL restarts from its beginning.
const walLimit = 64 << 20

var _ Store = (*SQLite)(nil)

// Open opens (creating if needed, unless opts.NoCreate) the SQLite store in
// the folder dir, and applies the schema migrations it lacks.
func Open(ctx context.Context, dir string, opts *SQLiteOptions) (*SQLite, error) {
	var o SQLiteOptions
	if opts != nil {
		o = *opts
	}
	if o.File == "" {
		o.File = DefaultFile
	}
	if o.Synchronous == "" {
		o.Synchronous = "NORMAL"
	}
	o.Synchronous = strings.ToUpper(o.Synchronous)
	if o.Synchronous != "NORMAL" && o.Synchronous != "FULL" {
		return nil, fmt.Errorf("opening store: synchronous must be NORMAL or FULL, not %q", o.Synchronous)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Readers == 0 {
		o.Readers = 4
	}
	path := filepath.Join(dir, o.File)
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("opening store: the path %s must not contain '?' or '#'", path)
	}
	if o.NoCreate {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("opening store: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=synchronous(%s)&_pragma=foreign_keys(0)",
		o.BusyTimeout.Milliseconds(), o.Synchronous)
	w, err := sql.Open("sqlite", path+"?"+pragmas+"&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(67108864)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-16384)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &SQLite{path: path, w: w}
	// WAL mode is a property of the file: set once, every connection has it.
	if _, err := w.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		w.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers)
	s.r = r
	if s.ck, err = sql.Open("sqlite", path+"?"+pragmas); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	s.ck.SetMaxOpenConns(1)
	s.ckSig, s.ckStop, s.ckDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go s.checkpointer()
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return s, nil
}

// Path returns the database file's path.
func (s *SQLite) Path() string { return s.path }

// wrote counts n rows written and wakes the checkpointer every
// checkpointEvery rows.
func (s *SQLite) wrote(n int) {
	if s.unsynced.Add(int64(n)) >= checkpointEvery {
		s.unsynced.Store(0)
		select {
		case s.ckSig <- struct{}{}:
		default:
		}
	}
}

// checkpointer copies the WAL into the database when woken. A PASSIVE
// checkpoint never blocks the writer; if the WAL still grew past walLimit
// (the writer kept it busy), a RESTART checkpoint waits for the writer so
// that the WAL starts over from its beginning.
func (s *SQLite) checkpointer() {
	defer close(s.ckDone)
	ctx := context.Background()
	for {
		select {
		case <-s.ckSig:
		case <-s.ckStop:
			return
		}
		s.ck.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		if fi, err := os.Stat(s.path + "-wal"); err == nil && fi.Size() > walLimit {
			s.ck.ExecContext(ctx, `PRAGMA wal_checkpoint(RESTART)`)
		}
	}
}

// Close closes the store's connections. SQLite checkpoints the WAL into the
// database file when the last connection closes. Later calls fail with
// ErrClosed.
func (s *SQLite) Close() error {
	var errs []error
	s.close.Do(func() {
		s.closed.Store(true)
		if s.ck != nil {
			close(s.ckStop)
			<-s.ckDone
			errs = append(errs, s.ck.Close())
		}
		for _, st := range append(s.insAudit[:], s.insCp, s.insIdx, s.idem.get, s.idem.claim, s.idem.complete, s.idem.release) {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		errs = append(errs, s.w.Close())
	})
	return errors.Join(errs...)
}

// SchemaVersion returns the newest migration applied to the database.
func (s *SQLite) SchemaVersion(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var v int
	err := s.w.QueryRowContext(ctx, `SELECT ifnull(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// migrate applies the migrations the database lacks, each in its own
// transaction. It refuses a database migrated by a newer binary.
func (s *SQLite) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	name    TEXT NOT NULL,
	applied INTEGER NOT NULL
)`); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	have, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	latest := migrations[len(migrations)-1].version
	if have > latest {
		return fmt.Errorf("the database has schema version %d, newer than this binary knows (%d): upgrade reach", have, latest)
	}
	for _, m := range migrations {
		if m.version <= have {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func (s *SQLite) apply(ctx context.Context, m migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Another process may have applied it since we looked.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return err
	}
	return tx.Commit()
}

const auditColumns = `seq, time, request, event, prev_hash, hash`

const auditColumnCount = 6

// auditChunks are the row counts of the prepared multi-row INSERTs, largest
// first: a batch is inserted with as few statements as they allow.
var auditChunks = [...]int{128, 16, 1}

func (s *SQLite) prepare(ctx context.Context) error {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", auditColumnCount), ", ") + ")"
	for i, n := range auditChunks {
		rows := strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		// OR ROLLBACK: a taken seq ends the whole transaction (AppendAudit is
		// all or nothing anyway), which spares SQLite a statement journal
		// for the multi-row INSERT.
		st, err := s.w.PrepareContext(ctx, `INSERT OR ROLLBACK INTO audit (`+auditColumns+`) VALUES `+rows)
		if err != nil {
			return err
		}
		s.insAudit[i] = st
	}
	var err error
	if s.insCp, err = s.w.PrepareContext(ctx, `INSERT OR IGNORE INTO checkpoints (seq, hash, time) VALUES (?, ?, ?)`); err != nil {
		return err
	}
	if s.insIdx, err = s.w.PrepareContext(ctx, `INSERT INTO audit_requests (pass, request, seqs) VALUES (?, ?, ?)`); err != nil {
		return err
	}
	if err := s.idem.prepare(ctx, s.w); err != nil {
		return err
	}
	var indexed int64
	if err := s.w.QueryRowContext(ctx, `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`).Scan(&indexed); err != nil {
		return err
	}
	s.indexed.Store(indexed)
	return nil
}

// isConstraint reports whether err is an SQLite constraint violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// nullBytes stores an empty value as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// bytesOf reads a value stored by nullBytes.
func bytesOf(s sql.NullString) []byte {
	if !s.Valid || s.String == "" {
		return nil
	}
	return []byte(s.String)
}

// PutRequest implements Requests.
func (s *SQLite) PutRequest(ctx context.Context, r *Request) error {
	if s.closed.Load() {
		return ErrClosed
	}
	now := time.Now()
	var roles, attrs []byte
	if len(r.Roles) > 0 {
		roles, _ = json.Marshal(r.Roles)
	}
	if len(r.Attrs) > 0 {
		attrs, _ = json.Marshal(r.Attrs)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO requests
	(id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, principal = excluded.principal, tenant = excluded.tenant,
		roles = excluded.roles, attributes = excluded.attributes, trace = excluded.trace, scene = excluded.scene,
		agent = excluded.agent, state = excluded.state, budget = excluded.budget, usage = excluded.usage,
		cause = excluded.cause, started = excluded.started, ended = excluded.ended, updated = excluded.updated
	WHERE requests.state != 'interrupted'`,
		r.ID, r.Parent, r.Principal, r.Tenant, nullBytes(roles), nullBytes(attrs), r.Trace, r.Scene, r.Agent, r.State,
		nullBytes(r.Budget), nullBytes(r.Usage), nullBytes(r.Cause), unixNano(r.Started), unixNano(r.Ended), now.UnixNano())
	if err != nil {
		return fmt.Errorf("storing request %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("storing request %s: it was interrupted by a restart, and stays so: %w", r.ID, ErrConflict)
	}
	s.wrote(1)
	r.Updated = round(now)
	return nil
}

const requestColumns = `id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated`

func scanRequest(sc interface{ Scan(...any) error }) (*Request, error) {
	var r Request
	var roles, attrs, budget, usage, cause sql.NullString
	var started, ended, updated int64
	if err := sc.Scan(&r.ID, &r.Parent, &r.Principal, &r.Tenant, &roles, &attrs, &r.Trace, &r.Scene, &r.Agent, &r.State,
		&budget, &usage, &cause, &started, &ended, &updated); err != nil {
		return nil, err
	}
	if roles.Valid {
		if err := json.Unmarshal([]byte(roles.String), &r.Roles); err != nil {
			return nil, fmt.Errorf("request %s: its roles: %w", r.ID, err)
		}
	}
	if attrs.Valid {
		if err := json.Unmarshal([]byte(attrs.String), &r.Attrs); err != nil {
			return nil, fmt.Errorf("request %s: its attributes: %w", r.ID, err)
		}
	}
	r.Budget, r.Usage, r.Cause = bytesOf(budget), bytesOf(usage), bytesOf(cause)
	r.Started, r.Ended, r.Updated = fromUnixNano(started), fromUnixNano(ended), fromUnixNano(updated)
	return &r, nil
}

// requestsQuery is the query of ListRequests(f) and its arguments.
func requestsQuery(f RequestFilter) (string, []any) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + requestColumns + ` FROM requests WHERE 1`
	var args []any
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, f.State)
	}
	if f.Parent != "" {
		q += ` AND parent = ? AND parent != ''` // the second lets SQLite use the partial index requests_parent
		args = append(args, f.Parent)
	}
	if !f.Before.IsZero() {
		q += ` AND started < ?`
		args = append(args, f.Before.UnixNano())
	}
	q += ` ORDER BY started DESC, id DESC LIMIT ?`
	args = append(args, limit)
	return q, args
}

// GetRequest implements Requests.
func (s *SQLite) GetRequest(ctx context.Context, id string) (*Request, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	r, err := scanRequest(s.r.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM requests WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("request %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading request %s: %w", id, err)
	}
	return r, nil
}

// ListRequests implements Requests.
func (s *SQLite) ListRequests(ctx context.Context, f RequestFilter) ([]*Request, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	q, args := requestsQuery(f)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	defer rows.Close()
	var out []*Request
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("listing requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// PutFrame implements Frames.
func (s *SQLite) PutFrame(ctx context.Context, f *Frame) error {
	if s.closed.Load() {
		return ErrClosed
	}
	now := time.Now()
	_, err := s.w.ExecContext(ctx, `INSERT INTO frames
	(request, frame, parent, kind, name, call_id, idem_key, state, args, undo, error, started, updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (request, frame) DO UPDATE SET parent = excluded.parent, kind = excluded.kind,
		name = excluded.name, call_id = excluded.call_id, idem_key = excluded.idem_key,
		state = excluded.state, args = excluded.args, undo = excluded.undo, error = excluded.error,
		started = excluded.started, updated = excluded.updated`,
		f.Request, f.Frame, f.Parent, f.Kind, f.Name, f.CallID, f.IdemKey, f.State,
		nullBytes(f.Args), nullBytes(f.Undo), nullBytes(f.Error), unixNano(f.Started), now.UnixNano())
	if err != nil {
		return fmt.Errorf("storing frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	s.wrote(1)
	f.Updated = round(now)
	return nil
}

func (s *SQLite) queryFrames(ctx context.Context, where string, args ...any) ([]*Frame, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT request, frame, parent, kind, name, call_id, idem_key, state,
	args, undo, error, started, updated FROM frames WHERE `+where+` ORDER BY started, rowid`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading frames: %w", err)
	}
	defer rows.Close()
	var out []*Frame
	for rows.Next() {
		var f Frame
		var a, u, e sql.NullString
		var started, updated int64
		if err := rows.Scan(&f.Request, &f.Frame, &f.Parent, &f.Kind, &f.Name, &f.CallID, &f.IdemKey, &f.State,
			&a, &u, &e, &started, &updated); err != nil {
			return nil, fmt.Errorf("reading frames: %w", err)
		}
		f.Args, f.Undo, f.Error = bytesOf(a), bytesOf(u), bytesOf(e)
		f.Started, f.Updated = fromUnixNano(started), fromUnixNano(updated)
		out = append(out, &f)
	}
	return out, rows.Err()
}

// RequestFrames implements Frames.
func (s *SQLite) RequestFrames(ctx context.Context, request string) ([]*Frame, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.queryFrames(ctx, `request = ?`, request)
}

// OpenFrames implements Frames.
func (s *SQLite) OpenFrames(ctx context.Context) ([]*Frame, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.queryFrames(ctx, `state NOT IN ('completed', 'failed', 'refused', 'cancelled')`)
}

// ClaimKey implements IdemRecords.
func (s *SQLite) ClaimKey(ctx context.Context, c *IdemRecord) (rec *IdemRecord, claimed bool, err error) {
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", c.Key, err)
	}
	defer tx.Rollback()
	r, err := scanIdem(tx.StmtContext(ctx, s.idem.get).QueryRowContext(ctx, c.Key))
	switch {
	case err == nil:
		if r.State != IdemDone || live(r, c.Claimed) {
			return r, false, nil
		}
	case !errors.Is(err, sql.ErrNoRows):
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", c.Key, err)
	}
	if _, err := tx.StmtContext(ctx, s.idem.claim).ExecContext(ctx, c.Key, c.Owner, c.Args, c.Request, c.Frame,
		unixNano(c.Claimed), unixNano(c.Expires)); err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", c.Key, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", c.Key, err)
	}
	s.wrote(1)
	return nil, true, nil
}

const idemColumns = `key, owner, state, args, request, frame, result, claimed, expires`

// idemStmts are the prepared statements of the idempotency records that
// every write call runs: parsing them anew each time would cost more than
// running them.
type idemStmts struct {
	get, claim, complete, release *sql.Stmt
}

func (st *idemStmts) prepare(ctx context.Context, w *sql.DB) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&st.get, `SELECT ` + idemColumns + ` FROM idempotency WHERE key = ?`},
		{&st.claim, `INSERT OR REPLACE INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires)
	VALUES (?, ?, 'claimed', ?, ?, ?, NULL, ?, ?)`},
		{&st.complete, `UPDATE idempotency SET state = 'done', result = ?, expires = ? WHERE key = ? AND owner = ? AND state = 'claimed'`},
		{&st.release, `DELETE FROM idempotency WHERE key = ? AND owner = ? AND state = 'claimed'`},
	} {
		var err error
		if *p.stmt, err = w.PrepareContext(ctx, p.sql); err != nil {
			return err
		}
	}
	return nil
}

func scanIdem(sc interface{ Scan(...any) error }) (*IdemRecord, error) {
	var r IdemRecord
	var claimed, expires int64
	if err := sc.Scan(&r.Key, &r.Owner, &r.State, &r.Args, &r.Request, &r.Frame, &r.Result, &claimed, &expires); err != nil {
		return nil, err
	}
	r.Claimed, r.Expires = fromUnixNano(claimed), fromUnixNano(expires)
	if len(r.Result) == 0 {
		r.Result = nil
	}
	return &r, nil
}

// CompleteKey implements IdemRecords.
func (s *SQLite) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if s.closed.Load() {
		return ErrClosed
	}
	res, err := s.idem.complete.ExecContext(ctx, result, unixNano(expires), key, owner)
	if err != nil {
		return fmt.Errorf("completing idempotency key %q: %w", key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("completing idempotency key %q: not claimed by %s: %w", key, owner, ErrConflict)
	}
	s.wrote(1)
	return nil
}

// ReleaseKey implements IdemRecords.
func (s *SQLite) ReleaseKey(ctx context.Context, key, owner string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	_, err := s.idem.release.ExecContext(ctx, key, owner)
	if err != nil {
		return fmt.Errorf("releasing idempotency key %q: %w", key, err)
	}
	s.wrote(1)
	return nil
}

// SettleClaim implements IdemRecords.
func (s *SQLite) SettleClaim(ctx context.Context, c *IdemRecord, result []byte, expires time.Time) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var res sql.Result
	var err error
	if result == nil {
		res, err = s.w.ExecContext(ctx, `DELETE FROM idempotency WHERE key = ? AND owner = ? AND claimed = ? AND state = 'claimed'`,
			c.Key, c.Owner, unixNano(c.Claimed))
	} else {
		res, err = s.w.ExecContext(ctx, `UPDATE idempotency SET state = 'done', result = ?, expires = ?
		WHERE key = ? AND owner = ? AND claimed = ? AND state = 'claimed'`, result, unixNano(expires), c.Key, c.Owner, unixNano(c.Claimed))
	}
	if err != nil {
		return fmt.Errorf("settling idempotency key %q: %w", c.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("settling idempotency key %q: its claim by %s is gone: %w", c.Key, c.Owner, ErrConflict)
	}
	s.wrote(1)
	return nil
}

// SettleKey implements IdemRecords. The record keeps the arguments and
// checkpoint it was claimed with, if it had any.
func (s *SQLite) SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error {
	if s.closed.Load() {
		return ErrClosed
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO idempotency (key, owner, state, result, claimed, expires)
	VALUES (?, '', 'done', ?, ?, ?)
	ON CONFLICT (key) DO UPDATE SET state = 'done', result = excluded.result, expires = excluded.expires`,
		key, result, time.Now().UnixNano(), unixNano(expires))
	if err != nil {
		return fmt.Errorf("settling idempotency key %q: %w", key, err)
	}
	s.wrote(1)
	return nil
}

// ClaimedKeys implements IdemRecords.
func (s *SQLite) ClaimedKeys(ctx context.Context) ([]*IdemRecord, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+idemColumns+` FROM idempotency WHERE state = 'claimed' ORDER BY claimed, key`)
	if err != nil {
		return nil, fmt.Errorf("listing idempotency claims: %w", err)
	}
	defer rows.Close()
	var out []*IdemRecord
	for rows.Next() {
		r, err := scanIdem(rows)
		if err != nil {
			return nil, fmt.Errorf("listing idempotency claims: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SweepKeys implements IdemRecords.
func (s *SQLite) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM idempotency WHERE state = 'done' AND expires <= ? AND expires != 0`, now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("sweeping idempotency keys: %w", err)
	}
	n, err := res.RowsAffected()
	s.wrote(int(n))
	return int(n), err
}

// unsafeString returns b as a string without a copy, to bind it as TEXT:
// the driver copies it into SQLite during the Exec, and b does not change
// meanwhile (records are not modified once appended).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// AppendAudit implements AuditLog: one IMMEDIATE transaction, with
// multi-row INSERTs.
func (s *SQLite) AppendAudit(ctx context.Context, recs []*AuditRecord, cps []AuditCheckpoint) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if len(recs) == 0 && len(cps) == 0 {
		return nil
	}
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("appending audit records: %w", err)
	}
	defer tx.Rollback()
	if len(recs) > 0 {
		// The seq column alone would accept a gap.
		var head int64
		if err := tx.QueryRowContext(ctx, `SELECT ifnull(max(seq), 0) FROM audit`).Scan(&head); err != nil {
			return fmt.Errorf("appending audit records: %w", err)
		}
		if err := follows(recs, head); err != nil {
			return err
		}
	}
	args := make([]any, 0, auditChunks[0]*auditColumnCount)
	rest := recs
	for i, n := range auditChunks {
		if len(rest) < n {
			continue
		}
		st := tx.StmtContext(ctx, s.insAudit[i])
		for len(rest) >= n {
			args = args[:0]
			for _, r := range rest[:n] {
				args = append(args, r.Seq, unixNano(r.Time), r.Request, unsafeString(r.Data), r.PrevHash, r.Hash)
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				if isConstraint(err) {
					err = ErrConflict
				}
				return fmt.Errorf("appending audit records %d-%d: %w", rest[0].Seq, rest[n-1].Seq, err)
			}
			rest = rest[n:]
		}
	}
	if len(cps) > 0 {
		st := tx.StmtContext(ctx, s.insCp)
		for _, cp := range cps {
			if _, err := st.ExecContext(ctx, cp.Seq, cp.Hash, unixNano(cp.Time)); err != nil {
				return fmt.Errorf("appending audit checkpoint %d: %w", cp.Seq, err)
			}
		}
	}
	// Remember the new records for the index pass (the list restarts
	// whenever it would not be contiguous).
	recent := s.recent
	if len(recs) > 0 && (len(recent) == 0 || recent[len(recent)-1].seq+1 != recs[0].Seq) {
		recent = recent[:0]
	}
	for _, r := range recs {
		recent = append(recent, reqSeq{r.Seq, r.Request})
	}
	indexed := s.indexed.Load()
	if len(recs) > 0 && recs[len(recs)-1].Seq-indexed >= indexEvery {
		s.recent = recent
		if err := s.indexAudit(ctx, tx); err != nil {
			s.recent = s.recent[:0]
			return fmt.Errorf("indexing audit records: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		s.recent = s.recent[:0]
		s.indexed.Store(indexed)
		return fmt.Errorf("appending audit records: %w", err)
	}
	// Drop what the index now covers.
	if i, _ := slices.BinarySearchFunc(recent, s.indexed.Load()+1, func(e reqSeq, seq int64) int { return cmp.Compare(e.seq, seq) }); i > 0 {
		recent = append(recent[:0], recent[i:]...)
	}
	s.recent = recent
	s.wrote(len(recs))
	return nil
}

// indexEvery is how many audit records accumulate before they are added to
// the request index, in one sorted pass; indexMax bounds one pass.
const (
	indexEvery = 4096
	indexMax   = 4 * indexEvery
)

// indexAudit adds a pass over the records after the 'indexed' mark to the
// request index: one audit_requests row per request, with its seqs.
func (s *SQLite) indexAudit(ctx context.Context, tx *sql.Tx) error {
	var from int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM audit_meta WHERE key = 'indexed'`).Scan(&from); err != nil {
		return err
	}
	seqs := map[string][]byte{}
	var order []string
	last := map[string]int64{}
	to := from
	add := func(seq int64, req string) {
		b, ok := seqs[req]
		if !ok {
			order = append(order, req)
			last[req] = from
		}
		seqs[req] = binary.AppendUvarint(b, uint64(seq-last[req]))
		last[req], to = seq, seq
	}
	// What this store appended since the mark is in memory; otherwise
	// (after a restart, or another process appended) read it back.
	if i, ok := slices.BinarySearchFunc(s.recent, from+1, func(e reqSeq, seq int64) int { return cmp.Compare(e.seq, seq) }); ok &&
		s.recent[len(s.recent)-1].seq-s.recent[i].seq == int64(len(s.recent)-1-i) {
		for _, e := range s.recent[i:min(len(s.recent), i+indexMax)] {
			add(e.seq, e.request)
		}
	} else {
		rows, err := tx.QueryContext(ctx, `SELECT seq, request FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`, from, indexMax)
		if err != nil {
			return err
		}
		for rows.Next() {
			var seq int64
			var req string
			if err := rows.Scan(&seq, &req); err != nil {
				rows.Close()
				return err
			}
			add(seq, req)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if to == from {
		return nil
	}
	pass := from + 1
	slices.Sort(order)
	st := tx.StmtContext(ctx, s.insIdx)
	for _, req := range order {
		if _, err := st.ExecContext(ctx, pass, req, seqs[req]); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_passes (pass, last) VALUES (?, ?)`, pass, to); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO audit_meta (key, value) VALUES ('indexed', ?)`, to); err != nil {
		return err
	}
	s.indexed.Store(to)
	return nil
}

// reqSeq is a record's seq and request, kept from AppendAudit to the next
// index pass.
type reqSeq struct {
	seq     int64
	request string
}

// AuditHead implements AuditLog.
func (s *SQLite) AuditHead(ctx context.Context) (int64, []byte, error) {
	if s.closed.Load() {
		return 0, nil, ErrClosed
	}
	var seq int64
	var hash []byte
	err := s.r.QueryRowContext(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading the audit head: %w", err)
	}
	return seq, hash, nil
}

// The columns are read through casts, so that a row edited by hand to hold
// a value of another type is still read (and then fails verification)
// rather than breaking the scan.
const auditSelect = `SELECT seq, ifnull(cast(time AS INTEGER), 0), ifnull(cast(request AS TEXT), ''),
	ifnull(cast(event AS BLOB), x''), ifnull(cast(prev_hash AS BLOB), x''), ifnull(cast(hash AS BLOB), x'')
	FROM audit `

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryAudit(ctx context.Context, db querier, q string, args ...any) ([]*AuditRecord, error) {
	rows, err := db.QueryContext(ctx, auditSelect+q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	var out []*AuditRecord
	for rows.Next() {
		var r AuditRecord
		var t int64
		if err := rows.Scan(&r.Seq, &t, &r.Request, &r.Data, &r.PrevHash, &r.Hash); err != nil {
			return out, fmt.Errorf("reading the audit log: %w", err)
		}
		r.Time = fromUnixNano(t)
		out = append(out, &r)
	}
	return out, rows.Err()
}

// ScanAudit implements AuditLog.
func (s *SQLite) ScanAudit(ctx context.Context, after int64, limit int) ([]*AuditRecord, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if limit <= 0 {
		limit = -1
	}
	return queryAudit(ctx, s.r, `WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
}

// RequestAudit implements AuditLog: the request's seqs from each pass of
// the index, then a scan of the records no pass covers yet, in one read
// transaction (one snapshot).
func (s *SQLite) RequestAudit(ctx context.Context, request string) ([]*AuditRecord, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer tx.Rollback()
	var indexed int64
	if err := tx.QueryRowContext(ctx, `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`).Scan(&indexed); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	// CROSS JOIN keeps audit_passes outside: one key lookup per pass.
	rows, err := tx.QueryContext(ctx, `SELECT r.pass, r.seqs FROM audit_passes p CROSS JOIN audit_requests r
	ON r.pass = p.pass AND r.request = ? WHERE p.last <= ? ORDER BY p.pass`, request, indexed)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	var seqs []any
	for rows.Next() {
		var pass int64
		var b []byte
		if err := rows.Scan(&pass, &b); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		seq := pass - 1
		for len(b) > 0 {
			d, n := binary.Uvarint(b)
			if n <= 0 {
				break
			}
			seq += int64(d)
			seqs = append(seqs, seq)
			b = b[n:]
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	var out []*AuditRecord
	for len(seqs) > 0 {
		n := min(len(seqs), 500)
		recs, err := queryAudit(ctx, tx, `WHERE seq IN (?`+strings.Repeat(", ?", n-1)+`) ORDER BY seq`, seqs[:n]...)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		seqs = seqs[n:]
	}
	tail, err := queryAudit(ctx, tx, `WHERE seq > ? AND request = ? ORDER BY seq`, indexed, request)
	if err != nil {
		return nil, err
	}
	return append(out, tail...), nil
}

// AuditCheckpoints implements AuditLog.
func (s *SQLite) AuditCheckpoints(ctx context.Context) ([]AuditCheckpoint, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, ifnull(cast(hash AS BLOB), x''), ifnull(cast(time AS INTEGER), 0)
	FROM checkpoints ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("reading audit checkpoints: %w", err)
	}
	defer rows.Close()
	var out []AuditCheckpoint
	for rows.Next() {
		var cp AuditCheckpoint
		var t int64
		if err := rows.Scan(&cp.Seq, &cp.Hash, &t); err != nil {
			return nil, fmt.Errorf("reading audit checkpoints: %w", err)
		}
		cp.Time = fromUnixNano(t)
		out = append(out, cp)
	}
	return out, rows.Err()
}

// AddDeadLetter implements DeadLetters.
func (s *SQLite) AddDeadLetter(ctx context.Context, d *DeadLetter) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	now := time.Now()
	res, err := s.w.ExecContext(ctx, `INSERT INTO dead_letters
	(request, frame, tool, args, error, attempts, state, note, created, updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.Request, d.Frame, d.Tool, nullBytes(d.Args), d.Error, d.Attempts, DeadOpen, d.Note, now.UnixNano(), now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("storing a dead letter: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("storing a dead letter: %w", err)
	}
	s.wrote(1)
	d.ID, d.State, d.Created, d.Updated = id, DeadOpen, round(now), round(now)
	return id, nil
}

// ListDeadLetters implements DeadLetters.
func (s *SQLite) ListDeadLetters(ctx context.Context, state string) ([]*DeadLetter, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	q := `SELECT id, request, frame, tool, args, error, attempts, state, note, created, updated FROM dead_letters`
	var args []any
	if state != "" {
		q += ` WHERE state = ?`
		args = append(args, state)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	defer rows.Close()
	var out []*DeadLetter
	for rows.Next() {
		var d DeadLetter
		var a sql.NullString
		var created, updated int64
		if err := rows.Scan(&d.ID, &d.Request, &d.Frame, &d.Tool, &a, &d.Error, &d.Attempts, &d.State, &d.Note,
			&created, &updated); err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
		d.Args, d.Created, d.Updated = bytesOf(a), fromUnixNano(created), fromUnixNano(updated)
		out = append(out, &d)
	}
	return out, rows.Err()
}

// UpdateDeadLetter implements DeadLetters.
func (s *SQLite) UpdateDeadLetter(ctx context.Context, d *DeadLetter) error {
	if s.closed.Load() {
		return ErrClosed
	}
	now := time.Now()
	res, err := s.w.ExecContext(ctx, `UPDATE dead_letters SET state = ?, note = ?, error = ?, attempts = ?, updated = ?
	WHERE id = ?`, d.State, d.Note, d.Error, d.Attempts, now.UnixNano(), d.ID)
	if err != nil {
		return fmt.Errorf("updating dead letter %d: %w", d.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("dead letter %d: %w", d.ID, ErrNotFound)
	}
	s.wrote(1)
	d.Updated = round(now)
	return nil
}

// TakeDeadLetter implements DeadLetters.
func (s *SQLite) TakeDeadLetter(ctx context.Context, id int64) (*DeadLetter, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	now := time.Now()
	res, err := s.w.ExecContext(ctx, `UPDATE dead_letters SET state = ?, updated = ? WHERE id = ? AND state = ?`,
		DeadTaken, now.UnixNano(), id, DeadOpen)
	if err != nil {
		return nil, fmt.Errorf("taking dead letter %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("taking dead letter %d: %w", id, err)
	}
	var d DeadLetter
	var a sql.NullString
	var created, updated int64
	err = s.w.QueryRowContext(ctx, `SELECT id, request, frame, tool, args, error, attempts, state, note, created, updated
	FROM dead_letters WHERE id = ?`, id).Scan(&d.ID, &d.Request, &d.Frame, &d.Tool, &a, &d.Error, &d.Attempts, &d.State, &d.Note,
		&created, &updated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("dead letter %d: %w", id, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("taking dead letter %d: %w", id, err)
	case n == 0 && d.State == DeadTaken:
		return nil, fmt.Errorf("dead letter %d is taken: %w", id, ErrConflict)
	case n == 0:
		return nil, fmt.Errorf("dead letter %d is %s: %w", id, d.State, ErrNotFound)
	}
	s.wrote(1)
	d.Args, d.Created, d.Updated = bytesOf(a), fromUnixNano(created), fromUnixNano(updated)
	return &d, nil
}
