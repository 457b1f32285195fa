package sqlcore

import (
	"context"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// EndExecutingFrame implements store.FrameEnder: f's state, undo and
// error are written only where its checkpoint is still "executing" (and,
// on an engine whose frames keep their owner, of f.Owner's life). It
// reports whether it was.
func (c *Core) EndExecutingFrame(ctx context.Context, f *store.Frame) (bool, error) {
	if c.Closed() {
		return false, store.ErrClosed
	}
	now := time.Now()
	f.Updated = store.Round(now)
	d := c.D
	args := []any{f.State, d.Text(f.Undo), d.Text(f.Error), now.UnixNano(), f.Request, f.Frame}
	var landed bool
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		st, a := StEndExecuting, args
		if f.Owner != "" && b.Has(StEndExecutingOwned) {
			st, a = StEndExecutingOwned, append(args[:len(args):len(args)], f.Owner)
		}
		b.Exec(w, st, a, func(n int64) error {
			landed = n == 1
			return nil
		})
	}})
	if err != nil {
		return false, fmt.Errorf("ending frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	return landed, nil
}
