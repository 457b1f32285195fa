package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

func init() {
	pgMigrations = append(pgMigrations, migration{21, "an operator's stop of an ended request changes nothing", `
-- An operator's stop (the API, the UI, reach requests stop) of a request
-- that ended (its last part left it with no stop) or that its client ended
-- (settled: every part ends, nothing is undone) is refused: the request is
-- over, and a stop stored now would show it stopped and have a recovery
-- undo its writes. o_ended says so; o_changed is reach_stop's answer
-- otherwise. (reach_stop itself still stores the stop a stopped request
-- cascades onto its ended sub-requests: a stop undoes the chain below it.)
CREATE FUNCTION reach_stop_open(p_id TEXT, p_mode INTEGER, p_cause TEXT, p_updated BIGINT,
	OUT o_changed BOOLEAN, OUT o_ended BOOLEAN) LANGUAGE plpgsql AS $$
BEGIN
	PERFORM reach_lock_ledgers(ARRAY[p_id]);
	o_changed := false;
	SELECT state = 'ended' OR stop = 0 AND settled <> 0 AND settled = started INTO o_ended
	FROM requests WHERE id = p_id FOR UPDATE;
	IF o_ended IS NULL OR o_ended THEN
		o_ended := coalesce(o_ended, false);
		RETURN;
	END IF;
	o_changed := reach_stop(p_id, p_mode, p_cause, p_updated);
END $$;
`})
}

// StopOpenRequest stores request id stopped as StopRequest does, unless it
// ended (its last part left it with no stop) or its client ended it: then
// it stores nothing and reports ended (an operator's stop of a request
// that is over must not undo its writes).
func (p *Store) StopOpenRequest(ctx context.Context, id string, mode int, cause []byte) (changed, ended bool, err error) {
	if p.Closed() {
		return false, false, store.ErrClosed
	}
	if err := p.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		return false, false, fmt.Errorf("stopping request %s: %w", id, err)
	}
	if err := p.pool.QueryRow(ctx, `SELECT o_changed, o_ended FROM reach_stop_open($1, $2, $3, $4)`, id, mode, dialect.Text(cause), time.Now().UnixNano()).
		Scan(&changed, &ended); err != nil {
		return false, false, fmt.Errorf("stopping request %s: %w", id, err)
	}
	return changed, ended, nil
}
