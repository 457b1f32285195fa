package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentreach/reach/internal/store"
)

// The PostgreSQL store writes as SQLite's does (internal/store/sqlite): one goroutine
// takes every write queued, and commits them together. Each write is one
// statement (a function of the schema where it needs more than one step),
// so the batch is sent as one pipeline: the statements and one Sync, which
// PostgreSQL runs as one implicit transaction, committed at the Sync, in
// one round trip. A batch that holds the claim of a checkpointed call is an
// explicit transaction instead: the claims are answered when their round
// comes back, the writer holds the transaction open a little (linger) for
// their "executing" checkpoints, and sends those with the COMMIT, so that
// the call waits for one commit that holds both. Statements are prepared
// once per connection (pgx's statement cache).

// pgWrite is one unit of work for the writer.
type pgWrite struct {
	// queue adds the write's statement to the round, with the callback
	// that reads its result. It may instead set w.err and add nothing.
	queue func(b *pgRound, w *pgWrite)
	after func(committed bool)
	done  chan error // nil for a queued write, whose failure is logged
	what  string
	err   error

	// As write's: a claim of a checkpointed call (decided, answer, pair),
	// and a checkpoint (pairs).
	decided  chan struct{}
	answer   func(err error)
	answered bool
	pair     string
	claimed  bool
	told     bool
	pairs    string
}

// pgRound is one pipeline sent to the server.
type pgRound struct {
	b     pgx.Batch
	items []pgItem
}

// pgItem reads the result of one statement of a round: w's (nil for BEGIN
// and COMMIT), by exec (rows affected) or rows.
type pgItem struct {
	w    *pgWrite
	exec func(n int64) error
	rows func(rows pgx.Rows) error
}

// exec queues a statement whose rows affected fn reads (fn may be nil).
func (r *pgRound) exec(w *pgWrite, sql string, args []any, fn func(n int64) error) {
	r.b.Queue(sql, args...)
	if fn == nil {
		fn = func(int64) error { return nil }
	}
	r.items = append(r.items, pgItem{w: w, exec: fn})
}

// query queues a statement whose rows fn reads.
func (r *pgRound) query(w *pgWrite, sql string, args []any, fn func(rows pgx.Rows) error) {
	r.b.Queue(sql, args...)
	r.items = append(r.items, pgItem{w: w, rows: fn})
}

// control queues BEGIN or COMMIT.
func (r *pgRound) control(sql string) {
	r.b.Queue(sql)
	r.items = append(r.items, pgItem{exec: func(int64) error { return nil }})
}

