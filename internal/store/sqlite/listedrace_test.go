package sqlite

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestRequestFramesWhileTheMarkMoves: reads of a request's frames that run
// while its checkpoints are written and the marks move (the frames above
// the mark listed and the mark passing them, in another connection's
// transaction) each find every frame whose write returned before the read
// began, once: a read sees the frames before the move or after it, never
// the listed ones of one and the unlisted ones of the other.
func TestRequestFramesWhileTheMarkMoves(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t, t.TempDir(), nil)
	const writers, perWriter = 4, 150
	var written [writers]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				f := &store.Frame{Request: fmt.Sprintf("r%d", w), Frame: fmt.Sprintf("%08x%08x", i, w), State: "executing",
					Started: time.Unix(0, int64(i))}
				if err := s.PutFrame(ctx, f); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 { // put again: ended in place, or open, moved to the end
					f.State = "completed"
					if err := s.PutFrame(ctx, f); err != nil {
						errs <- err
						return
					}
				}
				written[w].Store(int64(i + 1))
			}
		})
	}
	done := make(chan struct{})
	settle, read := sync.WaitGroup{}, sync.WaitGroup{}
	settle.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.W.Do(context.WithoutCancel(ctx), s.settleMarks()); err != nil {
				errs <- err
				return
			}
		}
	})
	reads := 0
	read.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			for w := range writers {
				least := written[w].Load()
				fs, err := s.RequestFrames(ctx, fmt.Sprintf("r%d", w))
				if err != nil {
					errs <- err
					return
				}
				seen := map[string]bool{}
				for _, f := range fs {
					if seen[f.Frame] {
						errs <- fmt.Errorf("RequestFrames(r%d) lists frame %s twice", w, f.Frame)
						return
					}
					seen[f.Frame] = true
				}
				for i := range least {
					if id := fmt.Sprintf("%08x%08x", i, w); !seen[id] {
						errs <- fmt.Errorf("RequestFrames(r%d) misses frame %s, written before the read (%d of %d found)", w, id, len(fs), least)
						return
					}
				}
				reads++
			}
		}
	})
	wg.Wait()
	close(done)
	settle.Wait()
	read.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reads == 0 {
		t.Fatal("no read ran while the frames were written")
	}
}
