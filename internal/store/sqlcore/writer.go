package sqlcore

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// The writer: every write of a store (a checkpoint, an idempotency claim
// or record, a request, a dead letter, an approval, ...) is a Write queued
// to one goroutine, which takes everything queued, adds it to one
// transaction of the engine, commits once, and then answers each caller:
// group commit. A write that must be durable before its caller goes on
// (PutFrame, ClaimKey, ...) waits for the commit of the batch that holds
// it, not for a transaction of its own; a queued write (QueueFrame,
// QueueCompleteKey, QueueReleaseKey) returns at once and is committed with
// a later batch. Writes are applied in the order they were queued, so a
// queued write is visible to every write queued after it (a claim after a
// queued completion sees the result).
//
// A caller of Do when the writer is idle (no batch being committed, no
// other caller waiting, and the last batch held at most one caller's
// write) commits the batch itself, on its own goroutine, with the queued
// writes before its own: one call at a time, a durable write then costs
// no hand-off to the writer's goroutine and back (two goroutine wake-ups,
// each a wait for a free CPU on a busy machine). Under concurrent callers
// the writer's goroutine commits, and lets its batches grow.
//
// Under a crowd, a batch is held open for the calls in flight. The store
// tells the writer when a call begins (its claim) and ends (its key's
// completion or release): CallBegan, Flight.End. While at least
// holdSiblings calls other than those whose claims the batch holds are in
// flight, a batch with a write that a caller waits for waits (Engine.Hold)
// for their writes: those calls end, and their clients' next claims come,
// and one commit carries many calls instead of two or three. The hold ends
// when every call in flight has a claim in the batch, when no write came
// for HoldIdle (calls in flight that do not write: a slow tool, or a call
// whose end was never told), when the batch is half full, or on Stop; and
// a hold that no write joined makes the next batches commit without one
// (1, 2, 4, ... up to 64 of them), so that a count the calls do not bear
// out costs little. One call at a time nothing is held, and a caller
// of Do commits as before.
//
// A claim of a checkpointed call (ClaimKey with a Frame) is answered as
// soon as it is decided, and its "executing" checkpoint follows: the
// writer holds the transaction open a little (Linger) for it, so that the
// claim and the checkpoint commit together, and the call waits for one
// commit that holds both.

// Write is one unit of work for the writer.
type Write struct {
	// Run adds the write's statements to the batch, with the callbacks
	// that read their results. It runs again if the batch is sent again
	// (after another write's database error), so it resets what its
	// callbacks set.
	Run func(b Batch, w *Write)
	// After, if not nil, runs in the writer once the batch committed
	// (true) or failed for good (false).
	After func(committed bool)
	// What names a queued write, for the log, followed by Of, quoted, if
	// Of is not empty; a checkpoint's (Pairs) with neither is named by its
	// frame and request. (Named only if it fails: a queued write spares
	// the allocations of a name it would never print.)
	What, Of string
	// Apart marks a write that must lead a batch, not join one whose
	// statements were already sent (a batch held open for a claim's
	// checkpoint): its statements take a lock that every instance takes
	// in one order, at the head of the transaction (PostgreSQL's handed
	// tasks, postgres.handedLockSQL). Queued while a batch is held open,
	// it ends the hold: that batch commits, and it leads the next.
	Apart bool

	err  error
	done chan error // nil for a queued write, whose failure is logged
	// queued is when it was queued, in nanoseconds of the writer's clock
	// (Writer.now), if it was the first write of an empty queue (see
	// gather); zero otherwise.
	queued int64

	// A claim of a checkpointed call: decided is closed once answer took
	// what it decided; pair names its checkpoint; Claimed is what its
	// latest run decided, told what its caller was told (claimed). A
	// checkpoint names its pair in Pairs.
	decided chan struct{}
	answer  func(err error)
	pair    string
	Pairs   string
	// (The flags together, in one word: a Write is allocated for every
	// write.)
	answered bool
	Claimed  bool
	told     bool
	flight   bool // the claim of a call in flight (see CallBegan)
}

// Fail sets the write's error, unless it has one: a conflict or a missing
// row that a callback found. Whatever the write added runs, and is
// committed with the batch: a write fails before it writes.
func (w *Write) Fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Err is the write's error as set by Fail or by its batch.
func (w *Write) Err() error { return w.err }

