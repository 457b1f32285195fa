package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// seqEngine runs statements as they are added, as SQLite's engine does,
// and keeps what each commit wrote, in order. A write named in bad fails
// with a database error; a transaction left open (neither committed nor
// rolled back) makes the next Begin fail, as BEGIN does on a connection
// whose transaction is still open.
type seqEngine struct {
	mu        sync.Mutex
	committed []string
	done      map[string]bool // committed, as a set
	open      bool
	bad       map[string]bool
	gather    time.Duration
}

func (e *seqEngine) Begin(bool) (Tx, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.open {
		return nil, errors.New("cannot start a transaction within a transaction")
	}
	e.open = true
	return &seqTx{e: e}, nil
}
func (e *seqEngine) Sequential() bool      { return true }
func (e *seqEngine) Resend(error) bool     { return false }
func (e *seqEngine) Gather() time.Duration { return e.gather }
func (e *seqEngine) Hold() time.Duration   { return 0 }

// has reports whether name was committed.
func (e *seqEngine) has(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.done[name]
}

type seqTx struct {
	e     *seqEngine
	wrote []string
	at    *Write
	fatal error
}

func (t *seqTx) Exec(w *Write, id Stmt, args []any, fn func(n int64) error) {
	if t.fatal != nil {
		return
	}
	name, _ := args[0].(string)
	t.e.mu.Lock()
	bad := t.e.bad[name]
	t.e.mu.Unlock()
	if bad {
		t.at, t.fatal = w, fmt.Errorf("%s: database error", name)
		return
	}
	t.wrote = append(t.wrote, name)
	if fn != nil {
		if err := fn(1); err != nil {
			w.Fail(err)
		}
	}
}

func (t *seqTx) Query(*Write, Stmt, []any, func(Rows) error) { panic("not used") }
func (t *seqTx) Has(Stmt) bool                               { return true }
func (t *seqTx) Flush() (*Write, error)                      { return t.at, t.fatal }

func (t *seqTx) Commit() (*Write, error) {
	if t.fatal != nil {
		return t.at, t.fatal
	}
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	t.e.committed = append(t.e.committed, t.wrote...)
	if t.e.done == nil {
		t.e.done = map[string]bool{}
	}
	for _, name := range t.wrote {
		t.e.done[name] = true
	}
	t.e.open = false
	return nil, nil
}

func (t *seqTx) Rollback() {
	t.e.mu.Lock()
	t.e.open = false
	t.e.mu.Unlock()
}

// named is a write of one row, name; after reports whether it committed.
func named(name string, after func(name string, committed bool)) *Write {
	w := &Write{What: name, Run: func(b Batch, w *Write) { b.Exec(w, StPutFrame, []any{name}, nil) }}
	w.After = func(committed bool) { after(name, committed && w.Err() == nil) }
	return w
}

