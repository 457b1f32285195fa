package sqlcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// fakeEngine is an engine that sends statements together, as PostgreSQL's
// does: a statement's callback runs at Flush. Its first commits fail, as
// many as failCommits says, and each commit is reported on commits.
type fakeEngine struct {
	mu          sync.Mutex
	failCommits int
	commits     chan error
	gather      time.Duration
	hold        time.Duration
	execs       [][]any // the arguments of each statement run, in order
}

func (e *fakeEngine) Begin(bool) (Tx, error) { return &fakeTx{e: e}, nil }
func (e *fakeEngine) Sequential() bool       { return false }
func (e *fakeEngine) Resend(error) bool      { return false }
func (e *fakeEngine) Gather() time.Duration  { return e.gather }
func (e *fakeEngine) Hold() time.Duration    { return e.hold }

type fakeTx struct {
	e       *fakeEngine
	pending []func()
}

func (t *fakeTx) Exec(w *Write, id Stmt, args []any, fn func(n int64) error) {
	t.pending = append(t.pending, func() {
		t.e.mu.Lock()
		t.e.execs = append(t.e.execs, args)
		t.e.mu.Unlock()
		if fn != nil {
			if err := fn(1); err != nil {
				w.Fail(err)
			}
		}
	})
}

func (t *fakeTx) Query(w *Write, id Stmt, args []any, fn func(rows Rows) error) {
	panic("not used")
}

func (t *fakeTx) Has(Stmt) bool { return true }

func (t *fakeTx) Flush() (*Write, error) {
	for _, f := range t.pending {
		f()
	}
	t.pending = nil
	return nil, nil
}

func (t *fakeTx) Commit() (*Write, error) {
	t.Flush()
	t.e.mu.Lock()
	var err error
	if t.e.failCommits > 0 {
		t.e.failCommits--
		err = errors.New("commit failed")
	}
	t.e.mu.Unlock()
	t.e.commits <- err
	return nil, err
}

func (t *fakeTx) Rollback() {}

// claimWrite claims, as ClaimKey's write does: its statement decides.
func claimWrite() *Write {
	return &Write{Run: func(b Batch, w *Write) {
		w.Claimed = false
		b.Exec(w, StIdemClaim, nil, func(int64) error { w.Claimed = true; return nil })
	}}
}

// checkpointWrite is the checkpoint of the call that claimed with pair, as
// PutFrame's write is.
func checkpointWrite(wr *Writer, pair string) *Write {
	return &Write{Pairs: pair, Run: func(b Batch, w *Write) {
		if wr.Lost(pair) {
			w.Fail(store.ErrConflict)
			return
		}
		b.Exec(w, StPutFrame, nil, nil)
	}}
}

// claimed starts a writer on a fake engine whose first failCommits commits
// fail, with Linger set to linger for the test, and claims for the call
// whose checkpoint is pair.
func claimed(t *testing.T, linger time.Duration, failCommits int, pair string) (*Writer, *fakeEngine) {
	t.Helper()
	old := Linger
	Linger = linger
	e := &fakeEngine{failCommits: failCommits, commits: make(chan error, 10)}
	wr := StartWriter(e, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { wr.Stop(); Linger = old })
	w := claimWrite()
	var ok bool
	if err := wr.Decide(t.Context(), w, pair, func(error) { ok = w.Claimed }); err != nil || !ok {
		t.Fatalf("Decide = %v, claimed %v", err, ok)
	}
	return wr, e
}

// TestWriterPairsClaimWithCheckpoint: on an engine that sends its
// statements together, a claim is answered once its round came back, and
// its checkpoint, sent then, commits with it in one commit.
func TestWriterPairsClaimWithCheckpoint(t *testing.T) {
	// The pairing is tested, not how fast the checkpoint follows.
	wr, _ := claimed(t, time.Minute, 0, "r\x00f")
	ctx := t.Context()
	if err := wr.Do(ctx, checkpointWrite(wr, "r\x00f")); err != nil {
		t.Fatal(err)
	}
	if n := wr.Stats().Batches; n != 1 {
		t.Errorf("the claim and its checkpoint took %d commits, want 1", n)
	}
}