// Batch is the transaction of one group commit, as a write sees it: the
// write adds statements (by id, see Stmt) and reads their results in
// callbacks. An engine runs them at once (SQLite) or sends them together
// (PostgreSQL's pipeline), so a callback must not expect a statement added
// after its own to have run. A statement whose SQL is empty for the engine
// is skipped (see Has).
type Batch interface {
	// Exec adds statement id; fn, if not nil, reads how many rows it
	// changed, and an error it returns is the write's (see Write.Fail).
	Exec(w *Write, id Stmt, args []any, fn func(n int64) error)
	// Query adds statement id, whose rows fn reads.
	Query(w *Write, id Stmt, args []any, fn func(rows Rows) error)
	// Has reports whether the engine has statement id.
	Has(id Stmt) bool
}

// Tx is the transaction of one batch, as the writer drives it.
type Tx interface {
	Batch
	// Flush runs what was added and has not run yet. A database error is
	// returned with the write whose statement failed (nil if none was at
	// fault): the transaction is then unusable.
	Flush() (at *Write, err error)
	// Commit flushes and commits.
	Commit() (at *Write, err error)
	// Rollback ends a transaction that failed.
	Rollback()
}

// Engine is what the writer needs of a database.
type Engine interface {
	// Begin begins the transaction of a batch. explicit asks for one that
	// stays open after a Flush, until Commit (a claim of the batch waits
	// for its checkpoint).
	Begin(explicit bool) (Tx, error)
	// Sequential reports whether a statement runs as it is added (its
	// callback has run when Exec or Query returns), so that a callback
	// may add the statement that follows from its result.
	Sequential() bool
	// Resend reports whether a batch that failed with err before any
	// write was at fault may be sent again, once: nothing reached the
	// database.
	Resend(err error) bool
	// Gather is how long a batch of queued writes alone (no caller waits
	// for any of them: a call's end, a key's result) waits for more
	// before it commits, counted from when its first write was queued;
	// zero: not at all. A write that a caller waits
	// for ends the wait at once, and so does Stop. One call at a time, its
	// end then commits with the next call's claim, not in a commit of its
	// own; the price is that a crash loses up to that much more of what
	// was only queued (docs/STATE.md).
	Gather() time.Duration
	// Hold is the longest a batch that a caller waits for is held open for
	// the calls in flight, under a crowd (see CallBegan); zero: never.
	Hold() time.Duration
}

// The writer's bounds.
const (
	maxBatch     = 1024 // writes of one transaction
	writerQueue  = 4096 // writes that may wait for the writer before a caller waits for room
	writerYields = 4    // how often the writer yields to let a batch grow
)

// holdSiblings is how many calls in flight, besides those whose claims a
// batch holds, make a crowd that a batch is held open for.
const holdSiblings = 4

// HoldIdle ends a hold when no write came for that long: the calls in
// flight are not writing. A variable only so that a test can change it.
var HoldIdle = time.Millisecond

// maxCool is the most batches that commit without a hold after holds that
// no write joined.
const maxCool = 64

// Linger bounds how long the writer holds a batch open for the checkpoints
// of the claims it decided. A variable only so that a test can hold the
// batch open for as long as it needs.
var Linger = 500 * time.Microsecond

// Writer is the group-commit writer of one store.
type Writer struct {
	eng Engine
	log *slog.Logger

	mu      sync.Mutex
	pending []*Write  // queued, in order, not taken yet
	waiters int       // of pending, those a caller waits for
	room    sync.Cond // on mu: pending shrank
	blocked int       // callers of send waiting for room: queued before Stop, to commit
	closed  bool      // Stop was called: no more writes are queued
	leading bool      // a batch is being committed (by run or a caller of Do)
	// gathering: run waits in gather, whose timer commits what is queued
	// by its end; a queued write then needs no wake-up of its own.
	gathering bool
	crowd     bool          // the last batch held writes of more than one caller
	wake      chan struct{} // run's: pending grew, a batch ended, or Stop
	wDone     chan struct{}
	// lost are the checkpoints whose claims were answered and then not
	// committed: such a checkpoint fails (its call must not run). Like
	// everything below, only the one who commits uses it.
	lost map[string]bool

	batches      atomic.Int64
	writes       atomic.Int64
	queuedFailed atomic.Int64
	commitCount  atomic.Int64
	commitSum    atomic.Int64 // ns
	commitIn     [len(store.CommitBuckets)]atomic.Int64

	timer *time.Timer // gather's and hold's, reused (the writer's goroutine only: never both at once)
	epoch time.Time   // the writer's clock's zero (now)

	// flying counts the calls in flight (CallBegan, not yet ended). cool
	// is how many batches are left to commit without a hold, after a
	// hold that no write joined (set by the writer's goroutine,
	// read by Do); coolNext, how many the next such hold makes it.
	flying   atomic.Int64
	cool     atomic.Int32
	coolNext int32
	holds    atomic.Int64 // holds begun, for the tests
}

