package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
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
// Writes go through one writer per store (internal/store/sqlcore's, as
// SQLite's), which sends everything queued as one pipelined transaction
// (group commit, over the engine in pgwriter.go), each
// write one statement (the claims and debits are functions of the schema),
// prepared once per connection. The audit log is appended in transactions
// of their own, which lock the head of the one chain that every instance
// appends to. Safe for concurrent use; any number of processes may open
// the same database.
type Store struct {
	*sqlcore.Core // the operations, and the writer

	pool *pgxpool.Pool
	// beats is the heartbeat's own connection (Beat, Lives): on the pool,
	// a heartbeat waited behind every read and write queued for its
	// connections, and clients that kept the pool busy (a principal's
	// 2,000 requests in flight, each reading the audit log) made the others
	// take a live instance for dead after instance_ttl.
	beats *pgxpool.Pool
	cfg   *pgxpool.Config
	where string // host:port/database, for messages (no credentials)
	log   *slog.Logger
	o     Options

	auditMu sync.Mutex // one append at a time from this process

	close    sync.Once
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
	p := &Store{cfg: cfg, where: where, log: o.Logger, o: o, stop: make(chan struct{}), Core: &sqlcore.Core{D: dialect}}
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
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w; check its URL and that the server runs", where, err)
	}
	bcfg := cfg.Copy()
	bcfg.MaxConns, bcfg.MinConns = 1, 0 // made at the first heartbeat: a command that only reads opens none
	if p.beats, err = pgxpool.NewWithConfig(ctx, bcfg); err != nil {
		p.pool.Close()
		return nil, fmt.Errorf("opening the PostgreSQL store at %s: %w", where, err)
	}
	if o.NoMigrate {
		err = p.checkSchema(ctx)
	} else {
		err = p.migrate(ctx)
	}
	if err != nil {
		p.pool.Close()
		p.beats.Close()
		return nil, fmt.Errorf("opening the PostgreSQL store at %s: %w", where, err)
	}
	p.R = reader{p.pool}
	if err := p.ReadIndexes(ctx); err != nil {
		p.pool.Close()
		p.beats.Close()
		return nil, fmt.Errorf("opening the PostgreSQL store at %s: %w", where, err)
	}
	p.W = sqlcore.StartWriter(engine{p}, p.log)
	return p, nil
}

// Where returns the server and database the store uses (host:port/db),
// without credentials.
func (p *Store) Where() string { return p.where }

// Ping checks that the database answers.
func (p *Store) Ping(ctx context.Context) error {
	if p.Closed() {
		return store.ErrClosed
	}
	return p.pool.Ping(ctx)
}

// Close commits the writes queued, stops the listener and closes the
// pool. Later calls fail with ErrClosed.
func (p *Store) Close() error {
	p.close.Do(func() {
		p.W.Stop()
		p.MarkClosed()
		close(p.stop)
		p.bg.Wait()
		p.pool.Close()
		p.beats.Close()
	})
	return nil
}

// pgMigrationLock is the advisory lock that serializes migrations.
const pgMigrationLock = 0x7265616368 // "reach"

