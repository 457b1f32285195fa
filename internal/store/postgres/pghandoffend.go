package postgres

import (
	"context"
	"fmt"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// maxAbove bounds the requests above a sub-request that SettleHandOff
// reads for a stop (a chain of hand-offs is bounded by the depth budget
// far below it; a cycle of parents, which no write makes, ends there).
const maxAbove = 256

// SettleHandOff is SettleRequest for the sub-request id of a hand-off
// that ended with no stop on the instance that made it, while parts of it
// run on other instances: every instance ends its part, and no recovery
// undoes its calls, as after its client's end. Unlike SettleRequest, it
// settles nothing, and wakes no one, when the request is stopped (its
// stop, stored through another instance and not yet heard by the one
// that made the hand-off, undoes it all; so does a stop of a request
// above it) or no longer running. It reports
// whether it settled the request.
func (p *Store) SettleHandOff(ctx context.Context, id string) (bool, error) {
	if p.Closed() {
		return false, store.ErrClosed
	}
	// As in SettleRequest: what the writer holds queued is committed first.
	if err := p.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		return false, fmt.Errorf("ending hand-off %s: %w", id, err)
	}
	var settled bool
	// The requests above it, each by its parent (at most maxAbove): a stop
	// of any of them undoes the chain below it, this sub-request too.
	err := p.pool.QueryRow(ctx, `WITH RECURSIVE up AS (
		SELECT parent, 1 AS n FROM requests WHERE id = $1
		UNION ALL
		SELECT r.parent, up.n + 1 FROM requests r JOIN up ON r.id = up.parent WHERE up.n < $4),
	s AS (
		UPDATE requests SET settled = started WHERE id = $1 AND state = 'running' AND stop = 0 AND parent <> ''
			AND NOT EXISTS (SELECT 1 FROM requests r JOIN up ON r.id = up.parent WHERE r.stop > 0 OR r.state IN ('stopped', 'interrupted'))
		RETURNING id)
	SELECT count(pg_notify($2, $3)) > 0 FROM s`, id, notifyChannel, notifyEnd+id, maxAbove).Scan(&settled)
	if err != nil {
		return false, fmt.Errorf("ending hand-off %s: %w", id, err)
	}
	return settled, nil
}