// Flight is a call in flight, as the writer counts it: from CallBegan to
// its End.
type Flight struct {
	wr    *Writer
	ended atomic.Bool
}

// CallBegan counts a call in flight until the End of the Flight it
// returns. A call begins with its claim, and ends with its key's
// completion or release: the claim is marked (Write.flight), so that a
// batch knows which calls it holds.
func (wr *Writer) CallBegan() *Flight {
	wr.flying.Add(1)
	return &Flight{wr: wr}
}

// End ends the call; only its first End counts, so that every path may
// end it.
func (f *Flight) End() {
	if f != nil && f.ended.CompareAndSwap(false, true) {
		f.wr.flying.Add(-1)
	}
}

// InFlight is how many calls are in flight (CallBegan, not yet ended).
func (wr *Writer) InFlight() int { return int(wr.flying.Load()) }

// Holds reports whether the writer holds batches for calls in flight
// (Engine.Hold): if not, counting them is of no use.
func (wr *Writer) Holds() bool { return wr.eng.Hold() > 0 }

// crowded reports whether a batch would be held for the calls in flight:
// a caller of Do then leaves its write to the writer's goroutine.
func (wr *Writer) crowded() bool {
	return wr.flying.Load() > holdSiblings && wr.cool.Load() == 0 && wr.eng.Hold() > 0
}

// StartWriter starts the writer of eng; log reports the queued writes that
// failed.
func StartWriter(eng Engine, log *slog.Logger) *Writer {
	wr := &Writer{eng: eng, log: log, wake: make(chan struct{}, 1), wDone: make(chan struct{}), lost: map[string]bool{}, epoch: time.Now().Add(-time.Nanosecond)}
	wr.room.L = &wr.mu
	go wr.run()
	return wr
}

// now is the time since the writer started, in nanoseconds (monotonic),
// and never zero: the epoch is a nanosecond before the start.
func (wr *Writer) now() int64 { return int64(time.Since(wr.epoch)) }

// Queued is how many writes wait for the writer.
func (wr *Writer) Queued() int {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return len(wr.pending)
}

