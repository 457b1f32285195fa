package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentreach/reach/internal/store"
)

// DefaultFile is the name of the SQLite database inside the data folder.
const DefaultFile = "reach.db"

// Options configure Open. A nil *Options means all defaults.
type Options struct {
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
	// Logger reports the queued writes that failed (they have no caller
	// to return an error to); if nil, logs are discarded.
	Logger *slog.Logger
}

// Store is the embedded store.Store: one SQLite database in WAL mode, written
// by one goroutine that commits whatever is queued in one transaction
// (group commit, see writer.go), and read through a small pool. The schema
// is migrated when it is opened. Safe for concurrent use; several processes
// may open the same file, but only one should append to its audit log.
type Store struct {
	path string
	w    *sql.DB // one connection: every write, by the writer
	r    *sql.DB // readers
	log  *slog.Logger

	writerFields
	batches      atomic.Int64
	queuedFailed atomic.Int64

	indexed atomic.Int64 // the 'indexed' mark as last seen
	recent  []reqSeq     // records appended here after the mark, by seq; the writer's

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

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed, unless opts.NoCreate) the SQLite store in
// the folder dir, and applies the schema migrations it lacks.
func Open(ctx context.Context, dir string, opts *Options) (*Store, error) {
	var o Options
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
	// The writer's page cache is SQLite's default size, 2 MiB: at 16 MiB
	// `reach serve` held 27 MB more under 64 clients, and each commit
	// spent longer scanning the cache's hash table (pcache1Truncate), for
	// no gain (docs/BENCHMARKS.md).
	w, err := sql.Open("sqlite", path+"?"+pragmas+"&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(67108864)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-2048)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: path, w: w, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
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
	s.startWriter()
	return s, nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// wrote counts n rows written and wakes the checkpointer every
// checkpointEvery rows.
func (s *Store) wrote(n int) {
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
func (s *Store) checkpointer() {
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

// Close commits the writes queued, and closes the store's connections.
// SQLite checkpoints the WAL into the database file when the last
// connection closes. Later calls fail with ErrClosed.
func (s *Store) Close() error {
	var errs []error
	s.close.Do(func() {
		if s.q != nil {
			s.stopWriter()
		}
		s.closed.Store(true)
		if s.ck != nil {
			close(s.ckStop)
			<-s.ckDone
			errs = append(errs, s.ck.Close())
		}
		errs = append(errs, s.closeStmts()...)
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		errs = append(errs, s.w.Close())
	})
	return errors.Join(errs...)
}

// SchemaVersion returns the newest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	db := s.w
	if s.r != nil {
		db = s.r
	}
	var v int
	err := db.QueryRowContext(ctx, `SELECT ifnull(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// migrate applies the migrations the database lacks, each in its own
// transaction. It refuses a database migrated by a newer binary.
func (s *Store) migrate(ctx context.Context) error {
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

func (s *Store) apply(ctx context.Context, m migration) error {
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

func (s *Store) prepare(ctx context.Context) error {
	if err := s.prepareWriter(ctx); err != nil {
		return err
	}
	var indexed int64
	if err := s.w.QueryRowContext(ctx, `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`).Scan(&indexed); err != nil {
		return err
	}
	s.indexed.Store(indexed)
	s.indexedCommitted = indexed
	return nil
}

// isConstraint reports whether err is an SQLite constraint violation.
func isConstraint(err error) bool {
	var se *driver.Error
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

// PutRequest implements Requests: durable when it returns.
func (s *Store) PutRequest(ctx context.Context, r *store.Request) error {
	if s.closed.Load() {
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
	err := s.do(ctx, &write{run: func(b *batch) error {
		n, err := b.affected(stPutRequest, r.ID, r.Parent, r.Principal, r.Tenant, nullBytes(roles), nullBytes(attrs), r.Trace,
			r.Scene, r.Agent, r.State, nullBytes(r.Budget), nullBytes(r.Usage), nullBytes(r.Cause), store.UnixNano(r.Started),
			store.UnixNano(r.Ended), now.UnixNano())
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("storing request %s: %w", r.ID, errFinal)
		}
		return nil
	}})
	if err != nil {
		if errors.Is(err, errFinal) {
			return s.finalError(r.ID)
		}
		return fmt.Errorf("storing request %s: %w", r.ID, err)
	}
	r.Updated = store.Round(now)
	return nil
}

// errFinal marks a request that PutRequest may not replace.
var errFinal = fmt.Errorf("final: %w", store.ErrConflict)

// finalError says why the stored request id may not be replaced.
func (s *Store) finalError(id string) error {
	state := "interrupted by a restart"
	if old, err := s.GetRequest(context.Background(), id); err == nil && old.State == "stopped" {
		state = "stopped"
	}
	return fmt.Errorf("storing request %s: it was %s, and stays so: %w", id, state, store.ErrConflict)
}

const requestColumns = `id, parent, principal, tenant, roles, attributes, trace, scene, agent, state, budget, usage, cause, started, ended, updated`

func scanRequest(sc interface{ Scan(...any) error }) (*store.Request, error) {
	var r store.Request
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
	r.Started, r.Ended, r.Updated = store.FromUnixNano(started), store.FromUnixNano(ended), store.FromUnixNano(updated)
	return &r, nil
}

// requestsQuery is the query of ListRequests(f) and its arguments.
func requestsQuery(f store.RequestFilter) (string, []any) {
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
	if f.Roots {
		q += ` AND parent = ''`
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
func (s *Store) GetRequest(ctx context.Context, id string) (*store.Request, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	r, err := scanRequest(s.r.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM requests WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("request %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading request %s: %w", id, err)
	}
	return r, nil
}

// ListRequests implements Requests.
func (s *Store) ListRequests(ctx context.Context, f store.RequestFilter) ([]*store.Request, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q, args := requestsQuery(f)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	defer rows.Close()
	var out []*store.Request
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("listing requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// PutFrame implements Frames: durable when it returns.
func (s *Store) PutFrame(ctx context.Context, f *store.Frame) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := s.do(ctx, s.frameWrite(f)); err != nil {
		return fmt.Errorf("storing frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	return nil
}

// QueueFrame implements Frames: it returns at once, and the frame is
// written with a later batch.
func (s *Store) QueueFrame(f *store.Frame) {
	w := s.frameWrite(f)
	w.what = "frame " + f.Frame + " of request " + f.Request
	s.queue(w)
}

func (s *Store) frameWrite(f *store.Frame) *write {
	now := time.Now()
	f.Updated = store.Round(now)
	key := frameKey(f.Request, f.Frame)
	return &write{pairs: key, run: func(b *batch) error {
		if s.lost[key] {
			delete(s.lost, key)
			return fmt.Errorf("the idempotency claim of its call was not recorded, so the call must not run: %w", store.ErrConflict)
		}
		if f.State != "executing" {
			// The end of a checkpoint written before: an update finds it
			// without trying an insert first.
			n, err := b.affected(stUpdateFrame, f.Parent, f.Kind, f.Name, f.CallID, f.IdemKey, f.State, nullBytes(f.Args),
				nullBytes(f.Undo), nullBytes(f.Error), store.UnixNano(f.Started), now.UnixNano(), f.Request, f.Frame)
			if err != nil || n == 1 {
				return err
			}
		}
		_, err := b.affected(stPutFrame, f.Request, f.Frame, f.Parent, f.Kind, f.Name, f.CallID, f.IdemKey, f.State,
			nullBytes(f.Args), nullBytes(f.Undo), nullBytes(f.Error), store.UnixNano(f.Started), now.UnixNano())
		return err
	}}
}

func (s *Store) queryFrames(ctx context.Context, where string, args ...any) ([]*store.Frame, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT request, frame, parent, kind, name, call_id, idem_key, state,
	args, undo, error, started, updated FROM frames WHERE `+where+` ORDER BY started, rowid`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading frames: %w", err)
	}
	defer rows.Close()
	var out []*store.Frame
	for rows.Next() {
		var f store.Frame
		var a, u, e sql.NullString
		var started, updated int64
		if err := rows.Scan(&f.Request, &f.Frame, &f.Parent, &f.Kind, &f.Name, &f.CallID, &f.IdemKey, &f.State,
			&a, &u, &e, &started, &updated); err != nil {
			return nil, fmt.Errorf("reading frames: %w", err)
		}
		f.Args, f.Undo, f.Error = bytesOf(a), bytesOf(u), bytesOf(e)
		f.Started, f.Updated = store.FromUnixNano(started), store.FromUnixNano(updated)
		out = append(out, &f)
	}
	return out, rows.Err()
}

// RequestFrames implements Frames.
func (s *Store) RequestFrames(ctx context.Context, request string) ([]*store.Frame, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return s.queryFrames(ctx, `request = ?`, request)
}

// OpenFrames implements Frames.
func (s *Store) OpenFrames(ctx context.Context) ([]*store.Frame, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return s.queryFrames(ctx, `state NOT IN ('completed', 'failed', 'refused', 'cancelled')`)
}

// ClaimKey implements IdemRecords. The claim of a call that is not
// checkpointed (c.Frame empty) is durable when ClaimKey returns. The claim
// of a checkpointed call is answered as soon as it is decided, and is
// committed with the call's "executing" checkpoint, which the writer waits
// for (briefly) before it commits: that PutFrame returns once both are
// durable, or fails if the claim could not be committed.
func (s *Store) ClaimKey(ctx context.Context, c *store.IdemRecord) (rec *store.IdemRecord, claimed bool, err error) {
	if s.closed.Load() {
		return nil, false, store.ErrClosed
	}
	w := &write{}
	var found *store.IdemRecord // what the writer found, in its latest run
	w.run = func(b *batch) error {
		w.claimed, found = false, nil
		n, err := b.affected(stIdemClaim, c.Key, c.Owner, c.Args, c.Request, c.Frame, store.UnixNano(c.Claimed), store.UnixNano(c.Expires))
		if err != nil {
			return err
		}
		if n == 1 {
			w.claimed = true
			return nil
		}
		r, err := scanIdem(b.queryRow(stIdemGet, c.Key))
		if err = scanErr(err); err != nil {
			return err
		}
		found = r
		return nil
	}
	if c.Frame != "" && c.Request != "" {
		w.pair, w.decided = frameKey(c.Request, c.Frame), make(chan struct{})
		var aRec *store.IdemRecord
		var aClaimed bool
		var aErr error
		w.answer = func(e error) { aRec, aClaimed, aErr = found, w.claimed && e == nil, e }
		if err := s.send(w); err != nil {
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
	} else if err = s.do(ctx, w); err == nil {
		// Read only after the writer answered: on a context's end it may
		// still be running the write.
		rec, claimed = found, w.claimed
	}
	if err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", c.Key, err)
	}
	return rec, claimed, nil
}

// frameKey names a checkpoint for the writer's pairing of claims.
func frameKey(request, frame string) string { return request + "\x00" + frame }

const idemColumns = `key, owner, state, args, request, frame, result, claimed, expires`

func scanIdem(sc interface{ Scan(...any) error }) (*store.IdemRecord, error) {
	var r store.IdemRecord
	var claimed, expires int64
	if err := sc.Scan(&r.Key, &r.Owner, &r.State, &r.Args, &r.Request, &r.Frame, &r.Result, &claimed, &expires); err != nil {
		return nil, err
	}
	r.Claimed, r.Expires = store.FromUnixNano(claimed), store.FromUnixNano(expires)
	if len(r.Result) == 0 {
		r.Result = nil
	}
	return &r, nil
}

// CompleteKey implements IdemRecords: durable when it returns.
func (s *Store) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.do(ctx, completeWrite(key, owner, result, expires))
}

// QueueCompleteKey implements IdemRecords: it returns at once, and the
// result is recorded with a later batch (a failure is logged).
func (s *Store) QueueCompleteKey(key, owner string, result []byte, expires time.Time) {
	w := completeWrite(key, owner, result, expires)
	w.what = "the result of idempotency key " + strconv.Quote(key)
	s.queue(w)
}

func completeWrite(key, owner string, result []byte, expires time.Time) *write {
	return &write{run: func(b *batch) error {
		n, err := b.affected(stIdemComplete, result, store.UnixNano(expires), key, owner)
		if err != nil {
			return fmt.Errorf("completing idempotency key %q: %w", key, err)
		}
		if n == 0 {
			return fmt.Errorf("completing idempotency key %q: not claimed by %s: %w", key, owner, store.ErrConflict)
		}
		return nil
	}}
}

// ReleaseKey implements IdemRecords: durable when it returns.
func (s *Store) ReleaseKey(ctx context.Context, key, owner string) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.do(ctx, releaseWrite(key, owner))
}

// QueueReleaseKey implements IdemRecords: it returns at once, and the
// claim is deleted with a later batch.
func (s *Store) QueueReleaseKey(key, owner string) {
	w := releaseWrite(key, owner)
	w.what = "the release of idempotency key " + strconv.Quote(key)
	s.queue(w)
}

func releaseWrite(key, owner string) *write {
	return &write{run: func(b *batch) error {
		if _, err := b.affected(stIdemRelease, key, owner); err != nil {
			return fmt.Errorf("releasing idempotency key %q: %w", key, err)
		}
		return nil
	}}
}

// SettleClaim implements IdemRecords.
func (s *Store) SettleClaim(ctx context.Context, c *store.IdemRecord, result []byte, expires time.Time) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.do(ctx, &write{run: func(b *batch) error {
		var n int64
		var err error
		if result == nil {
			n, err = b.affected(stIdemSettleDelete, c.Key, c.Owner, store.UnixNano(c.Claimed))
		} else {
			n, err = b.affected(stIdemSettleUpdate, result, store.UnixNano(expires), c.Key, c.Owner, store.UnixNano(c.Claimed))
		}
		if err != nil {
			return fmt.Errorf("settling idempotency key %q: %w", c.Key, err)
		}
		if n == 0 {
			return fmt.Errorf("settling idempotency key %q: its claim by %s is gone: %w", c.Key, c.Owner, store.ErrConflict)
		}
		return nil
	}})
}

