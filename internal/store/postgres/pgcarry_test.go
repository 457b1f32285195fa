package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// A database of schema 28 (reach_join as version 14 wrote it), opened by
// a gateway of schema 28: an ended root request named again by its owner
// is begun again with its ledger kept (its earlier runs' tool calls, turns,
// tokens and cost count against its budget); a hand-off's sub-request
// begun again under its parent, and a request of an id whose row is gone
// (a ledger left behind), start over. Before, every request begun again
// started with an empty ledger: naming an ended id gave it a new budget on
// every instance.
func TestPostgresMigratesNamedAgainKeepsLedger(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+reachJoinHead+reachJoinForeign+reachJoinEnded+reachJoinOrphan+reachJoinHandoff+reachJoinRest+`;
		DELETE FROM schema_migrations WHERE version = 28`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).UnixNano()
	if _, err := s.pool.Exec(ctx, `INSERT INTO requests (id, parent, principal, tenant, state, budget, started, ended, updated) VALUES
		('hand-1', 'root-1', 'alice', 'acme', 'ended', '{"tool_calls":4}', $1, $1, $1),
		('root-1', '', 'alice', 'acme', 'ended', '{"tool_calls":6}', $1, $1, $1)`, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO ledger (request, turns, tool_calls, tokens, cost) VALUES
		('hand-1', 0, 3, 0, 0), ('root-1', 2, 5, 700, 9000), ('gone-1', 1, 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	if err := s2.Heartbeat(ctx, "B/1", "b", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, outcome, err := s2.JoinRequest(ctx, joinReq("root-1", "alice"), "B/1", time.Minute); err != nil || outcome != JoinBegun {
		t.Fatalf("naming the ended root request root-1 = %v, %v; want begun again", outcome, err)
	}
	if sp, err := s2.Spent(ctx, "root-1"); err != nil || sp != (store.Spend{Turns: 2, ToolCalls: 5, Tokens: 700, CostNano: 9000}) {
		t.Errorf("root-1 begun again has spent %+v, %v; want what its earlier run spent", sp, err)
	}
	// Its one tool call left is all it gets, on any instance.
	if _, ok, _ := s2.Debit(ctx, "root-1", store.Spend{ToolCalls: 1}, store.Spend{ToolCalls: 6}); !ok {
		t.Error("the sixth tool call of 6 refused")
	}
	if _, ok, _ := s.Debit(ctx, "root-1", store.Spend{ToolCalls: 1}, store.Spend{ToolCalls: 6}); ok {
		t.Error("a seventh tool call of 6 admitted through the other store")
	}
	r := joinReq("hand-1", "alice")
	r.Parent = "root-1"
	if _, outcome, err := s2.JoinRequest(ctx, r, "B/1", time.Minute); err != nil || outcome != JoinBegun {
		t.Fatalf("a hand-off of root-1 naming hand-1 = %v, %v; want begun again under its parent", outcome, err)
	}
	if sp, _ := s2.Spent(ctx, "hand-1"); sp != (store.Spend{}) {
		t.Errorf("the hand-off begun again has spent %+v; want nothing (carved anew from its parent's)", sp)
	}
	if _, outcome, err := s2.JoinRequest(ctx, joinReq("gone-1", "alice"), "B/1", time.Minute); err != nil || outcome != JoinBegun {
		t.Fatalf("gone-1 = %v, %v; want begun", outcome, err)
	}
	if sp, _ := s2.Spent(ctx, "gone-1"); sp != (store.Spend{}) {
		t.Errorf("a request begun for the first time has spent %+v (a ledger left behind); want nothing", sp)
	}
}