// do queues w and waits for its outcome.
func (p *Store) do(ctx context.Context, w *pgWrite) error {
	w.done = make(chan error, 1)
	if err := p.send(w); err != nil {
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
func (p *Store) queue(w *pgWrite) {
	if err := p.send(w); err != nil {
		p.log.Error("store: a queued write was not written", "write", w.what, "err", err)
	}
}

// send hands w to the writer, waiting for room in the queue.
func (p *Store) send(w *pgWrite) error {
	p.qMu.RLock()
	defer p.qMu.RUnlock()
	if p.qClosed {
		return store.ErrClosed
	}
	p.q <- w
	return nil
}

// writer takes what is queued, commits it as one batch, and answers.
func (p *Store) writer() {
	defer close(p.wDone)
	ws := make([]*pgWrite, 0, 64)
	open := true
	drain := func() int {
		n := 0
		for open && len(ws) < maxBatch {
			select {
			case w, ok := <-p.q:
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
	for open && !p.qDrained {
		w, ok := <-p.q
		if !ok {
			break
		}
		ws = append(ws[:0], w)
		drain()
		for range writerYields {
			runtime.Gosched()
			if drain() == 0 {
				break
			}
		}
		ws = p.commitBatch(ws)
		clear(ws)
	}
}

// commitBatch runs ws as one transaction and returns ws with the writes
// that joined it. A database error in one write rolls the batch back; that
// write fails, and the others run again once, without it. A connection
// that failed before anything was sent is replaced, and the batch sent
// again. A second database error, or a failed commit, fails them all.
func (p *Store) commitBatch(ws []*pgWrite) []*pgWrite {
	failed := make([]bool, len(ws))
	resent := false
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), p.o.WriteTimeout)
		conn, err := p.pool.Acquire(ctx)
		if err != nil {
			cancel()
			p.finishAll(ws, failed, fmt.Errorf("connecting to PostgreSQL at %s: %w", p.where, err))
			return ws
		}
		explicit := false
		for i, w := range ws {
			if !failed[i] && w.decided != nil && !w.answered {
				explicit = true
			}
		}
		r := &pgRound{}
		if explicit {
			r.control("BEGIN")
		}
		for i, w := range ws {
			if !failed[i] {
				w.err = nil
				w.queue(r, w)
			}
		}
		at, fatal := p.run(ctx, conn, r, ws)
		if fatal == nil && explicit {
			waiting := map[string]bool{}
			for i, w := range ws {
				if failed[i] || w.decided == nil || w.answered {
					continue
				}
				w.answered, w.told = true, w.claimed && w.err == nil
				w.answer(w.err)
				close(w.decided)
				if w.told {
					waiting[w.pair] = true
				}
			}
			r2 := &pgRound{}
			if len(waiting) > 0 {
				t := time.NewTimer(linger)
			hold:
				for len(waiting) > 0 && len(ws) < maxBatch {
					select {
					case w, ok := <-p.q:
						if !ok {
							p.qDrained = true
							break hold
						}
						ws, failed = append(ws, w), append(failed, false)
						w.queue(r2, w)
						delete(waiting, w.pairs)
					case <-t.C:
						break hold
					}
				}
				t.Stop()
			}
			r2.control("COMMIT")
			at, fatal = p.run(ctx, conn, r2, ws)
		}
		if fatal == nil {
			conn.Release()
			cancel()
			p.batches.Add(1)
			for i, w := range ws {
				if !failed[i] {
					p.finish(w, true)
				}
			}
			return ws
		}
		// The transaction is rolled back: an explicit one stays open on
		// the connection, which the pool then closes instead of reusing.
		conn.Release()
		cancel()
		if !resent && at < 0 && pgconn.SafeToRetry(fatal) {
			resent = true // nothing reached the server: send it again, once
			attempt--
			continue
		}
		fatal = fmt.Errorf("writing to PostgreSQL at %s: %w", p.where, fatal)
		if at < 0 || attempt == 2 {
			p.finishAll(ws, failed, fatal)
			return ws
		}
		ws[at].err = fatal
		failed[at] = true
		p.finish(ws[at], false)
	}
}

// run sends round r on conn and reads its results, each by its callback:
// an error a callback returns is its write's (w.err); an error of the
// server or the connection is fatal, and at is the index in ws of the
// write whose statement failed (-1 for none, or BEGIN or COMMIT).
func (p *Store) run(ctx context.Context, conn *pgxpool.Conn, r *pgRound, ws []*pgWrite) (at int, fatal error) {
	if len(r.items) == 0 {
		return -1, nil
	}
	br := conn.SendBatch(ctx, &r.b)
	index := func(w *pgWrite) int {
		for i, x := range ws {
			if x == w {
				return i
			}
		}
		return -1
	}
	for _, it := range r.items {
		var err error
		if it.rows != nil {
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				cerr := it.rows(rows)
				rows.Close()
				if err = rows.Err(); err == nil && cerr != nil && it.w != nil && it.w.err == nil {
					it.w.err = cerr
				}
			}
		} else {
			var ct pgconn.CommandTag
			if ct, err = br.Exec(); err == nil {
				if cerr := it.exec(ct.RowsAffected()); cerr != nil && it.w != nil && it.w.err == nil {
					it.w.err = cerr
				}
			}
		}
		if err != nil {
			br.Close()
			if it.w == nil {
				return -1, err
			}
			return index(it.w), err
		}
	}
	if err := br.Close(); err != nil {
		return -1, err
	}
	return -1, nil
}

// finishAll fails every write of ws not failed yet with err.
func (p *Store) finishAll(ws []*pgWrite, failed []bool, err error) {
	for i, w := range ws {
		if !failed[i] {
			w.err = err
			p.finish(w, false)
		}
	}
}

// finish answers w (committed reports whether its batch committed).
func (p *Store) finish(w *pgWrite, committed bool) {
	if w.after != nil {
		w.after(committed)
	}
	if w.decided != nil {
		if w.err == nil && !committed {
			w.err = errors.New("its batch was not committed")
		}
		if !w.answered {
			w.answered, w.told = true, w.claimed && w.err == nil
			w.answer(w.err)
			close(w.decided)
		}
		if w.told && (w.err != nil || !w.claimed) {
			// Its caller went on with the claim: its checkpoint, unless it
			// failed with it in this batch, must not be written alone.
			p.lost[w.pair] = true
		}
		return
	}
	if w.pairs != "" && !committed {
		delete(p.lost, w.pairs) // failed with its claim
	}
	if w.done != nil {
		w.done <- w.err
		return
	}
	if w.err != nil {
		p.queuedFailed.Add(1)
		p.log.Error("store: a queued write failed", "write", w.what, "err", w.err)
	}
}

// WriterStats returns the writer's counters.
func (p *Store) WriterStats() store.WriterStats {
	return store.WriterStats{Batches: p.batches.Load(), QueuedFailed: p.queuedFailed.Load()}
}

// The writer's bounds, as SQLite's (internal/store/sqlite).
const (
	maxBatch     = 1024 // writes of one transaction
	writerQueue  = 4096 // writes that may wait for the writer before a caller waits for room
	writerYields = 4    // how often the writer yields to let a batch grow
)

// linger bounds how long the writer holds a batch open for the
// checkpoint a claim of the batch waits for.
var linger = 500 * time.Microsecond

// dbError is an error of the database itself while a write ran: the batch
// is rolled back, since the transaction may not be usable any more.
type dbError struct{ err error }

func (e *dbError) Error() string { return e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }

// errFinal marks a request that PutRequest may not replace.
var errFinal = fmt.Errorf("final: %w", store.ErrConflict)

// frameKey names a frame of a request, for pairing a claim with its
// checkpoint.
func frameKey(request, frame string) string { return request + "\x00" + frame }
