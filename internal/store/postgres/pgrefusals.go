package postgres

import (
	"context"
	"fmt"

	"github.com/agentreach/reach/internal/store"
)

func init() {
	pgMigrations = append(pgMigrations, migration{17, "refusals in a row, shared", `
-- The count of a request's refusals in a row (store.Refusals), kept in its
-- ledger's row, so that the instances that share the request count on one
-- number: an agent whose calls alternate between them is stopped at the
-- same refusal as on one instance.
ALTER TABLE ledger ADD COLUMN refused BIGINT NOT NULL DEFAULT 0;

-- reach_admit as in version 2, but a tool call admitted (d_calls > 0)
-- sets the refusals in a row of its request (p_ids[1]) back to zero, in
-- the update that debits it: a call let through through any instance ends
-- the run of refusals, at no cost of its own.
CREATE OR REPLACE FUNCTION ` + reachAdmitHead + `
	UPDATE ledger SET turns = turns + d_turns, tool_calls = tool_calls + d_calls, tokens = tokens + d_tokens, cost = cost + d_cost,
		refused = CASE WHEN d_calls > 0 AND request = p_ids[1] THEN 0 ELSE refused END
	WHERE request = ANY(p_ids);
` + reachAdmitTail + `
`})
}

// NoteRefused implements store.Refusals: one statement on its own
// connection, on the path of a refused call only, outside the writer's
// batches (whose transactions take rows in their own order).
func (p *Store) NoteRefused(ctx context.Context, request string, reset bool) (int64, error) {
	if p.Closed() {
		return 0, store.ErrClosed
	}
	var n int64
	err := p.pool.QueryRow(ctx, `INSERT INTO ledger (request, refused) VALUES ($1, 1)
	ON CONFLICT (request) DO UPDATE SET refused = CASE WHEN $2 THEN 1 ELSE ledger.refused + 1 END
	RETURNING refused`, request, reset).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting a refusal of request %s: %w", request, err)
	}
	return n, nil
}

// ResetRefused implements store.Refusals: one statement, on the path of a
// hand-off or a replayed call only (a tool call admitted is set back by
// reach_admit). It writes nothing when the count is zero already: the
// WHERE matches no row, so no row version, no lock held.
func (p *Store) ResetRefused(ctx context.Context, request string) error {
	if p.Closed() {
		return store.ErrClosed
	}
	if _, err := p.pool.Exec(ctx, `UPDATE ledger SET refused = 0 WHERE request = $1 AND refused <> 0`, request); err != nil {
		return fmt.Errorf("setting back the refusals of request %s: %w", request, err)
	}
	return nil
}
