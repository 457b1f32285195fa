package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
	"github.com/agentreach/reach/internal/strview"
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
// (group commit: internal/store/sqlcore's writer, over the engine in
// writer.go), and read through a small pool. The schema
// is migrated when it is opened. Safe for concurrent use; several processes
// may open the same file, but only one should append to its audit log.
type Store struct {
	*sqlcore.Core // the operations, and the writer

	path string
	w    *sql.DB // one connection: every write, by the writer
	r    *sql.DB // readers
	log  *slog.Logger
	// wc is w's one connection, held by the writer from Open to Close, and
	// its statements are prepared on it, a transaction's too (txBegin,
	// txCommit, txRollback): a batch runs them as they are, with no
	// sql.Tx (which parses BEGIN and COMMIT again each time, starts a
	// goroutine, and binds every statement to it anew). The writer runs
	// those that only write (raw, see exec) on the driver's connection
	// itself; stmts, through database/sql, read (queries).
	wc                            *sql.Conn
	stmts                         [numStmts]*sql.Stmt // the writer's
	raw                           [numStmts]rawStmt   // the same, the driver's
	nparams                       [numStmts]int       // how many arguments each binds
	txBegin, txCommit, txRollback rawStmt
	nv                            []driver.NamedValue // exec's arguments, kept between statements (the writer's)

	indexed atomic.Int64 // the 'indexed' mark as last seen
	// indexedCommitted is the 'indexed' mark as of the last committed
	// batch, to go back to when one is rolled back; the writer's.
	indexedCommitted int64
	recent           []reqSeq // records appended here after the mark, by seq; the writer's
	auditArgs        []any    // the arguments of an audit INSERT, kept between batches (the writer's)

	// The WAL is copied into the database by a goroutine of its own, on
	// its own connection, instead of by the writer at commit time.
	ck       *sql.DB
	ckSig    chan struct{} // wakes the checkpointer; never closed
	ckStop   chan struct{} // closed by Close
	ckDone   chan struct{} // closed when the checkpointer returns
	unsynced atomic.Int64  // rows written since the checkpointer was last woken
	close    sync.Once

	// Readiness (health.go): fault is why the last write failed (nil when
	// it committed), gone why the database file is not the one opened
	// (ident); watch looks again every ProbeEvery until watchStop.
	fault, gone          atomic.Pointer[string]
	ident                os.FileInfo
	watchStop, watchDone chan struct{}
}

// ownersOnly makes the store's file at path, when it does not exist yet
// and create is set, an empty file only its owner may read or write
// (0600, whatever the umask), before SQLite opens it: SQLite gives the
// -wal and -shm files it creates the main file's mode, so they follow,
// and the audit log, tool arguments and results in them are no other
// user's to read. A file that exists is left as it is (it is its owner's,
// who may share it on purpose); those of the store's files (the main
// file, -wal, -shm) that others may read or write are returned, each as
// "path (mode 0644)", for Open to warn of.
func ownersOnly(path string, create bool) ([]string, error) {
	if create {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			// The umask only takes bits away, yet a file made here is
			// set 0600 explicitly, as keys.json is.
			err = f.Chmod(0o600)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
				return nil, err
			}
		} else if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
	}
	var wide []string
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			wide = append(wide, fmt.Sprintf("%s (mode %04o)", p, st.Mode().Perm()))
		}
	}
	return wide, nil
}

