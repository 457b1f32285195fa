package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
	"github.com/jackc/pgx/v5"
)

// refusingTTL is the fleet's TTL: a join is bounded by one (three round
// trips to the store: the join, what the request's earlier runs spent, the
// requests above it), and a life is taken for dead after one without a
// heartbeat. A second was too short on a loaded machine: b's join of a's
// request was refused store_unavailable, the store up, as the product
// refuses a join the store did not answer within a TTL, and what the
// tests wait for comes at the next heartbeat (TTL/5) all the same.
const refusingTTL = 10 * time.Second

// refusingFleet is two instances, a and b, each with a runtime whose
// tool slow__wait runs until cancelled (running gets its arguments), and
// the test's own connection to their database, to make the store refuse
// what a test wants.
func refusingFleet(t *testing.T) (a, b *Cluster, rts map[*Cluster]*reach.Runtime, running chan string, admin *pgx.Conn) {
	t.Helper()
	url, a, b := twoInstances(t, refusingTTL)
	ctx := context.Background()
	running = make(chan string, 4)
	rts = map[*Cluster]*reach.Runtime{}
	for _, c := range []*Cluster{a, b} {
		rt := reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), Middleware: []reach.Middleware{c.Admission()},
			DisableLoopGuard: true})
		rt.MustRegister(reach.Tool{Name: "slow__wait", Access: reach.Read,
			Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				running <- string(args)
				select {
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case <-time.After(2 * time.Minute):
					return json.RawMessage(`{"waited":"to the end"}`), nil
				}
			}})
		if err := c.Start(rt, nil, nil); err != nil {
			t.Fatal(err)
		}
		rts[c] = rt
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return a, b, rts, running, admin
}

// refuse makes the store's function fn raise an error until the function
// returned is called.
func refuse(t *testing.T, admin *pgx.Conn, fn string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	var def string
	if err := admin.QueryRow(ctx, `SELECT pg_get_functiondef($1::regprocedure)`, fn).Scan(&def); err != nil {
		t.Fatal(err)
	}
	const body = "BEGIN\n"
	if !strings.Contains(def, body) {
		t.Fatalf("%s is not as the test expects:\n%s", fn, def)
	}
	if _, err := admin.Exec(ctx, strings.Replace(def, body, "BEGIN\n\tRAISE EXCEPTION 'the store is down';\n", 1)); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := admin.Exec(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
}

// A stop applied to a's part of a request while the store refuses it (it
// was down, the connection cut: here its reach_stop raises an error) is
// kept and stored once the store takes it again, and a's part, ended
// meanwhile, does not leave the request before: the call running on b is
// cancelled by the stop, and the request, once b's part ends, is stored
// stopped, with a's cause. Before, the stop was dropped once the store
// refused it: the call on b ran on to its end, and the request was
// stored ended, as if never stopped, though a's stop had been answered
// and its undos run.
func TestStopNotStoredIsStoredLater(t *testing.T) {
	a, b, rts, running, admin := refusingFleet(t)
	ctx := context.Background()
	const id = "r-unstored"
	bctx, reqB, err := rts[b].Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Result, 1)
	go func() {
		done <- rts[b].Call(bctx, &reach.Call{ID: "wait", Tool: "slow__wait", Arguments: json.RawMessage(`{}`)})
	}()
	select {
	case <-running:
	case res := <-done:
		t.Fatalf("the call on b ended before it ran: %+v", res.Error)
	case <-time.After(time.Minute):
		t.Fatal("the call on b never ran")
	}
	_, reqA, err := rts[a].Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}

	restore := refuse(t, admin, "reach_stop(text,integer,text,bigint)")
	reqA.Stop(reach.Cancel, "operator", "enough")
	if cs := reqA.StopCause(); cs == nil {
		t.Fatal("a's part is not stopped")
	}
	reqA.End() // a's part ends while its stop is not stored
	restore()

	select {
	case res := <-done:
		if !res.IsError() || res.Error.Type != reach.TypeStopped {
			t.Fatalf("the call on b ended %+v; want it cancelled by a's stop", res.Error)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the call on b still runs: a's stop, refused by the store, was never stored")
	}
	if cs := reqB.StopCause(); cs == nil || cs.Reason != "enough" {
		t.Fatalf("b's part stopped with %+v; want a's cause", cs)
	}
	reqB.End()
	rec := awaitStoredEnd(t, a, id)
	if c := durable.DecodeCause(rec.Cause); rec.State != "stopped" || c.Reason != "enough" {
		t.Fatalf("the request is stored %s (%+v) once both parts ended; want it stopped, with a's cause", rec.State, c)
	}
}

// awaitStoredEnd waits until request id is stored ended, and returns it.
func awaitStoredEnd(t *testing.T, c *Cluster, id string) *store.Request {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rec, err := c.st.GetRequest(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Ended.IsZero() {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s is stored %s, not ended, a minute after its parts ended", id, rec.State)
		}
	}
}

// A part's leave that the store refuses (it was down, the connection
// cut: here its reach_leave raises an error) is made again once the store
// takes it: the request, whose other part leaves after, is stored ended.
// Before, the part whose leave failed stayed in the store for the life of
// its instance, and the request was never ended: running for ever.
func TestLeaveNotStoredIsLeftLater(t *testing.T) {
	a, b, rts, _, admin := refusingFleet(t)
	ctx := context.Background()
	const id = "r-unleft"
	_, reqA, err := rts[a].Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	_, reqB, err := rts[b].Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	restore := refuse(t, admin, "reach_leave(text,text,bigint,text,text,text,bigint,integer)")
	reqA.End() // a's leave refused
	restore()
	reqB.End()
	if rec := awaitStoredEnd(t, a, id); rec.State != "ended" {
		t.Fatalf("the request is stored %s once both parts ended; want it ended", rec.State)
	}
}