// TestWriterLostClaimFailsCheckpoint: a claim answered as claimed whose
// batch then failed to commit takes its call's checkpoint down with it,
// even when the checkpoint comes in a later batch: the call must not run
// without its claim.
func TestWriterLostClaimFailsCheckpoint(t *testing.T) {
	wr, e := claimed(t, time.Microsecond, 1, "r\x00f")
	ctx := t.Context()
	if err := <-e.commits; err == nil {
		t.Fatal("the claim's batch committed; the test needs it to fail")
	}
	err := wr.Do(ctx, checkpointWrite(wr, "r\x00f"))
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("the checkpoint of a lost claim: %v, want ErrConflict", err)
	}
	// The next call's claim and checkpoint are not affected.
	w := claimWrite()
	if err := wr.Decide(context.Background(), w, "r\x00g", func(error) {}); err != nil {
		t.Fatal(err)
	}
	if err := wr.Do(ctx, checkpointWrite(wr, "r\x00g")); err != nil {
		t.Errorf("another call's checkpoint: %v", err)
	}
}

// A batch of queued writes alone waits (Engine.Gather) for more: the next
// write that a caller waits for joins it, and one commit holds both. On an
// engine without it, the queued write commits alone first.
func TestWriterGathersQueuedWrites(t *testing.T) {
	for _, tc := range []struct {
		gather  time.Duration
		commits int
	}{{5 * time.Millisecond, 1}, {0, 2}} {
		synctest.Test(t, func(t *testing.T) {
			e := &fakeEngine{commits: make(chan error, 10), gather: tc.gather}
			wr := StartWriter(e, slog.New(slog.DiscardHandler))
			var ran []string
			put := func(what string) *Write {
				return &Write{What: what, Run: func(b Batch, w *Write) {
					b.Exec(w, StPutFrame, nil, func(int64) error { ran = append(ran, what); return nil })
				}}
			}
			wr.Queue(put("end of call 1"))
			synctest.Wait() // the writer has taken it
			if err := wr.Do(t.Context(), put("claim of call 2")); err != nil {
				t.Fatal(err)
			}
			wr.Stop()
			if got := len(e.commits); got != tc.commits {
				t.Errorf("gather %v: %d commits, want %d (ran %v)", tc.gather, got, tc.commits, ran)
			}
			if len(ran) != 2 || ran[0] != "end of call 1" {
				t.Errorf("gather %v: ran %v; want the queued write first", tc.gather, ran)
			}
		})
	}
}

// TestWriterGatherNotWokenByQueuedWrites: writes queued while the writer
// gathers do not wake it (nothing it would do before the gather's end):
// they are committed when the gather ends, with the write that began it, in
// order. A full batch still ends the gather at once.
func TestWriterGatherNotWokenByQueuedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &fakeEngine{commits: make(chan error, 10), gather: 5 * time.Millisecond}
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		defer wr.Stop()
		var ran []int
		put := func(i int) *Write {
			return &Write{What: "end", Run: func(b Batch, w *Write) {
				b.Exec(w, StPutFrame, nil, func(int64) error { ran = append(ran, i); return nil })
			}}
		}
		wr.Queue(put(0))
		synctest.Wait() // the writer gathers
		for i := 1; i <= 3; i++ {
			wr.Queue(put(i))
			if n := len(wr.wake); n != 0 {
				t.Fatalf("write %d queued during the gather woke the writer", i)
			}
		}
		synctest.Wait()
		if len(e.commits) != 0 {
			t.Fatal("committed before the gather ended")
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if len(e.commits) != 1 || !slices.Equal(ran, []int{0, 1, 2, 3}) {
			t.Fatalf("after the gather: %d commits, ran %v; want one commit of 0..3 in order", len(e.commits), ran)
		}

		ran = nil
		wr.Queue(put(0))
		synctest.Wait() // gathers again
		for i := 1; i < maxBatch; i++ {
			wr.Queue(put(i))
		}
		synctest.Wait()
		if len(e.commits) != 2 || len(ran) != maxBatch {
			t.Errorf("a full batch: %d commits, %d writes run before the gather's end; want it committed at once", len(e.commits)-1, len(ran))
		}
	})
}

