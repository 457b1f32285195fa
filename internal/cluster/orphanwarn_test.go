package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

// TestUnreadableOrphanReportedOnce: a request whose stored roles cannot be
// read, left by an instance that died, is reported unreadable (one warning
// in the gateway's log) by the recovery that claims it, and not by the
// passes after it: the claim makes the recovering life its only instance,
// so no pass of that life claims it again; its row is kept as it is.
func TestUnreadableOrphanReportedOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	ttl := 500 * time.Millisecond
	var cs [2]*Cluster
	var sts [2]*postgres.Store
	for i, name := range []string{"a", "b"} {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		cs[i], sts[i] = c, st
		if name == "b" {
			t.Cleanup(func() { c.Close() })
		}
	}
	rec := cs[0].Recorder(durable.New(sts[0], nil, nil))
	if _, err := rec.JoinRequest(ctx, &reach.RequestOptions{ID: "r1", Principal: "alice", Roles: []string{"buyer"}}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE requests SET roles = '[not' WHERE id = 'r1'`); err != nil {
		t.Fatal(err)
	}
	// a stops heartbeating (it died); b goes on, and recovers on each pass.
	rt := reach.New(nil)
	for pass := range 3 {
		time.Sleep(ttl + 100*time.Millisecond)
		if err := cs[1].beat(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := durable.Recover(ctx, sts[1], rt, &durable.RecoverOptions{Shared: cs[1]})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if pass == 0 {
			want = 1
		}
		if len(rep.Unreadable) != want || want == 1 && rep.Unreadable[0].Key != "r1" {
			t.Errorf("pass %d reports unreadable %v; want r1 on the first pass only", pass, rep.Unreadable)
		}
	}
	var roles string
	if err := conn.QueryRow(ctx, `SELECT roles FROM requests WHERE id = 'r1'`).Scan(&roles); err != nil || roles != "[not" {
		t.Fatalf("the row's roles now %q, %v; want kept", roles, err)
	}
}