// wideNames are the paths of ownersOnly's answer.
func wideNames(wide []string) []string {
	out := make([]string, len(wide))
	for i, w := range wide {
		out[i], _, _ = strings.Cut(w, " (mode ")
	}
	return out
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
	wide, err := ownersOnly(path, !o.NoCreate)
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	pragmas := []string{fmt.Sprintf("busy_timeout=%d", o.BusyTimeout.Milliseconds()),
		"synchronous=" + o.Synchronous, "foreign_keys=0"}
	// The writer's page cache is 1 MiB, half SQLite's default: it is C
	// memory, outside Go's soft limit, so every MiB of it is a MiB of RSS;
	// at 1 MiB the store's CPU a write call is the same as at 2 MiB, at
	// 512 KiB 6 % more (pages read again), and at 16 MiB `reach serve`
	// held 27 MB more under 64 clients and each commit spent longer
	// scanning the cache's hash table (pcache1Truncate) (docs/BENCHMARKS.md).
	w, err := openPool(path, true, append(pragmas, "wal_autocheckpoint=0", "journal_size_limit=67108864", "temp_store=MEMORY", "cache_size=-1024")...)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: path, w: w, log: o.Logger, Core: &sqlcore.Core{D: dialect}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if len(wide) > 0 {
		s.log.Warn(fmt.Sprintf("the store's files %s may be read by other users: they hold the audit log, tool arguments and results; reach leaves the mode of a file it did not create as it is: run chmod 600 %s, or chmod 700 the folder", strings.Join(wide, ", "), strings.Join(wideNames(wide), " ")), "path", path)
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
	r, err := openPool(path, false, append(pragmas, "query_only=1")...)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers)
	s.r, s.R = r, reader{r}
	if err := s.ReadIndexes(ctx); err != nil {
		s.r.Close()
		w.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if s.ck, err = openPool(path, false, pragmas...); err != nil {
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
	s.W = sqlcore.StartWriter(engine{s}, s.log)
	if !o.NoCreate {
		if s.ident, err = os.Stat(path); err != nil {
			s.Close()
			return nil, fmt.Errorf("opening store %s: %w", path, err)
		}
		s.watchStop, s.watchDone = make(chan struct{}), make(chan struct{})
		go s.watch()
	}
	// The rows the last run wrote since it moved the marks of the settled
	// frames and claims (frames.go) are read once here, not by the first
	// batch of a call; a command that only reads (NoCreate) leaves them.
	if !o.NoCreate {
		if err := s.W.Do(context.WithoutCancel(ctx), s.settleMarks()); err != nil {
			s.Close()
			return nil, fmt.Errorf("opening store %s: %w", path, err)
		}
	}
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
		// The mark of the settled frames moves with the next batch (unless
		// the store closes meanwhile: it moves at the next Open).
		s.W.TryQueue(s.settleMarks())
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
		if s.W != nil {
			s.W.Stop()
		}
		s.MarkClosed()
		if s.watchStop != nil {
			close(s.watchStop)
			<-s.watchDone
		}
		if s.ck != nil {
			close(s.ckStop)
			<-s.ckDone
			errs = append(errs, s.ck.Close())
		}
		errs = append(errs, s.closeStmts()...)
		if s.wc != nil {
			errs = append(errs, s.wc.Close())
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		errs = append(errs, s.w.Close())
	})
	return errors.Join(errs...)
}

// SchemaVersion returns the newest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	if s.Closed() {
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
	// A kill here: the migration's statements run (a table copied, the
	// old one dropped), not committed; the store keeps the schema before.
	crashpoint.Reached("migration")
	return tx.Commit()
}

func (s *Store) prepare(ctx context.Context) error {
	if err := s.prepareWriter(ctx); err != nil {
		return err
	}
	var indexed int64
	if err := s.wc.QueryRowContext(ctx, `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`).Scan(&indexed); err != nil {
		return err
	}
	s.indexed.Store(indexed)
	s.indexedCommitted = indexed
	return nil
}

// AppendAudit implements AuditLog: the records go into the writer's next
// batch (with multi-row INSERTs), and are durable when it returns.
func (s *Store) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	if s.Closed() {
		return store.ErrClosed
	}
	if len(recs) == 0 && len(cps) == 0 {
		return nil
	}
	return s.W.Do(ctx, &sqlcore.Write{Run: func(b sqlcore.Batch, w *sqlcore.Write) {
		b.(*batch).run(w, func() error { return s.appendAudit(b.(*batch), recs, cps) })
	}, After: func(committed bool) {
		if committed {
			s.indexedCommitted = s.indexed.Load()
		}
	}})
}