// TestQueuedWriteNames checks how the log names the queued writes that
// failed (named only then): a checkpoint by its frame and request, a key's
// result by the key.
func TestQueuedWriteNames(t *testing.T) {
	var buf bytes.Buffer
	e := &fakeEngine{failCommits: 2, commits: make(chan error, 10)}
	c := &Core{W: StartWriter(e, slog.New(slog.NewJSONHandler(&buf, nil))),
		D: Dialect{Text: func(b []byte) any { return b }, Key: func(k string) any { return k }}}
	c.QueueFrame(&store.Frame{Request: "r1", Frame: "f1", State: "completed"})
	c.QueueCompleteKey("alice\x00pay", "o", nil, time.Time{})
	c.W.Stop()
	var got []string
	for line := range bytes.Lines(buf.Bytes()) {
		var rec struct{ Write string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.Write)
	}
	want := []string{"frame f1 of request r1", `the result of idempotency key "alice\x00pay"`}
	if !slices.Equal(got, want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

// TestWriterStatsCountCommits: the writer counts the transactions it
// committed, the writes in them and how long each took, and not a batch
// whose commit failed; a duration is counted in the bucket of the first
// bound it does not exceed, or past the last bound in Count only.
func TestWriterStatsCountCommits(t *testing.T) {
	e := &fakeEngine{failCommits: 1, commits: make(chan error, 10)}
	wr := StartWriter(e, slog.New(slog.DiscardHandler))
	defer wr.Stop()
	write := func() *Write { return &Write{Run: func(b Batch, w *Write) { b.Exec(w, StPutFrame, nil, nil) }} }
	if err := wr.Do(t.Context(), write()); err == nil {
		t.Fatal("the first commit was to fail")
	}
	for range 3 {
		if err := wr.Do(t.Context(), write()); err != nil {
			t.Fatal(err)
		}
	}
	st := wr.Stats()
	inBuckets := int64(0)
	for _, n := range st.Commit.Buckets {
		inBuckets += n
	}
	if st.Batches != 3 || st.Writes != 3 || st.Commit.Count != 3 || inBuckets > 3 || st.Commit.Sum <= 0 {
		t.Errorf("after a failed commit and three of one write: %+v; want 3 batches, 3 writes, 3 commits timed", st)
	}

	var w Writer
	w.committed(2, 100*time.Microsecond) // on the first bound: its bucket
	w.committed(1, 101*time.Microsecond) // past it: the next
	w.committed(1, 2*time.Second)        // past every bound
	st = w.Stats()
	if st.Batches != 3 || st.Writes != 4 || st.Commit.Count != 3 || st.Commit.Buckets[0] != 1 || st.Commit.Buckets[1] != 1 ||
		st.Commit.Sum != 2*time.Second+201*time.Microsecond {
		t.Errorf("committed(100µs, 101µs, 2s): %+v", st)
	}
	for i := 2; i < len(st.Commit.Buckets); i++ {
		if st.Commit.Buckets[i] != 0 {
			t.Errorf("bucket %d (≤ %vs) counts %d, want 0", i, store.CommitBuckets[i], st.Commit.Buckets[i])
		}
	}
}

// TestWriterStatsCountBeforeAnswer: a batch is counted before its writes
// are answered (their After, then their callers), so that a caller whose
// write returned sees it in Stats.
func TestWriterStatsCountBeforeAnswer(t *testing.T) {
	e := &fakeEngine{commits: make(chan error, 10)}
	wr := StartWriter(e, slog.New(slog.DiscardHandler))
	defer wr.Stop()
	for i := range int64(3) {
		var seen store.WriterStats
		w := &Write{Run: func(b Batch, w *Write) { b.Exec(w, StPutFrame, nil, nil) }, After: func(bool) { seen = wr.Stats() }}
		if err := wr.Do(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		<-e.commits
		if seen.Batches != i+1 || seen.Writes != i+1 {
			t.Errorf("write %d answered with %d batches, %d writes counted; want %d", i+1, seen.Batches, seen.Writes, i+1)
		}
	}
}

// TestQueuedRequestTakesItsBeginsPlace: a request's queued write (its end)
// takes the place of its begin's while that is still queued: one row
// written, in its latest state, where the begin was (before what was
// queued after it); once a batch took the begin, the end is queued after
// it, and no begin is kept once its request's next write came.
func TestQueuedRequestTakesItsBeginsPlace(t *testing.T) {
	e := &fakeEngine{commits: make(chan error, 10), gather: time.Hour}
	c := &Core{W: StartWriter(e, slog.New(slog.DiscardHandler)), D: Dialect{Text: func(b []byte) any { return b }}}
	c.QueueRequest(&store.Request{ID: "a", State: "running"})
	c.QueueRequest(&store.Request{ID: "b", State: "running"})
	c.QueueRequest(&store.Request{ID: "a", State: "ended"})
	if err := c.W.Do(t.Context(), claimWrite()); err != nil { // commits what is queued before it
		t.Fatal(err)
	}
	c.QueueRequest(&store.Request{ID: "b", State: "ended"}) // b's begin is committed
	c.W.Stop()
	var got []string
	for _, args := range e.execs {
		if len(args) > 9 {
			got = append(got, args[0].(string)+" "+args[9].(string))
		} else {
			got = append(got, "claim")
		}
	}
	if want := []string{"a ended", "b running", "claim", "b ended"}; !slices.Equal(got, want) {
		t.Errorf("statements %q, want %q", got, want)
	}
	if len(c.begins) != 0 {
		t.Errorf("begins kept after their batches: %v", c.begins)
	}
}
