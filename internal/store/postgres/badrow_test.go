package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// A request whose stored roles do not decode is listed and read, marked
// Unreadable with no roles, rather than failing the whole list (which
// refused a restart); a join of it from another instance says so (the
// cluster refuses the call), and the row is not written.
func TestPostgresUnreadableRequest(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, s := range []struct {
		p     *Store
		owner string
	}{{a, "A/1"}, {b, "B/1"}} {
		if err := s.p.Heartbeat(ctx, s.owner, s.owner[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, outcome, err := a.JoinRequest(ctx, joinReq("r1", "alice"), "A/1", ttl); err != nil || outcome != JoinBegun {
		t.Fatalf("JoinRequest on A = %v, %v", outcome, err)
	}
	if err := a.PutRequest(ctx, &store.Request{ID: "r2", Principal: "bob", State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE requests SET roles = '[not' WHERE id = 'r1'`); err != nil {
		t.Fatal(err)
	}
	rs, err := a.ListRequests(ctx, store.RequestFilter{State: "running"})
	if err != nil || len(rs) != 2 {
		t.Fatalf("ListRequests = %d, %v; want both", len(rs), err)
	}
	for _, r := range rs {
		if (r.Unreadable != "") != (r.ID == "r1") || r.Roles != nil {
			t.Errorf("%s: Unreadable %q, roles %v", r.ID, r.Unreadable, r.Roles)
		}
	}
	got, outcome, err := b.JoinRequest(ctx, joinReq("r1", "alice"), "B/1", ttl)
	if err != nil || outcome != JoinJoined || got.Unreadable == "" || got.Roles != nil {
		t.Fatalf("JoinRequest on B = %+v, %v, %v; want joined, marked unreadable", got, outcome, err)
	}
	var roles string
	if err := a.pool.QueryRow(ctx, `SELECT roles FROM requests WHERE id = 'r1'`).Scan(&roles); err != nil || roles != "[not" {
		t.Fatalf("the row's roles now %q, %v; want kept", roles, err)
	}
}
