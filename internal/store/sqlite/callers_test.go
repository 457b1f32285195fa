package sqlite

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestWriterConcurrentCallsKeepTheirOrder: concurrent calls, each as the
// gateway writes it (a claim that carries its "executing" checkpoint, its
// result and its end queued), while callers of the writer and its
// goroutine take turns committing. A second claim of a call's key, after
// its queued result, finds the result; a waited write after the queued
// end finds it durable; after Close and a reopen, every call is done.
func TestWriterConcurrentCallsKeepTheirOrder(t *testing.T) {
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	ctx := t.Context()
	const callers, calls = 8, 40
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				key, frame := fmt.Sprintf("k%d-%d", c, i), fmt.Sprintf("%08x%08x", c, i)
				now := time.Now()
				exec := &store.Frame{Request: "r", Frame: frame, IdemKey: key, State: "executing", Started: now}
				if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "a/1", Request: "r", Frame: frame, Claimed: now, Executing: exec}); err != nil || !ok {
					t.Errorf("%s: ClaimKey = %v, %v", key, ok, err)
					return
				}
				s.QueueCompleteKey(key, "a/1", []byte(`{"n":1}`), now.Add(time.Hour))
				s.QueueFrame(&store.Frame{Request: "r", Frame: frame, IdemKey: key, State: "completed", Started: now})
				rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "a/2", Claimed: time.Now()})
				if err != nil || ok || rec.State != store.IdemDone || string(rec.Result) != `{"n":1}` {
					t.Errorf("%s: a claim after the queued result = %+v, %v, %v; want the result", key, rec, ok, err)
					return
				}
				frames, err := s.RequestFrames(ctx, "r")
				if err != nil {
					t.Error(err)
					return
				}
				for _, f := range frames {
					if f.Frame == frame && f.State != "completed" {
						t.Errorf("%s: its end was queued before a waited write returned; the frame is %s", key, f.State)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSQLite(t, dir, nil)
	frames, err := s.RequestFrames(ctx, "r")
	if err != nil || len(frames) != callers*calls {
		t.Fatalf("after a reopen: %d frames, %v; want %d", len(frames), err, callers*calls)
	}
	for _, f := range frames {
		if f.State != "completed" {
			t.Errorf("frame %s is %s after a reopen", f.Frame, f.State)
		}
	}
	if claims, err := s.ClaimedKeys(ctx); err != nil || len(claims) != 0 {
		t.Errorf("ClaimedKeys after a reopen = %d, %v; want every key done", len(claims), err)
	}
}