// SchemaVersion returns the newest migration applied to the database (0
// for a database without reach's schema).
func (p *Store) SchemaVersion(ctx context.Context) (int, error) {
	if p.Closed() {
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

// dbError is an error of the database itself while the audit log was
// appended, as against the chain's own (a sequence number taken).
type dbError struct{ err error }

func (e *dbError) Error() string { return e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }

// AppendAudit implements AuditLog: one transaction that locks the head of
// the chain, checks that recs follow it, copies them in and moves the
// head. Durable when it returns.
func (p *Store) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	return p.appendAudit(ctx, recs, false, func(head int64, _ []byte) ([]store.AuditCheckpoint, error) {
		if err := store.Follows(recs, head); err != nil {
			return nil, err
		}
		return cps, nil
	})
}

// AppendAuditChained implements AuditChainer: chain is called with the head
// of the chain, locked, to number and hash recs after it.
func (p *Store) AppendAuditChained(ctx context.Context, recs []*store.AuditRecord, chain func(seq int64, hash []byte) []store.AuditCheckpoint) error {
	return p.appendAudit(ctx, recs, true, func(head int64, hash []byte) ([]store.AuditCheckpoint, error) {
		return chain(head, hash), nil
	})
}

// appendAudit appends recs after the head, which at numbers (chained)
// or checks; chained, the records whose Once the log holds are set Held
// first, and none Held is appended.
func (p *Store) appendAudit(ctx context.Context, recs []*store.AuditRecord, chained bool, at func(head int64, hash []byte) ([]store.AuditCheckpoint, error)) error {
	if p.Closed() {
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
		// The records whose key the log holds are set Held, before they
		// are chained: under the head's lock, no other instance appends
		// one between this look and this append (audit_once's key refuses
		// it all the same).
		var onces []string
		for _, r := range recs {
			if r.Once != "" {
				onces = append(onces, r.Once)
			}
		}
		if chained && len(onces) > 0 {
			held := map[string]bool{}
			rows, err := tx.Query(ctx, `SELECT once FROM audit_once WHERE once = ANY($1)`, onces)
			if err != nil {
				return &dbError{err}
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return &dbError{err}
			}
			for _, o := range got {
				held[o] = true
			}
			for _, r := range recs {
				if r.Once != "" {
					r.Held = r.Held || held[r.Once]
					held[r.Once] = true // a second record of the key in recs
				}
			}
		}
		cps, err := at(head, hash)
		if err != nil {
			return err
		}
		kept := recs // none keyed, as most batches: no copy
		var keys []string
		var keySeqs []int64
		if len(onces) > 0 {
			kept = make([]*store.AuditRecord, 0, len(recs))
			for _, r := range recs {
				if !r.Held {
					kept = append(kept, r)
					if r.Once != "" {
						keys, keySeqs = append(keys, r.Once), append(keySeqs, r.Seq)
					}
				}
			}
		}
		if len(kept) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"audit"}, []string{"seq", "time", "request", "event", "prev_hash", "hash"},
				pgx.CopyFromSlice(len(kept), func(i int) ([]any, error) {
					r := kept[i]
					return []any{r.Seq, store.UnixNano(r.Time), r.Request, json.RawMessage(r.Data), r.PrevHash, r.Hash}, nil
				})); err != nil {
				return &dbError{err}
			}
		}
		b := &pgx.Batch{}
		if len(kept) > 0 {
			last := kept[len(kept)-1]
			b.Queue(`UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1`, last.Seq, last.Hash)
		}
		if len(keys) > 0 {
			b.Queue(`INSERT INTO audit_once (once, seq) SELECT * FROM unnest($1::text[], $2::bigint[])`, keys, keySeqs)
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

// RequestsAudit implements store.RequestsAuditor: the page's seqs from the
// index audit_request (request, seq) alone, then their records.
func (p *Store) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	return p.QueryAudit(ctx, p.R, `WHERE seq IN (SELECT seq FROM audit WHERE request = ANY($1) AND seq > $2 AND seq <= $3
	ORDER BY seq LIMIT $4) ORDER BY seq`, requests, after, upTo, limit)
}

// RequestAuditBefore implements store.RequestAuditPager: the page's seqs
// from the index audit_request (request, seq) alone, newest first, then
// their records.
func (p *Store) RequestAuditBefore(ctx context.Context, request string, before int64, limit int) ([]*store.AuditRecord, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		return nil, nil
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	return p.QueryAudit(ctx, p.R, `WHERE seq IN (SELECT seq FROM audit WHERE request = $1 AND seq < $2
	ORDER BY seq DESC LIMIT $3) ORDER BY seq`, request, before, limit)
}

// RequestAudit implements AuditLog.
func (p *Store) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	return p.QueryAudit(ctx, p.R, `WHERE request = $1 ORDER BY seq`, request)
}
