package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// A database of schema 13 (reach_join as version 8 wrote it) holding a
// hand-off's sub-request that ended: once a gateway opens it, a call naming
// the sub-request as its own request (as a root, or under another parent)
// is refused, JoinHandoffEnded with its parent's id, and nothing is
// written; it used to be begun again as a root of its own, under any
// budget its caller named. An ended root request is begun again as before,
// and so is the sub-request under its own parent (a hand-off naming it).
func TestPostgresMigratesEndedHandoffNotBegunAgain(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+reachJoinHead+reachJoinForeign+reachJoinEnded+reachJoinOrphan+reachJoinRest+`;
		DELETE FROM schema_migrations WHERE version = 14`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).UnixNano()
	if _, err := s.pool.Exec(ctx, `INSERT INTO requests (id, parent, principal, tenant, state, budget, started, ended, updated) VALUES
		('hand-1', 'root-1', 'alice', 'acme', 'ended', '{"tool_calls":4}', $1, $1, $1),
		('root-1', '', 'alice', 'acme', 'ended', '{"tool_calls":6}', $1, $1, $1)`, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO ledger (request, tool_calls) VALUES ('hand-1', 4), ('root-1', 4)`); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	if err := s2.Heartbeat(ctx, "B/1", "b", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, parent := range []string{"", "other"} {
		r := joinReq("hand-1", "alice")
		r.Parent, r.Budget = parent, []byte(`{"tool_calls":1000}`)
		got, outcome, err := s2.JoinRequest(ctx, r, "B/1", time.Minute)
		if err != nil || outcome != JoinHandoffEnded || got.Parent != "root-1" {
			t.Fatalf("naming the ended hand-off hand-1 under parent %q = %v, %+v, %v; want handoff_ended, parent root-1", parent, outcome, got, err)
		}
	}
	if got, err := s2.GetRequest(ctx, "hand-1"); err != nil || got.State != "ended" || got.Parent != "root-1" || string(got.Budget) != `{"tool_calls":4}` {
		t.Errorf("hand-1 after it was named = %+v, %v; want it as it ended (nothing written)", got, err)
	}
	if sp, _ := s2.Spent(ctx, "hand-1"); sp.ToolCalls != 4 {
		t.Errorf("hand-1 has spent %+v after it was named; want its 4 tool calls", sp)
	}
	if _, outcome, err := s2.JoinRequest(ctx, joinReq("root-1", "alice"), "B/1", time.Minute); err != nil || outcome != JoinBegun {
		t.Errorf("naming the ended root request root-1 = %v, %v; want begun again", outcome, err)
	}
	r := joinReq("hand-1", "alice")
	r.Parent = "root-1"
	if _, outcome, err := s2.JoinRequest(ctx, r, "B/1", time.Minute); err != nil || outcome != JoinBegun {
		t.Errorf("a hand-off of root-1 naming hand-1 = %v, %v; want begun again under its parent", outcome, err)
	}
}
