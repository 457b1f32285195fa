package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/jackc/pgx/v5"
)

// PendingApprovals returns the approvals pending at now (not expired)
// whose data holds text, oldest first, at most limit: a read, for a queue
// that bounds one principal's pending approvals across the instances that
// share the store (it passes the principal as its data spells it, and
// reads each row to count only that principal's). It walks the pending
// ones only (the index of live approvals).
func (p *Store) PendingApprovals(ctx context.Context, text string, now time.Time, limit int) ([]*store.ApprovalRecord, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT id, key, alt, status, version, created, expires, updated, data FROM approvals
	WHERE status = 'pending' AND expires > $2 AND strpos(data, $1) > 0 ORDER BY created LIMIT $3`, text, now.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("listing pending approvals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.ApprovalRecord, error) {
		var a store.ApprovalRecord
		var created, expires, updated int64
		if err := r.Scan(&a.ID, &a.Key, &a.Alt, &a.Status, &a.Version, &created, &expires, &updated, &a.Data); err != nil {
			return nil, err
		}
		a.Created, a.Expires, a.Updated = store.FromUnixNano(created), store.FromUnixNano(expires), store.FromUnixNano(updated)
		return &a, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing pending approvals: %w", err)
	}
	return out, nil
}
