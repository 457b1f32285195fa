package sqlcore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// PutHandedTasks implements store.HandedTasks: one write, the sweeps
// around the puts. Its writes, and the claim's and the sub's, are Apart:
// they lead a batch (PostgreSQL takes the table's one lock at the head of
// the transaction, before any record's).
func (c *Core) PutHandedTasks(ctx context.Context, ts []*store.HandedTask, most int) error {
	if len(ts) == 0 {
		return nil
	}
	if c.Closed() {
		return store.ErrClosed
	}
	created := store.UnixNano(ts[0].Created)
	// In the key's order, as every statement that locks more than one
	// record locks them (PostgreSQL's): two writes at once, or a write
	// and a claim, never each hold a record the other waits for.
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(x, y *store.HandedTask) int {
		return cmp.Or(cmp.Compare(x.Digest, y.Digest), cmp.Compare(x.Request, y.Request), cmp.Compare(x.Nth, y.Nth))
	})
	err := c.W.Do(ctx, &Write{Apart: true, Run: func(b Batch, w *Write) {
		b.Exec(w, StHandedSweep, []any{created}, nil)
		for i, t := range ts {
			if !slices.ContainsFunc(ts[:i], func(o *store.HandedTask) bool { return o.Digest == t.Digest && o.Request == t.Request }) {
				b.Exec(w, StHandedOthers, []any{t.Digest, t.Request, t.Frame}, nil)
			}
			b.Exec(w, StHandedPut, []any{t.Digest, t.Request, t.Principal, t.Tenant, t.Frame, t.Tool, EmptyNil(t.Stack), created, store.UnixNano(t.Expires), int64(t.Nth)}, nil)
		}
		b.Exec(w, StHandedTrim, []any{ts[0].Principal, ts[0].Tenant, int64(most)}, nil)
	}})
	if err != nil {
		return fmt.Errorf("recording the tasks a model turn handed: %w", err)
	}
	crashpoint.Reached("handed.put") // a kill here: the records stored, the turn's tool calls not passed on
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
		var nth int64
		if err := sc.Scan(&t.Digest, &t.Request, &t.Principal, &t.Tenant, &t.Frame, &t.Tool, &t.Stack, &created, &expires, &nth); err != nil {
			return nil, err
		}
		t.Created, t.Expires, t.Nth = store.FromUnixNano(created), store.FromUnixNano(expires), int(nth)
		return &t, nil
	}, `SELECT h.digest, h.request, h.principal, h.tenant, h.frame, h.tool, h.stack, h.created, h.expires, h.nth
	FROM handed_tasks h JOIN requests q ON q.id = h.request
	WHERE h.digest = $1 AND h.principal = $2 AND h.tenant = $3 AND h.expires > $4 AND q.state = 'running'
	ORDER BY h.created DESC, h.nth LIMIT `+fmt.Sprint(store.MaxHandedRead),
		digest, principal, tenant, store.UnixNano(at))
}

// ClaimHandedTask implements store.HandedTasks: one statement, through the
// writer, so that two claims at once are one after the other.
func (c *Core) ClaimHandedTask(ctx context.Context, principal, tenant, digest string, at time.Time) (*store.HandedTask, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	var got *store.HandedTask
	err := c.W.Do(ctx, &Write{Apart: true, Run: func(b Batch, w *Write) {
		got = nil
		b.Query(w, StHandedClaim, []any{digest, principal, tenant, store.UnixNano(at)}, func(rows Rows) error {
			if !rows.Next() {
				return nil
			}
			t := store.HandedTask{Digest: digest, Principal: principal, Tenant: tenant}
			var created, expires, nth int64
			if err := rows.Scan(&t.Request, &t.Frame, &t.Tool, &t.Stack, &created, &expires, &t.Sub, &nth); err != nil {
				return err
			}
			t.Created, t.Expires, t.Nth = store.FromUnixNano(created), store.FromUnixNano(expires), int(nth)
			got = &t
			return nil
		})
	}})
	if err != nil {
		return nil, fmt.Errorf("claiming a task a model turn handed: %w", err)
	}
	if got != nil {
		crashpoint.Reached("handed.claimed") // a kill here: the record used, no sub-request begun from it
	}
	return got, nil
}

// SetHandedSub implements store.HandedTasks.
func (c *Core) SetHandedSub(ctx context.Context, digest, request string, nth int, prev, sub string) (bool, error) {
	if c.Closed() {
		return false, store.ErrClosed
	}
	var set bool
	err := c.W.Do(ctx, &Write{Apart: true, Run: func(b Batch, w *Write) {
		b.Exec(w, StHandedSub, []any{digest, request, prev, sub, int64(nth)}, func(n int64) error { set = n > 0; return nil })
	}})
	if err != nil {
		return false, fmt.Errorf("recording the sub-request begun from a task a model turn handed: %w", err)
	}
	if set {
		crashpoint.Reached("handed.sub") // a kill here: a sub-request recorded, its first turn not sent
	}
	return set, nil
}

// HandedSubs implements store.HandedTasks.
func (c *Core) HandedSubs(ctx context.Context, request, frame string) ([]string, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return queryAll(ctx, c.R, "reading the sub-requests begun from the tasks a model turn handed", func(sc interface{ Scan(...any) error }) (string, error) {
		var s string
		err := sc.Scan(&s)
		return s, err
	}, Shared()[StHandedSubs], request, frame)
}
