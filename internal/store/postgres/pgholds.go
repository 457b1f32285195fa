package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/store"
)

func init() {
	pgMigrations = append(pgMigrations, migration{22, "model turns hold their answer's cap on the shared ledger", `
-- What the model turns running on every instance hold of each request's
-- budget: a turn's prompt and answer's cap (tokens, and cost in billionths
-- of the price unit), less what it already debited, on its request and on
-- every request above it, one row each. A turn takes its hold as it is
-- admitted (reach_hold) and lets go once it is charged (reach_unhold); a
-- turn whose instance died leaves its rows, which count for nothing once
-- that life's heartbeat is older than instance_ttl, and which the next
-- hold on the same request deletes.
CREATE TABLE holds (
	request TEXT NOT NULL,
	turn    TEXT NOT NULL,
	owner   TEXT NOT NULL,
	tokens  BIGINT NOT NULL,
	cost    BIGINT NOT NULL,
	PRIMARY KEY (request, turn)
);
CREATE INDEX holds_turn ON holds (turn);

-- Holds d (tokens and cost) for the turn p_turn of p_owner on the requests
-- p_ids (the turn's first, its ancestors after it), under their ledgers'
-- locks, and debits from each what the turn spends at once (its prompt,
-- s): taken if, for each request with a cap (zero: none), what it spent,
-- what the live turns of every instance hold on it and d stay within it;
-- or, when no live turn holds anything on it, if what it spent and need
-- do. Otherwise nothing is held or debited, and o_over (1-based) and o_dim
-- name the request and dimension that refused it. Either way o_spent and
-- o_held are, per request, what it spent and what the live turns hold.
CREATE FUNCTION reach_hold(p_turn TEXT, p_owner TEXT, p_ttl BIGINT, p_ids TEXT[],
	d_tokens BIGINT, d_cost BIGINT, n_tokens BIGINT, n_cost BIGINT, s_tokens BIGINT, s_cost BIGINT,
	c_tokens BIGINT[], c_cost BIGINT[],
	OUT o_ok BOOLEAN, OUT o_over INTEGER, OUT o_dim TEXT,
	OUT o_spent_tokens BIGINT[], OUT o_spent_cost BIGINT[], OUT o_held_tokens BIGINT[], OUT o_held_cost BIGINT[])
LANGUAGE plpgsql AS $$
DECLARE
	l ledger%ROWTYPE;
	ht BIGINT;
	hc BIGINT;
BEGIN
	PERFORM reach_lock_ledgers(p_ids);
	DELETE FROM holds h WHERE h.request = ANY(p_ids) AND NOT EXISTS
		(SELECT 1 FROM instances i WHERE i.owner = h.owner AND i.seen >= reach_now() - p_ttl);
	o_ok := true; o_over := 0; o_dim := '';
	o_spent_tokens := '{}'; o_spent_cost := '{}'; o_held_tokens := '{}'; o_held_cost := '{}';
	FOR i IN 1 .. array_length(p_ids, 1) LOOP
		SELECT * INTO l FROM ledger WHERE request = p_ids[i];
		SELECT coalesce(sum(h.tokens), 0), coalesce(sum(h.cost), 0) INTO ht, hc FROM holds h WHERE h.request = p_ids[i];
		o_spent_tokens := o_spent_tokens || l.tokens; o_spent_cost := o_spent_cost || l.cost;
		o_held_tokens := o_held_tokens || ht; o_held_cost := o_held_cost || hc;
		IF o_ok AND c_tokens[i] > 0 AND l.tokens + ht + d_tokens > c_tokens[i]
			AND NOT (ht = 0 AND l.tokens + n_tokens <= c_tokens[i]) THEN
			o_ok := false; o_over := i; o_dim := 'tokens';
		ELSIF o_ok AND c_cost[i] > 0 AND l.cost + hc + d_cost > c_cost[i]
			AND NOT (hc = 0 AND l.cost + n_cost <= c_cost[i]) THEN
			o_ok := false; o_over := i; o_dim := 'cost';
		END IF;
	END LOOP;
	IF NOT o_ok THEN
		RETURN;
	END IF;
	INSERT INTO holds (request, turn, owner, tokens, cost)
		SELECT x, p_turn, p_owner, greatest(d_tokens - s_tokens, 0), greatest(d_cost - s_cost, 0) FROM unnest(p_ids) AS x
		ON CONFLICT (request, turn) DO UPDATE SET tokens = holds.tokens + excluded.tokens, cost = holds.cost + excluded.cost;
	UPDATE ledger SET tokens = tokens + s_tokens, cost = cost + s_cost WHERE request = ANY(p_ids);
END $$;

-- Lets go of what the turn p_turn holds.
CREATE FUNCTION reach_unhold(p_turn TEXT) RETURNS VOID LANGUAGE sql AS $$
	DELETE FROM holds WHERE turn = p_turn
$$;
`})
}