// TestWriterOrderUnderConcurrentCallers: many callers queue writes, wait
// for others, and claim with a checkpoint, while callers of Do and the
// writer's goroutine take turns leading batches, and some writes fail
// with a database error. Every write accepted is answered once, and
// committed at most once; each caller's writes commit in the order it
// queued them; a waited write that returns finds every write its caller
// queued before it answered, and committed unless it failed. Stop, racing
// the callers, returns with every write it accepted answered.
func TestWriterOrderUnderConcurrentCallers(t *testing.T) {
	defer func(d time.Duration) { Linger = d }(Linger)
	Linger = 100 * time.Microsecond
	for _, gather := range []time.Duration{0, 50 * time.Microsecond} {
		t.Run(fmt.Sprint("gather=", gather), func(t *testing.T) {
			e := &seqEngine{gather: gather, bad: map[string]bool{}}
			const callers, each = 12, 300
			for c := range callers {
				e.bad[fmt.Sprintf("c%d/%d", c, 7*c+5)] = true
			}
			wr := StartWriter(e, slog.New(slog.DiscardHandler))
			var mu sync.Mutex
			answered := map[string]bool{} // a write's After ran: whether it was written
			after := func(name string, committed bool) {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := answered[name]; ok {
					t.Errorf("%s answered twice", name)
				}
				answered[name] = committed
			}
			var accepted sync.Map
			var wg sync.WaitGroup
			stopAt := make(chan struct{})
			for c := range callers {
				wg.Go(func() {
					var mine []string
					for i := range each {
						if c == 0 && i == each/2 {
							close(stopAt)
						}
						name := fmt.Sprintf("c%d/%d", c, i)
						var err error
						switch (i + c) % 4 {
						case 0:
							err = wr.Do(context.Background(), named(name, after))
						case 1:
							// A claim decided, then its checkpoint: both are
							// this caller's, in its order.
							claim, pair := name, name+"/pair"
							cw := &Write{Run: func(b Batch, w *Write) {
								w.Claimed = false
								b.Exec(w, StIdemClaim, []any{claim}, func(int64) error { w.Claimed = true; return nil })
							}}
							cw.After = func(committed bool) { after(claim, committed && cw.Err() == nil) }
							claimed := false
							if err = wr.Decide(context.Background(), cw, pair, func(err error) { claimed = err == nil && cw.Claimed }); err != nil || !claimed {
								break
							}
							accepted.Store(name, true)
							cp := &Write{Pairs: pair, Run: func(b Batch, w *Write) {
								if wr.Lost(pair) {
									w.Fail(store.ErrConflict)
									return
								}
								b.Exec(w, StPutFrame, []any{pair}, nil)
							}}
							cp.After = func(committed bool) { after(pair, committed && cp.Err() == nil) }
							name = pair
							if err = wr.Do(context.Background(), cp); errors.Is(err, store.ErrConflict) {
								err = nil
							}
						default:
							err = wr.send(named(name, after))
						}
						if errors.Is(err, store.ErrClosed) {
							return
						}
						if err != nil && !strings.Contains(err.Error(), "database error") && !strings.Contains(err.Error(), "not committed") {
							t.Errorf("%s: %v", name, err)
							return
						}
						accepted.Store(name, true)
						mine = append(mine, name)
						if (i+c)%4 > 1 {
							continue
						}
						// A waited write returned: what was queued before it
						// is answered, and committed unless it failed.
						mu.Lock()
						for _, before := range mine {
							ok, done := answered[before]
							if !done {
								t.Errorf("%s returned before %s, queued before it, was answered", name, before)
							} else if ok && !e.has(before) {
								t.Errorf("%s returned before %s, queued before it, was committed", name, before)
							}
						}
						mu.Unlock()
						mine = mine[:0]
					}
				})
			}
			<-stopAt
			wr.Stop()
			wg.Wait()
			last := map[int]int{}
			seen := map[string]bool{}
			for _, name := range e.committed {
				if seen[name] {
					t.Fatalf("%s committed twice", name)
				}
				seen[name] = true
				var c, i int
				fmt.Sscanf(name, "c%d/%d", &c, &i)
				if p, ok := last[c]; ok && i < p {
					t.Fatalf("%s committed after c%d/%d", name, c, p)
				}
				last[c] = i
			}
			accepted.Range(func(k, _ any) bool {
				name := k.(string)
				ok, done := answered[name]
				if !done {
					t.Errorf("%s was accepted and never answered", name)
				} else if ok != seen[name] {
					t.Errorf("%s: answered committed=%v, committed %v", name, ok, seen[name])
				}
				return true
			})
		})
	}
}

// gated is a write that, once it runs, waits for release: whoever commits
// its batch is busy until then.
func gated(name string) (w *Write, running <-chan struct{}, release func()) {
	r, gate := make(chan struct{}), make(chan struct{})
	w = &Write{What: name, Run: func(b Batch, w *Write) {
		close(r)
		<-gate
		b.Exec(w, StPutFrame, []any{name}, nil)
	}}
	return w, r, func() { close(gate) }
}