// Do queues w and waits for its outcome: for a write that must be durable
// when it returns. If ctx ends first, Do returns its cause and w may or may
// not be written. If the writer is idle and ctx cannot end (the call path's
// durable writes: a claim, a checkpoint, a request's record, the audit
// log's batches), Do commits w itself, with what is queued before it, and
// returns once that batch is committed or failed; not under a crowd of
// calls in flight, whose batch the writer holds. A caller whose ctx can
// end is answered by the writer's goroutine, so that it returns at ctx's
// end even while the engine waits for a lock (SQLite's busy timeout, when
// another process writes).
func (wr *Writer) Do(ctx context.Context, w *Write) error {
	w.done = make(chan error, 1)
	wr.mu.Lock()
	if !wr.closed && !wr.leading && !wr.crowd && wr.waiters == 0 && len(wr.pending) < maxBatch && ctx.Done() == nil && !wr.crowded() {
		wr.leading = true
		ws := append(wr.takeLocked(make([]*Write, 0, len(wr.pending)+1)), w)
		wr.mu.Unlock()
		wr.endBatch(wr.commit(ws))
		return <-w.done
	}
	wr.mu.Unlock()
	if err := wr.send(w); err != nil {
		return err
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Queue queues w and returns at once; a failure is logged.
func (wr *Writer) Queue(w *Write) {
	if err := wr.send(w); err != nil {
		wr.log.Error("store: a queued write was not written", "write", w.name(), "err", err)
	}
}

// Replace puts w, a queued write (one nobody waits for), in the place of
// old in the queue when old is still there, not taken by a batch, and
// reports whether it did: w then takes effect where old would have, and
// old never runs. A write that must run after old is queued instead.
func (wr *Writer) Replace(old, w *Write) bool {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for i := len(wr.pending) - 1; i >= 0; i-- {
		if wr.pending[i] == old {
			wr.pending[i] = w
			return true
		}
	}
	return false
}

// TryQueue queues w and returns at once, as Queue does, unless the writer
// stopped: it reports whether w was queued.
func (wr *Writer) TryQueue(w *Write) bool { return wr.send(w) == nil }

// Decide queues w, the claim of the call whose checkpoint is pair, and
// waits until it is decided (not committed: it commits with the
// checkpoint, which fails if the claim could not be). answer takes what it
// decided, before Decide returns.
func (wr *Writer) Decide(ctx context.Context, w *Write, pair string, answer func(err error)) error {
	var aErr error
	w.pair, w.decided = pair, make(chan struct{})
	w.answer = func(err error) { answer(err); aErr = err }
	if err := wr.send(w); err != nil {
		return err
	}
	select {
	case <-w.decided:
		// The writer answered before closing decided; after a context's
		// end it may still be answering.
		return aErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// send hands w to the writer, waiting for room in the queue. A write
// that waits for room when Stop comes was queued before it: it still
// waits, and the writer commits it before it stops.
func (wr *Writer) send(w *Write) error {
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		return store.ErrClosed
	}
	for len(wr.pending) >= writerQueue {
		wr.blocked++
		wr.room.Wait()
		wr.blocked--
	}
	if len(wr.pending) == 0 && !w.waited() {
		w.queued = wr.now()
	}
	wr.pending = append(wr.pending, w)
	if w.waited() {
		wr.waiters++
	}
	// A write queued while run gathers is committed when the gather ends
	// (its timer): waking run for it would only have it look and wait
	// again. One call at a time, every call's end was such a wake-up (a
	// thread woken on the other CPU). A write a caller waits for, or a
	// batch full, ends the gather at once.
	quiet := wr.gathering && !w.waited() && len(wr.pending) < maxBatch
	wr.mu.Unlock()
	if !quiet {
		wr.signal()
	}
	return nil
}

// signal wakes run, if it sleeps.
func (wr *Writer) signal() {
	select {
	case wr.wake <- struct{}{}:
	default:
	}
}

// takeLocked appends to ws what is queued, in order, up to maxBatch
// writes in all, and returns it. wr.mu is held.
func (wr *Writer) takeLocked(ws []*Write) []*Write {
	return wr.takeFirst(ws, maxBatch-len(ws))
}

// takeFirst appends to ws the first n writes queued (fewer if fewer are),
// and returns it. wr.mu is held.
func (wr *Writer) takeFirst(ws []*Write, n int) []*Write {
	n = min(len(wr.pending), n)
	if n <= 0 {
		return ws
	}
	for _, w := range wr.pending[:n] {
		if w.waited() {
			wr.waiters--
		}
	}
	ws = append(ws, wr.pending[:n]...)
	rest := copy(wr.pending, wr.pending[n:])
	clear(wr.pending[rest:])
	wr.pending = wr.pending[:rest]
	wr.room.Broadcast()
	return ws
}

// take appends to ws what is queued (see takeLocked).
func (wr *Writer) take(ws []*Write) []*Write {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.takeLocked(ws)
}

// endBatch ends ws, the batch of whoever led it, and wakes run if writes
// are left to commit (or to stop).
func (wr *Writer) endBatch(ws []*Write) {
	n := 0
	for _, w := range ws {
		if w.waited() {
			n++
		}
	}
	wr.mu.Lock()
	wr.leading, wr.crowd = false, n > 1
	more := len(wr.pending) > 0 || wr.closed
	wr.mu.Unlock()
	if more {
		wr.signal()
	}
}

// Stop lets the writer commit what is queued, and stops it.
func (wr *Writer) Stop() {
	wr.mu.Lock()
	wr.closed = true
	wr.mu.Unlock()
	wr.signal()
	<-wr.wDone
}

// Stats returns the writer's counters.
func (wr *Writer) Stats() store.WriterStats {
	st := store.WriterStats{Batches: wr.batches.Load(), Writes: wr.writes.Load(), QueuedFailed: wr.queuedFailed.Load()}
	st.Commit.Count, st.Commit.Sum = wr.commitCount.Load(), time.Duration(wr.commitSum.Load())
	for i := range wr.commitIn {
		st.Commit.Buckets[i] = wr.commitIn[i].Load()
	}
	return st
}

// committed counts a batch of n writes committed, which took d from its
// beginning to its commit.
func (wr *Writer) committed(n int, d time.Duration) {
	wr.batches.Add(1)
	wr.writes.Add(int64(n))
	wr.commitCount.Add(1)
	wr.commitSum.Add(int64(d))
	if i, _ := slices.BinarySearch(store.CommitBuckets[:], d.Seconds()); i < len(wr.commitIn) {
		wr.commitIn[i].Add(1)
	}
}

// run takes what is queued, commits it as one batch, and answers, until
// Stop and nothing is left.
func (wr *Writer) run() {
	defer close(wr.wDone)
	ws := make([]*Write, 0, 64)
	for range wr.wake {
		wr.mu.Lock()
		if !wr.leading && len(wr.pending) > 0 && !wr.closed && wr.waiters == 0 {
			// Queued writes alone: they wait for more (gather), and a
			// caller of Do may meanwhile commit them with its own. What is
			// queued until gathering is false again is looked at below.
			wr.gathering = true
			wr.mu.Unlock()
			wr.gather()
			wr.mu.Lock()
			wr.gathering = false
		}
		if wr.leading || len(wr.pending) == 0 {
			// A caller of Do commits (it wakes run when it is done), or
			// nothing is left (a write that waited for room may still
			// come: it wakes run when it does).
			stop := !wr.leading && wr.closed && wr.blocked == 0
			wr.mu.Unlock()
			if stop {
				return
			}
			continue
		}
		wr.leading = true
		ws = wr.takeLocked(ws[:0])
		wr.mu.Unlock()
		ws = wr.hold(ws)
		// Callers woken by the last commit are about to queue again: let
		// them, while that makes the batch grow, so that one commit carries
		// them all instead of one each.
		for range writerYields {
			runtime.Gosched()
			n := len(ws)
			if ws = wr.take(ws); len(ws) == n {
				break
			}
		}
		ws = wr.commit(ws)
		wr.endBatch(ws)
		clear(ws)
	}
}

// gather waits, while only queued writes are pending, until the first of
// them was queued the engine's Gather ago, a write that a caller waits for
// is queued, a caller of Do commits them, the batch is full, or Stop.
// The wait is the first pending write's, not the gather's: a caller of
// Do that took what was queued meanwhile (one call at a time, the next
// call's claim took the call before's end) restarts it from the write
// queued after, so that the writer's goroutine does not commit a batch of
// its own for a write that the next claim would have carried.
func (wr *Writer) gather() {
	d := wr.eng.Gather()
	if d <= 0 {
		return
	}
	// From when the first pending write was queued: one queued while the
	// writer committed the batch before waited that commit and then a
	// whole gather more.
	wr.mu.Lock()
	left := d
	if len(wr.pending) > 0 && wr.pending[0].queued != 0 {
		left = d - time.Duration(wr.now()-wr.pending[0].queued)
	}
	wr.mu.Unlock()
	if left <= 0 {
		return
	}
	t := wr.arm(left)
	defer t.Stop()
	for {
		select {
		case <-wr.wake:
			wr.mu.Lock()
			done := wr.closed || wr.leading || wr.waiters > 0 || len(wr.pending) >= maxBatch
			wr.mu.Unlock()
			if done {
				return
			}
		case <-t.C:
			wr.mu.Lock()
			left := time.Duration(0)
			if len(wr.pending) > 0 && wr.pending[0].queued != 0 {
				left = d - time.Duration(wr.now()-wr.pending[0].queued)
			}
			wr.mu.Unlock()
			if left <= 0 {
				return
			}
			t.Reset(left)
		}
	}
}

// hold holds the batch ws open, under a crowd, for the writes of the
// calls in flight, and returns it with those that joined (see Writer).
func (wr *Writer) hold(ws []*Write) []*Write {
	d := wr.eng.Hold()
	if d <= 0 {
		return ws
	}
	if c := wr.cool.Load(); c > 0 {
		wr.cool.Store(c - 1)
		return ws
	}
	claims, waited := tally(ws)
	if waited == 0 || wr.flying.Load()-claims < holdSiblings {
		return ws
	}
	wr.holds.Add(1)
	end := time.Now().Add(d)
	idle := min(HoldIdle, d)
	t := wr.arm(idle)
	defer t.Stop()
	joined := false
	for claims < wr.flying.Load() && len(ws) < maxBatch/2 {
		select {
		case <-wr.wake:
		case <-t.C:
			return wr.held(ws, joined)
		}
		wr.mu.Lock()
		n, closed := len(ws), wr.closed
		ws = wr.takeFirst(ws, maxBatch/2-len(ws))
		wr.mu.Unlock()
		if closed {
			break
		}
		if len(ws) == n {
			continue // woken for nothing: the idle wait goes on
		}
		c, _ := tally(ws[n:])
		claims, joined = claims+c, true
		// A kill here: the batch held for the calls in flight, a write
		// just joined, its callers waiting on its commit: none of it is
		// begun.
		crashpoint.Reached("batch.held")
		left := time.Until(end)
		if left <= 0 {
			break
		}
		t.Reset(min(idle, left))
	}
	return wr.held(ws, joined)
}

// held ends a hold of the batch ws, which a write joined or not, and
// returns ws. A hold that none joined was of no use: the calls in flight
// do not write (a slow tool, or a count too high for good). The next
// batches commit without one, twice as many each time, until a hold is
// joined again. A call's queued end counts: its client's next claim
// follows, if a little later than the hold waited for.
func (wr *Writer) held(ws []*Write, joined bool) []*Write {
	if joined {
		wr.coolNext = 0
		return ws
	}
	wr.coolNext = min(max(1, 2*wr.coolNext), maxCool)
	wr.cool.Store(wr.coolNext)
	return ws
}

// tally counts the claims of calls in flight in ws and the writes that a
// caller waits for.
func tally(ws []*Write) (claims, waited int64) {
	for _, w := range ws {
		if w.flight {
			claims++
		}
		if w.waited() {
			waited++
		}
	}
	return claims, waited
}

// arm returns the writer's timer, set to fire in d.
func (wr *Writer) arm(d time.Duration) *time.Timer {
	if wr.timer == nil {
		wr.timer = time.NewTimer(d)
	} else {
		wr.timer.Reset(d)
	}
	return wr.timer
}

// name names w for the log (see What).
func (w *Write) name() string {
	switch {
	case w.Of != "":
		return w.What + " " + strconv.Quote(w.Of)
	case w.What == "" && w.Pairs != "":
		request, frame, _ := strings.Cut(w.Pairs, "\x00")
		return "frame " + frame + " of request " + request
	}
	return w.What
}

// waited reports whether a caller waits for w (Do or Decide).
func (w *Write) waited() bool { return w.done != nil || w.decided != nil }

// commit runs ws as one transaction and commits it, and returns ws with the
// writes that joined it. While a claim of the batch waits for its
// checkpoint, the batch stays open (at most Linger): the writes queued
// meanwhile join it. A database error in one write rolls the batch back;
// that write fails, and the others run again once, without it. A batch
// that failed before anything reached the database is sent again, once
// (Engine.Resend). A second database error, or a failed commit, fails them
// all.
func (wr *Writer) commit(ws []*Write) []*Write {
	failed := make([]bool, len(ws))
	resent := false
	for attempt := 1; ; attempt++ {
		explicit := false
		for i, w := range ws {
			if !failed[i] && w.decided != nil && !w.answered {
				explicit = true
			}
		}
		began := time.Now()
		tx, err := wr.eng.Begin(explicit)
		if err != nil {
			wr.finishAll(ws, failed, err)
			return ws
		}
		// A claim is answered as soon as it is decided: by an engine that
		// runs statements as they come, once it ran; by one that sends
		// them together, once the round came back.
		seq := wr.eng.Sequential()
		waiting := map[string]bool{} // pairs of claims decided in this batch, not yet arrived
		var at *Write
		var fatal error
		for i, w := range ws {
			if failed[i] {
				continue
			}
			w.err = nil
			w.Run(tx, w)
			if seq {
				if at, fatal = tx.Flush(); fatal != nil {
					break
				}
				if wr.tell(w) {
					waiting[w.pair] = true
				}
			}
		}
		if !seq {
			if at, fatal = tx.Flush(); fatal == nil {
				for i, w := range ws {
					if !failed[i] && wr.tell(w) {
						waiting[w.pair] = true
					}
				}
			}
		}
		if fatal == nil && len(waiting) > 0 {
			t := time.NewTimer(Linger)
		hold:
			for len(waiting) > 0 && len(ws) < maxBatch {
				w, stop := wr.next()
				if w == nil {
					if stop {
						break hold
					}
					select {
					case <-wr.wake:
						continue
					case <-t.C:
						break hold
					}
				}
				ws, failed = append(ws, w), append(failed, false)
				w.Run(tx, w)
				// A kill here: the batch held open, its statements run,
				// its callers waiting on its commit: none of it is kept.
				crashpoint.Reached("batch.held")
				delete(waiting, w.Pairs)
				if seq {
					// Run, so decided: a claim that joined is answered,
					// and its checkpoint waited for too.
					if at, fatal = tx.Flush(); fatal != nil {
						break hold
					}
					if wr.tell(w) {
						waiting[w.pair] = true
					}
				}
			}
			t.Stop()
		}
		if fatal == nil {
			// Every statement of the batch ran; nothing is committed.
			crashpoint.Reached("commit")
			if at, fatal = tx.Commit(); fatal == nil {
				// Counted before anyone is answered: a caller that reads the
				// stats once its write returned finds its commit in them.
				n := len(ws)
				for i := range ws {
					if failed[i] {
						n--
					}
				}
				wr.committed(n, time.Since(began))
				for i, w := range ws {
					if !failed[i] {
						wr.finish(w, true)
					}
				}
				return ws
			}
		}
		tx.Rollback()
		i := slicesIndex(ws, at)
		if !resent && i < 0 && wr.eng.Resend(fatal) {
			resent = true
			attempt--
			continue
		}
		if i < 0 || attempt == 2 {
			wr.finishAll(ws, failed, fatal)
			return ws
		}
		ws[i].err = fatal
		failed[i] = true
		wr.finish(ws[i], false)
	}
}

// next takes the first write queued, if any; stop reports that none is
// and none will be (Stop), or that the first is Apart: the batch held open
// commits without it.
func (wr *Writer) next() (w *Write, stop bool) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if len(wr.pending) == 0 {
		return nil, wr.closed
	}
	if wr.pending[0].Apart {
		return nil, true // it leads the next batch
	}
	var one [1]*Write
	return wr.takeFirst(one[:0], 1)[0], false
}

// tell answers w if it is a claim not answered yet, and reports whether
// its caller was told it holds the claim (and will send its checkpoint).
func (wr *Writer) tell(w *Write) bool {
	if w.decided == nil || w.answered {
		return false
	}
	w.answered, w.told = true, w.Claimed && w.err == nil
	w.answer(w.err)
	close(w.decided)
	return w.told
}

func slicesIndex(ws []*Write, w *Write) int {
	if w == nil {
		return -1
	}
	for i, x := range ws {
		if x == w {
			return i
		}
	}
	return -1
}

// finishAll fails every write of ws not failed yet with err.
func (wr *Writer) finishAll(ws []*Write, failed []bool, err error) {
	for i, w := range ws {
		if !failed[i] {
			w.err = err
			wr.finish(w, false)
		}
	}
}

// finish answers w (committed reports whether its batch committed).
func (wr *Writer) finish(w *Write, committed bool) {
	if w.After != nil {
		w.After(committed)
	}
	if w.decided != nil {
		if w.err == nil && !committed {
			w.err = errors.New("its batch was not committed")
		}
		wr.tell(w) // not answered yet (it first ran in a second attempt): now it is known
		if w.told && (w.err != nil || !w.Claimed) {
			// Its caller went on with the claim: its checkpoint, unless it
			// failed with it in this batch, must not be written alone.
			wr.lost[w.pair] = true
		}
		return
	}
	if w.Pairs != "" && !committed {
		delete(wr.lost, w.Pairs) // failed with its claim
	}
	if w.done != nil {
		w.done <- w.err
		return
	}
	if w.err != nil {
		wr.queuedFailed.Add(1)
		wr.log.Error("store: a queued write failed", "write", w.name(), "err", w.err)
	}
}

// Lost reports, in the writer (from a Run), whether the claim of the call
// whose checkpoint is pair was answered and then not committed, and
// forgets it: the checkpoint must fail, since its call must not run.
func (wr *Writer) Lost(pair string) bool {
	if wr.lost[pair] {
		delete(wr.lost, pair)
		return true
	}
	return false
}