// Hold is what HoldTurn decided.
type Hold struct {
	OK bool
	// Over is the index in ids of the request whose cap in dimension Dim
	// ("tokens" or "cost") refused the hold, when one did.
	Over int
	Dim  string
	// Spent and Held are, for each of ids, what it spent and what the live
	// turns of every instance hold on it (Tokens and CostNano), as the
	// hold was decided (before this one).
	Spent, Held []store.Spend
}

// HoldTurn holds d (tokens and cost) on the requests ids (a model turn's
// request first, its ancestors after it), for the turn named turn of the
// life owner, and debits s (what it spends at once: its prompt) from each:
// under the locks of their ledgers, it is taken if, for each of them, what
// it spent, what the live turns of every instance hold on it (a life whose
// heartbeat is older than ttl holds nothing) and d stay within caps[i]
// (zero: no cap), or, when nothing is held on it, what it spent and need
// do. Otherwise nothing is held or debited. A hold is let go by Unhold.
func (p *Store) HoldTurn(ctx context.Context, turn, owner string, ttl time.Duration, ids []string, d, need, s store.Spend, caps []store.Spend) (Hold, error) {
	if p.Closed() {
		return Hold{}, store.ErrClosed
	}
	if len(ids) == 0 || len(caps) != len(ids) {
		return Hold{}, errors.New("holding a model turn's cap: one cap per request is needed")
	}
	ck, cx := make([]int64, len(ids)), make([]int64, len(ids))
	for i, c := range caps {
		ck[i], cx[i] = c.Tokens, c.CostNano
	}
	var h Hold
	var st, sc, ht, hc []int64
	err := p.pool.QueryRow(ctx, `SELECT o_ok, o_over, o_dim, o_spent_tokens, o_spent_cost, o_held_tokens, o_held_cost
	FROM reach_hold($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		turn, owner, int64(ttl), ids, d.Tokens, d.CostNano, need.Tokens, need.CostNano, s.Tokens, s.CostNano, ck, cx).
		Scan(&h.OK, &h.Over, &h.Dim, &st, &sc, &ht, &hc)
	if err != nil {
		return Hold{}, fmt.Errorf("holding a model turn's cap on request %s: %w", ids[0], err)
	}
	if h.Over > 0 {
		h.Over-- // 1-based in SQL
	}
	h.Spent, h.Held = make([]store.Spend, len(ids)), make([]store.Spend, len(ids))
	for i := range ids {
		if i < len(st) && i < len(sc) && i < len(ht) && i < len(hc) {
			h.Spent[i] = store.Spend{Tokens: st[i], CostNano: sc[i]}
			h.Held[i] = store.Spend{Tokens: ht[i], CostNano: hc[i]}
		}
	}
	return h, nil
}

// Unhold lets go of what the model turn named turn holds (HoldTurn), and,
// as it commits, signals every instance (Watch: Signal "unhold", once per
// request the turn held on) so that their turns waiting for room ask again.
func (p *Store) Unhold(ctx context.Context, turn string) error {
	if p.Closed() {
		return store.ErrClosed
	}
	if _, err := p.pool.Exec(ctx, `SELECT reach_unhold($1)`, turn); err != nil {
		return fmt.Errorf("letting go of model turn %s's hold: %w", turn, err)
	}
	return nil
}

// Holds returns what the live and dead turns hold on request id, as
// stored: tokens and cost, and how many turns.
func (p *Store) Holds(ctx context.Context, id string) (held store.Spend, turns int, err error) {
	if p.Closed() {
		return store.Spend{}, 0, store.ErrClosed
	}
	err = p.pool.QueryRow(ctx, `SELECT coalesce(sum(tokens), 0), coalesce(sum(cost), 0), count(*) FROM holds WHERE request = $1`, id).
		Scan(&held.Tokens, &held.CostNano, &turns)
	if err != nil {
		return store.Spend{}, 0, fmt.Errorf("reading the holds on request %s: %w", id, err)
	}
	return held, turns, nil
}
