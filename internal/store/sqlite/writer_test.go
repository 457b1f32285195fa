package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// hold queues a write that keeps the writer busy until release is called,
// so that the writes queued meanwhile go into the following batches.
func hold(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	s.W.Queue(&sqlcore.Write{What: "hold", Run: func(sqlcore.Batch, *sqlcore.Write) {
		close(started)
		<-gate
	}})
	<-started
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for range 5000 {
		if s.W.Queued() >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d writes queued, want %d", s.W.Queued(), n)
}

func TestWriterGroupsConcurrentWrites(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	before := s.WriterStats().Batches
	release := hold(t, s)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.PutFrame(ctx, &store.Frame{Request: "r", Frame: fmt.Sprintf("%016x", i), State: "executing", Started: t0})
		})
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The held batch, then the 50 frames in one (at most maxBatch a batch).
	if got := s.WriterStats().Batches - before; got != 2 {
		t.Errorf("%d writes waiting together took %d commits, want 2 (the held one, then one for all)", n, got)
	}
	frames, err := s.RequestFrames(ctx, "r")
	if err != nil || len(frames) != n {
		t.Fatalf("RequestFrames = %d frames, %v; want %d", len(frames), err, n)
	}
}

func TestWriterFailedWriteSparesItsBatch(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	release := hold(t, s)
	var wg sync.WaitGroup
	var goodErrs [2]error
	var badErr error
	put := func(i int) {
		goodErrs[i] = s.PutFrame(ctx, &store.Frame{Request: "r", Frame: fmt.Sprintf("%016x", i), State: "executing", Started: t0})
	}
	wg.Go(func() { put(0) })
	waitQueued(t, s, 1)
	wg.Go(func() {
		badErr = s.W.Do(ctx, &sqlcore.Write{Run: func(b sqlcore.Batch, w *sqlcore.Write) {
			b.Exec(w, sqlcore.StPutFrame, []any{"", "", "", "", "", "executing", nil, nil, nil, 0, 0, "r", "bad"}, nil)
			b.(*batch).run(w, func() error {
				_, err := b.(*batch).s.wc.ExecContext(bg, `INSERT INTO no_such_table VALUES (1)`)
				return &dbError{err}
			})
		}})
	})
	waitQueued(t, s, 2)
	wg.Go(func() { put(1) })
	waitQueued(t, s, 3)
	release()
	wg.Wait()
	if badErr == nil || !strings.Contains(badErr.Error(), "no_such_table") {
		t.Errorf("the failing write returned %v, want its database error", badErr)
	}
	for i, err := range goodErrs {
		if err != nil {
			t.Errorf("write %d of the same batch failed: %v", i, err)
		}
	}
	frames, err := s.RequestFrames(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range frames {
		ids = append(ids, f.Frame)
	}
	if fmt.Sprint(ids) != "[0000000000000000 0000000000000001]" {
		t.Errorf("frames stored: %v; want the two good ones, and nothing of the failed write", ids)
	}
}

func TestWriterCloseCommitsQueued(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		s.QueueFrame(&store.Frame{Request: "r", Frame: fmt.Sprintf("%016x", i), State: "completed", Started: t0})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.PutFrame(context.Background(), &store.Frame{Request: "r", Frame: "x"}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("PutFrame after Close = %v, want ErrClosed", err)
	}
	s = openSQLite(t, dir, nil)
	frames, err := s.RequestFrames(t.Context(), "r")
	if err != nil || len(frames) != 100 {
		t.Fatalf("after Close and a reopen: %d frames, %v; want the 100 queued", len(frames), err)
	}
}

// TestWriterCommitsClaimWithCheckpoint: the claim of a checkpointed call
// is answered once decided, and committed with the call's "executing"
// checkpoint, in one commit.
func TestWriterCommitsClaimWithCheckpoint(t *testing.T) {
	// The batch waits for the checkpoint for as long as the test needs, so
	// that a busy machine cannot make the claim commit alone: what is
	// tested is the pairing, not how fast the checkpoint follows.
	defer func(d time.Duration) { sqlcore.Linger = d }(sqlcore.Linger)
	sqlcore.Linger = time.Minute
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	now := time.Now()
	for i := range 5 {
		before := s.WriterStats().Batches
		frame := fmt.Sprintf("%016x", i+1)
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k" + frame, Owner: "a/1", Request: "r", Frame: frame, Claimed: now}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := s.PutFrame(ctx, &store.Frame{Request: "r", Frame: frame, IdemKey: "k" + frame, State: "executing", Started: now}); err != nil {
			t.Fatal(err)
		}
		if n := s.WriterStats().Batches - before; n != 1 {
			t.Errorf("call %d: the claim and its checkpoint took %d commits, want 1", i, n)
		}
	}
	claims, err := s.ClaimedKeys(ctx)
	if err != nil || len(claims) != 5 {
		t.Errorf("ClaimedKeys = %d, %v; want the 5 claims durable", len(claims), err)
	}
}

// TestWriterLostClaimFailsItsCheckpoint: a claim that was answered but
// whose batch could not be committed takes its call's checkpoint down
// with it: the checkpoint fails, so the call never runs without a claim.
func TestWriterLostClaimFailsItsCheckpoint(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	release := hold(t, s)
	var claimed bool
	var claimErr error
	decided := make(chan struct{})
	go func() {
		defer close(decided)
		_, claimed, claimErr = s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "a/1", Request: "r", Frame: "0000000000000001", Claimed: time.Now()})
	}()
	waitQueued(t, s, 1)
	for _, name := range []string{"x", "y"} { // each fails the batch once: no commit
		s.W.Queue(&sqlcore.Write{What: name, Run: func(b sqlcore.Batch, w *sqlcore.Write) {
			b.(*batch).run(w, func() error { return &dbError{errors.New(name + " failed")} })
		}})
	}
	waitQueued(t, s, 3)
	release()
	<-decided
	if claimErr != nil || !claimed {
		t.Fatalf("ClaimKey = %v, %v; want it claimed (decided before the batch failed)", claimed, claimErr)
	}
	err := s.PutFrame(ctx, &store.Frame{Request: "r", Frame: "0000000000000001", State: "executing", Started: t0})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the checkpoint of a call whose claim was lost: %v; want ErrConflict", err)
	}
	if frames, _ := s.RequestFrames(ctx, "r"); len(frames) != 0 {
		t.Errorf("the checkpoint was written: %+v", frames)
	}
	// The key was never claimed: a retry claims it.
	if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "a/1", Claimed: time.Now()}); err != nil || !ok {
		t.Errorf("a retry's claim = %v, %v", ok, err)
	}
}