// SettleKey implements IdemRecords. The record keeps the arguments and
// checkpoint it was claimed with, if it had any.
func (s *Store) SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.do(ctx, &write{run: func(b *batch) error {
		if _, err := b.affected(stIdemSettleKey, key, result, time.Now().UnixNano(), store.UnixNano(expires)); err != nil {
			return fmt.Errorf("settling idempotency key %q: %w", key, err)
		}
		return nil
	}})
}

// ClaimedKeys implements IdemRecords.
func (s *Store) ClaimedKeys(ctx context.Context) ([]*store.IdemRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+idemColumns+` FROM idempotency WHERE state = 'claimed' ORDER BY claimed, key`)
	if err != nil {
		return nil, fmt.Errorf("listing idempotency claims: %w", err)
	}
	defer rows.Close()
	var out []*store.IdemRecord
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
func (s *Store) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var n int64
	err := s.do(ctx, &write{run: func(b *batch) error {
		var err error
		if n, err = b.affected(stIdemSweep, now.UnixNano()); err != nil {
			return fmt.Errorf("sweeping idempotency keys: %w", err)
		}
		return nil
	}})
	return int(n), err
}

// unsafeString returns b as a string without a copy, to bind it as TEXT:
// the driver copies it into SQLite during the Exec, and b does not change
// meanwhile (records are not modified once appended).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// AppendAudit implements AuditLog: the records go into the writer's next
// batch (with multi-row INSERTs), and are durable when it returns.
func (s *Store) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if len(recs) == 0 && len(cps) == 0 {
		return nil
	}
	return s.do(ctx, &write{run: func(b *batch) error { return s.appendAudit(b, recs, cps) }, after: func(committed bool) {
		if committed {
			s.indexedCommitted = s.indexed.Load()
		}
	}})
}

