package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/jackc/pgx/v5"
)

// A request whose stored roles cannot be read is not joined by another
// instance: its call would act with roles nobody knows. The refusal says
// so and the row is kept.
func TestJoinUnreadableRequest(t *testing.T) {
	ctx := context.Background()
	url, a, b := twoInstances(t, time.Minute)
	var recs [2]*Recorder
	for i, c := range []*Cluster{a, b} {
		recs[i] = c.Recorder(durable.New(c.st, nil, nil))
	}
	opts := func() *reach.RequestOptions {
		return &reach.RequestOptions{ID: "r1", Principal: "alice", Roles: []string{"buyer"}}
	}
	if _, err := recs[0].JoinRequest(ctx, opts()); err != nil {
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
	_, err = recs[1].JoinRequest(ctx, opts())
	var e *reach.Error
	if !errors.As(err, &e) || e.Code != "request_unreadable" {
		t.Fatalf("joining the unreadable request on b = %v, want request_unreadable", err)
	}
	var roles string
	if err := conn.QueryRow(ctx, `SELECT roles FROM requests WHERE id = 'r1'`).Scan(&roles); err != nil || roles != "[not" {
		t.Fatalf("the row's roles now %q, %v; want kept", roles, err)
	}
}
