package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

var _ reach.CutOffStore = (*Core)(nil)

const cutOffColumns = `key, tool, root, request, call_id, began, at, restart, stopped, expires`

// PutCutOff implements reach.CutOffStore: one write, the sweep of the
// expired first (the table stays as large as the writes of one window).
func (c *Core) PutCutOff(ctx context.Context, r *reach.CutOffRecord) error {
	if c.Closed() {
		return store.ErrClosed
	}
	restart := int64(0)
	if r.Restart {
		restart = 1
	}
	args := []any{r.Key, r.Tool, r.Root, r.Request, r.Call, store.UnixNano(r.Began), store.UnixNano(r.At), restart, r.Stopped, store.UnixNano(r.Expires)}
	err := c.W.Do(ctx, &Write{What: "a cut-off write", Run: func(b Batch, w *Write) {
		b.Exec(w, StCutOffSweep, []any{store.UnixNano(r.At)}, nil)
		b.Exec(w, StCutOffPut, args, nil)
	}})
	if err != nil {
		return fmt.Errorf("recording a write cut off before its answer was delivered: %w", err)
	}
	crashpoint.Reached("cutoff.noted")
	return nil
}

func scanCutOff(sc interface{ Scan(...any) error }) (*reach.CutOffRecord, error) {
	var r reach.CutOffRecord
	var began, at, restart, expires int64
	if err := sc.Scan(&r.Key, &r.Tool, &r.Root, &r.Request, &r.Call, &began, &at, &restart, &r.Stopped, &expires); err != nil {
		return nil, err
	}
	r.Began, r.At, r.Restart, r.Expires = store.FromUnixNano(began), store.FromUnixNano(at), restart != 0, store.FromUnixNano(expires)
	return &r, nil
}

// ListCutOffs implements reach.CutOffStore.
func (c *Core) ListCutOffs(ctx context.Context, now time.Time) ([]*reach.CutOffRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return queryAll(ctx, c.R, "listing the cut-off writes", scanCutOff, `SELECT `+cutOffColumns+` FROM cut_offs WHERE expires > $1 ORDER BY at`, store.UnixNano(now))
}

// GetCutOff implements reach.CutOffStore: a read by its key.
func (c *Core) GetCutOff(ctx context.Context, key string, now time.Time) (*reach.CutOffRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	r, err := getOne(ctx, c, "a cut-off write", scanCutOff, `SELECT `+cutOffColumns+` FROM cut_offs WHERE key = $1 AND expires > $2`, key, store.UnixNano(now))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return r, err
}

// TakeCutOff implements reach.CutOffStore: one write.
func (c *Core) TakeCutOff(ctx context.Context, key, request, call string) (bool, error) {
	if c.Closed() {
		return false, store.ErrClosed
	}
	var n int64
	err := c.W.Do(ctx, &Write{What: "the take of a cut-off write", Run: func(b Batch, w *Write) {
		n = 0
		b.Exec(w, StCutOffTake, []any{key, request, call}, count(&n))
	}})
	if err != nil {
		return false, fmt.Errorf("taking a write cut off before its answer was delivered: %w", err)
	}
	if n == 1 {
		crashpoint.Reached("cutoff.taken")
	}
	return n == 1, nil
}

// HandCutOff implements reach.CutOffStore: one write.
func (c *Core) HandCutOff(ctx context.Context, key, request, call, toRequest, toCall string) (bool, error) {
	if c.Closed() {
		return false, store.ErrClosed
	}
	var n int64
	err := c.W.Do(ctx, &Write{What: "the hand-over of a cut-off write", Run: func(b Batch, w *Write) {
		n = 0
		b.Exec(w, StCutOffHand, []any{key, request, call, toRequest, toCall}, count(&n))
	}})
	if err != nil {
		return false, fmt.Errorf("handing over a write cut off before its answer was delivered: %w", err)
	}
	if n == 1 {
		crashpoint.Reached("cutoff.taken")
	}
	return n == 1, nil
}
