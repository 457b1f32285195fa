package sqlcore

import (
	"context"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// PutHandedTasks implements store.HandedTasks: one write, the sweeps
// around the puts.
func (c *Core) PutHandedTasks(ctx context.Context, ts []*store.HandedTask, most int) error {
	if len(ts) == 0 {
		return nil
	}
	if c.Closed() {
		return store.ErrClosed
	}
	created := store.UnixNano(ts[0].Created)
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StHandedSweep, []any{created}, nil)
		for _, t := range ts {
			b.Exec(w, StHandedPut, []any{t.Digest, t.Request, t.Principal, t.Tenant, t.Frame, t.Tool, EmptyNil(t.Stack), created, store.UnixNano(t.Expires)}, nil)
		}
		b.Exec(w, StHandedTrim, []any{ts[0].Principal, ts[0].Tenant, int64(most)}, nil)
	}})
	if err != nil {
		return fmt.Errorf("recording the tasks a model turn handed: %w", err)
	}
	return nil
}

// HandedTasks implements store.HandedTasks.
func (c *Core) HandedTasks(ctx context.Context, principal, tenant, digest string, at time.Time) ([]*store.HandedTask, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return queryAll(ctx, c.R, "reading the tasks model turns handed", func(sc interface{ Scan(...any) error }) (*store.HandedTask, error) {
		var t store.HandedTask
		var created, expires int64
		if err := sc.Scan(&t.Digest, &t.Request, &t.Principal, &t.Tenant, &t.Frame, &t.Tool, &t.Stack, &created, &expires); err != nil {
			return nil, err
		}
		t.Created, t.Expires = store.FromUnixNano(created), store.FromUnixNano(expires)
		return &t, nil
	}, `SELECT h.digest, h.request, h.principal, h.tenant, h.frame, h.tool, h.stack, h.created, h.expires
	FROM handed_tasks h JOIN requests q ON q.id = h.request
	WHERE h.digest = $1 AND h.principal = $2 AND h.tenant = $3 AND h.expires > $4 AND q.state = 'running'
	ORDER BY h.created DESC LIMIT `+fmt.Sprint(store.MaxHandedRead),
		digest, principal, tenant, store.UnixNano(at))
}