// appendAudit is AppendAudit in the writer's batch.
func (s *Store) appendAudit(b *batch, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	if len(recs) > 0 {
		// The seq column alone would accept a gap.
		var head int64
		if err := scanErr(b.queryRow(stAuditHead).Scan(&head)); err != nil {
			return fmt.Errorf("appending audit records: %w", err)
		}
		if err := store.Follows(recs, head); err != nil {
			return err
		}
	}
	args := make([]any, 0, auditChunks[0].rows*auditColumnCount)
	rest := recs
	for _, c := range auditChunks {
		for len(rest) >= c.rows {
			args = args[:0]
			for _, r := range rest[:c.rows] {
				args = append(args, r.Seq, store.UnixNano(r.Time), r.Request, unsafeString(r.Data), r.PrevHash, r.Hash)
			}
			if _, err := b.affected(c.id, args...); err != nil {
				return fmt.Errorf("appending audit records %d-%d: %w", rest[0].Seq, rest[c.rows-1].Seq, err)
			}
			rest = rest[c.rows:]
		}
	}
	for _, cp := range cps {
		if _, err := b.affected(stAuditCheckpoint, cp.Seq, cp.Hash, store.UnixNano(cp.Time)); err != nil {
			return fmt.Errorf("appending audit checkpoint %d: %w", cp.Seq, err)
		}
	}
	// Remember the new records for the index pass (the list restarts
	// whenever it would not be contiguous). A rolled-back batch forgets
	// them all (rolledBack).
	if len(recs) > 0 && (len(s.recent) == 0 || s.recent[len(s.recent)-1].seq+1 != recs[0].Seq) {
		s.recent = s.recent[:0]
	}
	for _, r := range recs {
		s.recent = append(s.recent, reqSeq{r.Seq, r.Request})
	}
	if len(recs) > 0 && recs[len(recs)-1].Seq-s.indexed.Load() >= indexEvery {
		if err := s.indexAudit(b); err != nil {
			return fmt.Errorf("indexing audit records: %w", err)
		}
		// Drop what the index now covers.
		if i, _ := slices.BinarySearchFunc(s.recent, s.indexed.Load()+1, func(e reqSeq, seq int64) int { return cmp.Compare(e.seq, seq) }); i > 0 {
			s.recent = append(s.recent[:0], s.recent[i:]...)
		}
	}
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
func (s *Store) indexAudit(b *batch) error {
	var from int64
	if err := scanErr(b.queryRow(stAuditIndexed).Scan(&from)); err != nil {
		return err
	}
	seqs := map[string][]byte{}
	var order []string
	last := map[string]int64{}
	to := from
	add := func(seq int64, req string) {
		bs, ok := seqs[req]
		if !ok {
			order = append(order, req)
			last[req] = from
		}
		seqs[req] = binary.AppendUvarint(bs, uint64(seq-last[req]))
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
		rows, err := b.stmt(stAuditScanFrom).QueryContext(bg, from, indexMax)
		if err != nil {
			return &dbError{err}
		}
		for rows.Next() {
			var seq int64
			var req string
			if err := rows.Scan(&seq, &req); err != nil {
				rows.Close()
				return &dbError{err}
			}
			add(seq, req)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return &dbError{err}
		}
	}
	if to == from {
		return nil
	}
	pass := from + 1
	slices.Sort(order)
	for _, req := range order {
		if _, err := b.affected(stAuditIndexRow, pass, req, seqs[req]); err != nil {
			return err
		}
	}
	if _, err := b.affected(stAuditPass, pass, to); err != nil {
		return err
	}
	if _, err := b.affected(stAuditSetIndexed, to); err != nil {
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
func (s *Store) AuditHead(ctx context.Context) (int64, []byte, error) {
	if s.closed.Load() {
		return 0, nil, store.ErrClosed
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

func queryAudit(ctx context.Context, db querier, q string, args ...any) ([]*store.AuditRecord, error) {
	rows, err := db.QueryContext(ctx, auditSelect+q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	var out []*store.AuditRecord
	for rows.Next() {
		var r store.AuditRecord
		var t int64
		if err := rows.Scan(&r.Seq, &t, &r.Request, &r.Data, &r.PrevHash, &r.Hash); err != nil {
			return out, fmt.Errorf("reading the audit log: %w", err)
		}
		r.Time = store.FromUnixNano(t)
		out = append(out, &r)
	}
	return out, rows.Err()
}

// ScanAudit implements AuditLog.
func (s *Store) ScanAudit(ctx context.Context, after int64, limit int) ([]*store.AuditRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = -1
	}
	return queryAudit(ctx, s.r, `WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
}

// RequestAudit implements AuditLog: the request's seqs from each pass of
// the index, then a scan of the records no pass covers yet, in one read
// transaction (one snapshot).
func (s *Store) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
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
	var out []*store.AuditRecord
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
func (s *Store) AuditCheckpoints(ctx context.Context) ([]store.AuditCheckpoint, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, ifnull(cast(hash AS BLOB), x''), ifnull(cast(time AS INTEGER), 0)
	FROM checkpoints ORDER BY seq`)
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
	return out, rows.Err()
}

// AddDeadLetter implements DeadLetters: durable when it returns.
func (s *Store) AddDeadLetter(ctx context.Context, d *store.DeadLetter) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	now := time.Now()
	var id int64
	err := s.do(ctx, &write{run: func(b *batch) error {
		res, err := b.exec(stDeadAdd, d.Request, d.Frame, d.Tool, nullBytes(d.Args), d.Error, d.Attempts, store.DeadOpen, d.Note,
			now.UnixNano(), now.UnixNano())
		if err != nil {
			return err
		}
		b.rows++
		if id, err = res.LastInsertId(); err != nil {
			return &dbError{err}
		}
		return nil
	}})
	if err != nil {
		return 0, fmt.Errorf("storing a dead letter: %w", err)
	}
	d.ID, d.State, d.Created, d.Updated = id, store.DeadOpen, store.Round(now), store.Round(now)
	return id, nil
}

// ListDeadLetters implements DeadLetters.
func (s *Store) ListDeadLetters(ctx context.Context, state string) ([]*store.DeadLetter, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
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
	var out []*store.DeadLetter
	for rows.Next() {
		var d store.DeadLetter
		var a sql.NullString
		var created, updated int64
		if err := rows.Scan(&d.ID, &d.Request, &d.Frame, &d.Tool, &a, &d.Error, &d.Attempts, &d.State, &d.Note,
			&created, &updated); err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
		d.Args, d.Created, d.Updated = bytesOf(a), store.FromUnixNano(created), store.FromUnixNano(updated)
		out = append(out, &d)
	}
	return out, rows.Err()
}

// UpdateDeadLetter implements DeadLetters: durable when it returns.
func (s *Store) UpdateDeadLetter(ctx context.Context, d *store.DeadLetter) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	now := time.Now()
	err := s.do(ctx, &write{run: func(b *batch) error {
		n, err := b.affected(stDeadUpdate, d.State, d.Note, d.Error, d.Attempts, now.UnixNano(), d.ID)
		if err != nil {
			return fmt.Errorf("updating dead letter %d: %w", d.ID, err)
		}
		if n == 0 {
			return fmt.Errorf("dead letter %d: %w", d.ID, store.ErrNotFound)
		}
		return nil
	}})
	if err != nil {
		return err
	}
	d.Updated = store.Round(now)
	return nil
}

// TakeDeadLetter implements DeadLetters: the update and the read are one
// write of the writer's batch.
func (s *Store) TakeDeadLetter(ctx context.Context, id int64) (*store.DeadLetter, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	now := time.Now()
	var d store.DeadLetter
	err := s.do(ctx, &write{run: func(b *batch) error {
		n, err := b.affected(stDeadTake, store.DeadTaken, now.UnixNano(), id, store.DeadOpen)
		if err != nil {
			return err
		}
		var a sql.NullString
		var created, updated int64
		err = scanErr(b.queryRow(stDeadGet, id).Scan(&d.ID, &d.Request, &d.Frame, &d.Tool, &a, &d.Error, &d.Attempts,
			&d.State, &d.Note, &created, &updated))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("dead letter %d: %w", id, store.ErrNotFound)
		case err != nil:
			return err
		case n == 0 && d.State == store.DeadTaken:
			return fmt.Errorf("dead letter %d is taken: %w", id, store.ErrConflict)
		case n == 0:
			return fmt.Errorf("dead letter %d is %s: %w", id, d.State, store.ErrNotFound)
		}
		d.Args, d.Created, d.Updated = bytesOf(a), store.FromUnixNano(created), store.FromUnixNano(updated)
		return nil
	}})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		return nil, fmt.Errorf("taking dead letter %d: %w", id, err)
	}
	return &d, nil
}