// HeldOnces implements store.AuditOnces.
func (s *Store) HeldOnces(ctx context.Context, onces []string) (map[string]bool, error) {
	if s.Closed() {
		return nil, store.ErrClosed
	}
	held := map[string]bool{}
	for _, o := range onces {
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM audit_once WHERE once = ?`, o).Scan(&n); err != nil {
			return nil, fmt.Errorf("reading the audit log's keys: %w", err)
		}
		if n > 0 {
			held[o] = true
		}
	}
	return held, nil
}

// appendAudit is AppendAudit in the writer's batch.
func (s *Store) appendAudit(b *batch, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	var onces []*store.AuditRecord
	if slices.ContainsFunc(recs, func(r *store.AuditRecord) bool { return r.Held || r.Once != "" }) {
		// Those Held are not appended (their key's event is in the log
		// already: the log's writer asked HeldOnces); the others' keys are.
		kept := make([]*store.AuditRecord, 0, len(recs))
		for _, r := range recs {
			if !r.Held {
				kept = append(kept, r)
				if r.Once != "" {
					onces = append(onces, r)
				}
			}
		}
		recs = kept
	}
	if len(recs) > 0 {
		// The seq column alone would accept a gap.
		head, err := b.queryInt(stAuditHead)
		if err != nil {
			return fmt.Errorf("appending audit records: %w", err)
		}
		if err := store.Follows(recs, head); err != nil {
			return err
		}
	}
	// The arguments of the largest INSERT are 768 values (12 KiB): kept
	// from batch to batch, not allocated for each, and cleared after it.
	args, used := s.auditArgs, 0
	defer func() { clear(args[:used]); s.auditArgs = args[:0] }()
	rest := recs
	for _, c := range auditChunks {
		for len(rest) >= c.rows {
			args = args[:0]
			for _, r := range rest[:c.rows] {
				// Data is bound as TEXT without a copy: the driver copies it during
				// the Exec, and records are not modified once appended.
				args = append(args, r.Seq, store.UnixNano(r.Time), r.Request, strview.Of(r.Data), r.PrevHash, r.Hash)
			}
			used = max(used, len(args))
			if _, err := b.affected(c.id, args...); err != nil {
				return fmt.Errorf("appending audit records %d-%d: %w", rest[0].Seq, rest[c.rows-1].Seq, err)
			}
			rest = rest[c.rows:]
		}
	}
	for _, r := range onces {
		if _, err := b.affected(stAuditOnce, r.Once, r.Seq); err != nil {
			return fmt.Errorf("appending audit event %d's key: %w", r.Seq, err)
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
	from, err := b.queryInt(stAuditIndexed)
	if err != nil {
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
		st, err := b.stmt(stAuditScanFrom)
		if err != nil {
			return &dbError{err}
		}
		rows, err := st.QueryContext(bg, from, indexMax)
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

// auditSnapshot begins a read transaction (one snapshot of the audit log
// and its index) and reads in it the last seq a pass of the index covers;
// the caller rolls the transaction back.
func (s *Store) auditSnapshot(ctx context.Context) (*sql.Tx, int64, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the audit log: %w", err)
	}
	var indexed int64
	if err := tx.QueryRowContext(ctx, `SELECT ifnull(max(value), 0) FROM audit_meta WHERE key = 'indexed'`).Scan(&indexed); err != nil {
		tx.Rollback()
		return nil, 0, fmt.Errorf("reading the audit log: %w", err)
	}
	return tx, indexed, nil
}

// RequestAudit implements AuditLog: the request's seqs from each pass of
// the index, then a scan of the records no pass covers yet, in one read
// transaction (one snapshot).
func (s *Store) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	if s.Closed() {
		return nil, store.ErrClosed
	}
	tx, indexed, err := s.auditSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// CROSS JOIN keeps audit_passes outside: one key lookup per pass.
	rows, err := tx.QueryContext(ctx, `SELECT r.pass, r.seqs FROM audit_passes p CROSS JOIN audit_requests r
	ON r.pass = p.pass AND r.request = ? WHERE p.last <= ? ORDER BY p.pass`, request, indexed)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	var seqs []int64
	for rows.Next() {
		var pass int64
		var b []byte
		if err := rows.Scan(&pass, &b); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		eachPassSeq(pass, b, func(seq int64) { seqs = append(seqs, seq) })
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	out, err := s.auditBySeq(ctx, tx, seqs)
	if err != nil {
		return nil, err
	}
	tail, err := s.QueryAudit(ctx, reader{tx}, `WHERE seq > ? AND request = ? ORDER BY seq`, indexed, request)
	if err != nil {
		return nil, err
	}
	return append(out, tail...), nil
}

// RequestAuditBefore implements store.RequestAuditPager, in one read
// transaction: the request's newest seqs before before among the records
// no pass of the index covers yet, then from the passes, newest first,
// until limit are found, then the page's records by seq.
func (s *Store) RequestAuditBefore(ctx context.Context, request string, before int64, limit int) ([]*store.AuditRecord, error) {
	if s.Closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		return nil, nil
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	tx, indexed, err := s.auditSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var seqs []int64 // newest first
	rows, err := tx.QueryContext(ctx, `SELECT seq FROM audit WHERE seq > ? AND seq < ? AND request = ? ORDER BY seq DESC LIMIT ?`,
		indexed, before, request, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	if len(seqs) < limit {
		// CROSS JOIN keeps audit_passes outside: one key lookup per pass,
		// the newest passes first, read until the page is full.
		rows, err := tx.QueryContext(ctx, `SELECT r.pass, r.seqs FROM audit_passes p CROSS JOIN audit_requests r
		ON r.pass = p.pass AND r.request = ? WHERE p.last <= ? AND p.pass < ? ORDER BY p.pass DESC`, request, indexed, before)
		if err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		var pass []int64
		for len(seqs) < limit && rows.Next() {
			var first int64
			var b []byte
			if err := rows.Scan(&first, &b); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading the audit log: %w", err)
			}
			pass = pass[:0]
			eachPassSeq(first, b, func(seq int64) {
				if seq < before {
					pass = append(pass, seq)
				}
			})
			for i := len(pass) - 1; i >= 0 && len(seqs) < limit; i-- {
				seqs = append(seqs, pass[i])
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
	}
	slices.Reverse(seqs)
	out, err := s.auditBySeq(ctx, tx, seqs)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RequestsAudit implements store.RequestsAuditor, in one read transaction:
// the requests' seqs from the passes of the index that reach past after
// (their blobs only), the page of them read by seq, then the records no
// pass covers yet, scanned from after the page's cursor.
func (s *Store) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	if s.Closed() {
		return nil, store.ErrClosed
	}
	if len(requests) == 0 || limit <= 0 || upTo <= after {
		return nil, nil
	}
	tx, indexed, err := s.auditSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var seqs []int64
	for rest := requests; len(rest) > 0 && after < indexed; {
		n := min(len(rest), 500)
		args := make([]any, 0, n+3)
		for _, r := range rest[:n] {
			args = append(args, r)
		}
		rest = rest[n:]
		// CROSS JOIN keeps audit_passes outside: the passes past after,
		// one key lookup per request in each, oldest first, read until
		// these requests' seqs fill the page (a later pass's are greater):
		// a page near the start of a long request reads its first passes,
		// not all of them.
		rows, err := tx.QueryContext(ctx, `SELECT r.pass, r.seqs FROM audit_passes p CROSS JOIN audit_requests r
		ON r.pass = p.pass AND r.request IN (?`+strings.Repeat(", ?", n-1)+`) WHERE p.last > ? AND p.pass <= ? AND p.last <= ? ORDER BY p.pass`,
			append(args, after, upTo, indexed)...)
		if err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		got, cur := 0, int64(0)
		for rows.Next() {
			var pass int64
			var b []byte
			if err := rows.Scan(&pass, &b); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading the audit log: %w", err)
			}
			if pass != cur && got >= limit {
				break
			}
			cur = pass
			eachPassSeq(pass, b, func(seq int64) {
				if seq > after && seq <= upTo {
					seqs = append(seqs, seq)
					got++
				}
			})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	seqs = seqs[:min(len(seqs), limit)]
	out, err := s.auditBySeq(ctx, tx, seqs)
	if err != nil {
		return nil, err
	}
	if len(out) >= limit || upTo <= indexed {
		return out, nil
	}
	// The records no pass covers: one scan of them, by seq, whichever of
	// the requests they are.
	want := make(map[string]bool, len(requests))
	for _, r := range requests {
		want[r] = true
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, request FROM audit WHERE seq > ? AND seq <= ? ORDER BY seq`, max(after, indexed), upTo)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	var tail []int64
	for rows.Next() && len(out)+len(tail) < limit {
		var seq int64
		var req string
		if err := rows.Scan(&seq, &req); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		if want[req] {
			tail = append(tail, seq)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	recs, err := s.auditBySeq(ctx, tx, tail)
	if err != nil {
		return nil, err
	}
	return append(out, recs...), nil
}

// auditBySeq reads the records of seqs (in seq order) in tx, 500 at a
// time.
func (s *Store) auditBySeq(ctx context.Context, tx *sql.Tx, seqs []int64) ([]*store.AuditRecord, error) {
	var out []*store.AuditRecord
	args := make([]any, 0, min(len(seqs), 500))
	for len(seqs) > 0 {
		n := min(len(seqs), 500)
		args = args[:0]
		for _, q := range seqs[:n] {
			args = append(args, q)
		}
		recs, err := s.QueryAudit(ctx, reader{tx}, `WHERE seq IN (?`+strings.Repeat(", ?", n-1)+`) ORDER BY seq`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		seqs = seqs[n:]
	}
	return out, nil
}

// OpenFile opens the database file at path with the store's SQLite driver
// and no settings of its own: for a tool or a test that reads or edits a
// store's file by hand, not for a store (Open).
func OpenFile(path string) (*sql.DB, error) { return openPool(path, false) }

// eachPassSeq calls f with each seq an index pass's row holds (b: their
// gaps as uvarints, from pass-1), in order.
func eachPassSeq(pass int64, b []byte, f func(seq int64)) {
	seq := pass - 1
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return
		}
		seq += int64(d)
		b = b[n:]
		f(seq)
	}
}