// TestWriterLeaderTakesQueuedFirst: a caller of Do when the writer is idle
// commits the batch itself, with the writes queued before its own, in the
// order they were queued, and its own last.
func TestWriterLeaderTakesQueuedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &seqEngine{gather: time.Hour} // the writer's goroutine leaves queued writes alone
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		defer wr.Stop()
		nop := func(string, bool) {}
		wr.Queue(named("q1", nop))
		wr.Queue(named("q2", nop))
		synctest.Wait()
		caller, ranOn := goroutine(), ""
		mine := named("mine", nop)
		run := mine.Run
		mine.Run = func(b Batch, w *Write) { ranOn = goroutine(); run(b, w) }
		// A context that cannot end: the call path's durable writes.
		if err := wr.Do(context.Background(), mine); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(e.committed); got != "[q1 q2 mine]" || wr.Stats().Batches != 1 {
			t.Errorf("committed %s in %d batches; want [q1 q2 mine] in one", got, wr.Stats().Batches)
		}
		if ranOn != caller {
			t.Errorf("the batch ran on goroutine %s, not on its caller's (%s)", ranOn, caller)
		}
	})
}

// TestWriterWriteQueuedDuringLeaderCommits: a write that a caller waits
// for, queued while another caller of Do commits a batch, is committed
// once that batch ends, with nothing else happening; and so is a queued
// write, when Stop comes while the leader commits.
func TestWriterWriteQueuedDuringLeaderCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &seqEngine{gather: 5 * time.Millisecond}
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		nop := func(string, bool) {}
		lead, running, release := gated("lead")
		leadErr := make(chan error, 1)
		go func() { leadErr <- wr.Do(context.Background(), lead) }()
		<-running // the caller leads: the writer was idle
		waited := make(chan error, 1)
		go func() { waited <- wr.Do(t.Context(), named("waited", nop)) }()
		synctest.Wait()
		release()
		if err := <-leadErr; err != nil {
			t.Fatal(err)
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}

		lead, running, release = gated("lead2")
		go func() { leadErr <- wr.Do(context.Background(), lead) }()
		<-running
		wr.Queue(named("queued", nop))
		stopped := make(chan struct{})
		go func() { wr.Stop(); close(stopped) }()
		synctest.Wait()
		release()
		<-stopped
		if err := <-leadErr; err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(e.committed); got != "[lead waited lead2 queued]" {
			t.Errorf("committed %s; want [lead waited lead2 queued]", got)
		}
	})
}

// TestWriterStopKeepsWritesWaitingForRoom: a write queued while the queue
// is full waits for room, and Stop, called meanwhile, commits it with the
// rest: it was queued before Stop, and nothing queued is lost. Before, it
// was refused with ErrClosed (a queued write's end or result, logged and
// lost).
func TestWriterStopKeepsWritesWaitingForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &seqEngine{}
		log := &failures{}
		wr := StartWriter(e, slog.New(log))
		nop := func(string, bool) {}
		lead, running, release := gated("lead")
		leadErr := make(chan error, 1)
		go func() { leadErr <- wr.Do(context.Background(), lead) }()
		<-running
		for i := range writerQueue {
			wr.Queue(named(fmt.Sprint(i), nop))
		}
		queued := make(chan struct{})
		go func() { wr.Queue(named("last", nop)); close(queued) }()
		synctest.Wait() // the queue is full: it waits for room
		stopped := make(chan struct{})
		go func() { wr.Stop(); close(stopped) }()
		synctest.Wait()
		release()
		<-stopped
		<-queued
		if err := <-leadErr; err != nil {
			t.Fatal(err)
		}
		if n := log.count(); n != 0 {
			t.Errorf("%d writes logged as not written", n)
		}
		if len(e.committed) != writerQueue+2 || e.committed[len(e.committed)-1] != "last" {
			t.Errorf("%d writes committed, the last %q; want %d, the last \"last\"", len(e.committed), e.committed[len(e.committed)-1], writerQueue+2)
		}
	})
}

// failures is a slog.Handler that counts the errors logged.
type failures struct {
	mu sync.Mutex
	n  int
}

func (f *failures) Enabled(context.Context, slog.Level) bool { return true }
func (f *failures) WithAttrs([]slog.Attr) slog.Handler       { return f }
func (f *failures) WithGroup(string) slog.Handler            { return f }
func (f *failures) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
	}
	return nil
}
func (f *failures) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// goroutine returns the id of the goroutine that calls it.
func goroutine() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	return f[1]
}

// TestWriterCancellableCallerDoesNotLead: a caller of Do whose context can
// end is answered by the writer's goroutine even when the writer is idle,
// so that it returns at its context's end while the batch is still being
// committed (an engine waiting for a lock).
func TestWriterCancellableCallerDoesNotLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &seqEngine{}
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		w, running, release := gated("slow")
		ctx, cancel := context.WithCancelCause(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- wr.Do(ctx, w) }()
		<-running // the batch runs, blocked
		cause := errors.New("the call was cancelled")
		cancel(cause)
		if err := <-errc; !errors.Is(err, cause) {
			t.Errorf("Do = %v, want its context's cause while the batch still runs", err)
		}
		release()
		wr.Stop()
		if got := fmt.Sprint(e.committed); got != "[slow]" {
			t.Errorf("committed %s; want [slow]", got)
		}
	})
}

// TestWriterGatherIsTheFirstPendingWrites: one call at a time, a call's
// queued end is taken by the next call's claim, whose caller leads; the
// writer's gather, begun by an end that a claim took, does not end in a
// commit of its own for the next end, which the next claim carries too:
// a queued write waits the gather from when it was queued, not from when
// the gather began. Alone, it still commits once the gather has passed
// since it was queued.
func TestWriterGatherIsTheFirstPendingWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &seqEngine{gather: 5 * time.Millisecond}
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		defer wr.Stop()
		nop := func(string, bool) {}
		began := time.Now()
		wr.Queue(named("end1", nop)) // the gather begins
		time.Sleep(time.Millisecond)
		if err := wr.Do(context.Background(), named("claim2", nop)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		wr.Queue(named("end2", nop)) // 3 ms: the gather that end1 began ends at 5 ms
		time.Sleep(3 * time.Millisecond)
		synctest.Wait()
		if got := fmt.Sprint(e.committed); got != "[end1 claim2]" {
			t.Fatalf("at 6 ms committed %s; want [end1 claim2] (end2 waits for the next claim)", got)
		}
		if err := wr.Do(context.Background(), named("claim3", nop)); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(e.committed); got != "[end1 claim2 end2 claim3]" || wr.Stats().Batches != 2 {
			t.Errorf("committed %s in %d batches; want [end1 claim2 end2 claim3] in two", got, wr.Stats().Batches)
		}
		wr.Queue(named("end3", nop))
		queued := time.Now()
		time.Sleep(e.gather - time.Nanosecond)
		synctest.Wait()
		if e.has("end3") {
			t.Errorf("end3 committed before the gather passed since it was queued")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !e.has("end3") {
			t.Errorf("end3 not committed the gather (%v) after it was queued, %v after the start", time.Since(queued), time.Since(began))
		}
	})
}

// TestWriterGatherCountsTimeQueuedBehindACommit: a write queued while the
// writer commits another batch waits the gather from when it was queued,
// as Engine.Gather says, not a whole gather more once that commit ends:
// with the commit longer than the gather, it commits right after it.
func TestWriterGatherCountsTimeQueuedBehindACommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &seqEngine{gather: 5 * time.Millisecond}
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		defer wr.Stop()
		w, running, release := gated("slow")
		wr.Queue(w)
		<-running // the gather passed: the writer commits slow, blocked
		wr.Queue(named("end", func(string, bool) {}))
		time.Sleep(2 * e.gather)
		release()
		synctest.Wait()
		if !e.has("end") {
			t.Errorf("end, queued %v ago behind a commit, waits for a gather of its own (%v) after it", 2*e.gather, e.gather)
		}
	})
}
