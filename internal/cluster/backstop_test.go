package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

// stopFleet is two instances on one store: a, which issues stops and does
// not listen, and b, which runs a call that waits until it is cancelled.
// b reaches the database through a proxy, so that a test can cut its
// listening connection without a word.
type stopFleet struct {
	a, b    *Cluster
	rtB     *reach.Runtime
	proxy   *pgtest.Proxy
	admin   *pgx.Conn // the test's own connection, straight to the server
	running chan string
	heardB  chan string // the approvals b was woken for
}

func newStopFleet(t *testing.T) *stopFleet {
	t.Helper()
	ctx := context.Background()
	url := pgtest.Database(t)
	f := &stopFleet{proxy: pgtest.NewProxy(t, pgtest.Shared(t).Addr()), running: make(chan string, 4), heardB: make(chan string, 64)}
	open := func(name, url string) (*postgres.Store, *Cluster) {
		// A short ConnectTimeout: b finds a listening connection dead
		// sooner (quiet that long, then a ping unanswered that long).
		st, err := postgres.Open(ctx, url, &postgres.Options{ConnectTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return st, c
	}
	_, f.a = open("a", url)
	stB, b := open("b", f.proxy.Via(url))
	f.b = b
	f.rtB = reach.New(&reach.Options{Requests: b.Recorder(durable.New(stB, nil, nil)), Middleware: []reach.Middleware{b.Admission()},
		DisableLoopGuard: true})
	f.rtB.MustRegister(reach.Tool{Name: "slow__wait", Access: reach.Read,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			f.running <- string(args)
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(2 * time.Minute):
				return json.RawMessage(`{"waited":"to the end"}`), nil
			}
		}})
	heard := func(id string) {
		select {
		case f.heardB <- id:
		default:
		}
	}
	if err := b.Start(f.rtB, heard, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	f.admin = conn
	return f
}

// listener returns the backend pid and client port of b's listening
// connection, waiting for it to be made (again, when not is not 0: one of
// another pid than not).
func (f *stopFleet) listener(t *testing.T, not int) (pid, port int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rows, err := f.admin.Query(context.Background(), `SELECT pid, client_port FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND pid <> $2`, postgres.ListenerName, not)
		if err != nil {
			t.Fatal(err)
		}
		var got [][2]int
		for rows.Next() {
			var p, c int
			if err := rows.Scan(&p, &c); err != nil {
				t.Fatal(err)
			}
			got = append(got, [2]int{p, c})
		}
		rows.Close()
		if len(got) > 1 {
			t.Fatalf("%d listening connections; want b's only (a does not listen)", len(got))
		}
		if len(got) == 1 {
			return got[0][0], got[0][1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's listening connection (not pid %d) was never made", not)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hears reports whether b's listener handles a wake-up sent now, waiting
// up to wait for it. A listener just connected may not listen yet: the
// wake-up is sent again until it is heard.
func (f *stopFleet) hears(t *testing.T, id string, wait time.Duration) bool {
	t.Helper()
	deadline := time.After(wait)
	for {
		if _, err := f.admin.Exec(context.Background(), `SELECT pg_notify('reach', $1)`, "approval:"+id); err != nil {
			t.Fatal(err)
		}
		again := time.After(100 * time.Millisecond)
	wait:
		for {
			select {
			case got := <-f.heardB:
				if got == id {
					return true
				}
			case <-again:
				break wait
			case <-deadline:
				return false
			}
		}
	}
}

// runOnB begins request id on b and runs a call of it there, which waits
// until it is cancelled; it returns once the call runs, and the channel
// that gets its result.
func (f *stopFleet) runOnB(t *testing.T, id string) (*reach.Request, <-chan *reach.Result) {
	t.Helper()
	ctx, req, err := f.rtB.Begin(context.Background(), &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Result, 1)
	go func() {
		done <- f.rtB.Call(ctx, &reach.Call{ID: id + "-call", Tool: "slow__wait", Arguments: json.RawMessage(fmt.Sprintf(`{"r":%q}`, id))})
	}()
	select {
	case <-f.running:
	case res := <-done:
		t.Fatalf("the call of %s ended before it ran: %+v", id, res.Error)
	case <-time.After(60 * time.Second):
		t.Fatalf("the call of %s never ran", id)
	}
	return req, done
}

// stopThroughA stops request id through a, and checks that the call
// running on b is cancelled, and the request stopped there, with a's
// cause. The deadline is generous: the test waits for the outcome, not
// for a time.
func (f *stopFleet) stopThroughA(t *testing.T, id string, req *reach.Request, done <-chan *reach.Result) {
	t.Helper()
	found, _, err := f.a.Stop(context.Background(), id, reach.Cancel, "operator", "runaway", nil)
	if err != nil || !found {
		t.Fatalf("Stop(%s) through a = %v, %v", id, found, err)
	}
	select {
	case res := <-done:
		if !res.IsError() || res.Error.Type != reach.TypeStopped {
			t.Fatalf("the call of %s on b ended %+v; want it cancelled by the stop", id, res.Error)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the call of %s still runs on b after a stopped the request", id)
	}
	cs := req.StopCause()
	if cs == nil || cs.Mode != reach.Cancel || cs.Reason != "runaway" {
		t.Fatalf("%s on b stopped with %+v; want a's cancel, reason runaway", id, cs)
	}
	var se *reach.StopError
	if !errors.As(context.Cause(req.Context()), &se) {
		t.Fatalf("%s's context on b ends with %v; want a stop", id, context.Cause(req.Context()))
	}
}

// A stop's notification is never sent (suppressed in the schema's
// reach_stop, as a lost one is never received), while b's listener is
// healthy and never connects again: the stop issued on a still stops the
// call running on b (the backstop, Marks). Without it, b saw the stop
// only at the request's next admission, or a reconnect.
func TestStopSeenWithoutItsNotification(t *testing.T) {
	f := newStopFleet(t)
	ctx := context.Background()
	pid, _ := f.listener(t, 0)
	var def string
	if err := f.admin.QueryRow(ctx, `SELECT pg_get_functiondef('reach_stop'::regproc)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	const notify = "PERFORM pg_notify('reach', 'stop:' || p_id);"
	if !strings.Contains(def, notify) {
		t.Fatalf("reach_stop does not notify as the test expects:\n%s", def)
	}
	if _, err := f.admin.Exec(ctx, strings.Replace(def, notify, "", 1)); err != nil {
		t.Fatal(err)
	}
	req, done := f.runOnB(t, "r-quiet")
	f.stopThroughA(t, "r-quiet", req, done)
	// The listener was meant to be the same all along (a ping lost on a
	// loaded machine may have made it again, and its catch-up seen the
	// stop), and hears the others.
	if again, _ := f.listener(t, 0); again != pid {
		t.Logf("b's listener connected again (pid %d, was %d)", again, pid)
	}
	if !f.hears(t, "after", 60*time.Second) {
		t.Fatal("b's listener does not hear the others")
	}
}

// b's listening connection is killed (pg_terminate_backend) while a call
// runs on b; the stop issued on a meanwhile stops it.
func TestStopSeenAfterTheListenerIsKilled(t *testing.T) {
	f := newStopFleet(t)
	ctx := context.Background()
	req, done := f.runOnB(t, "r-killed")
	pid, _ := f.listener(t, 0)
	var ok bool
	if err := f.admin.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminating b's listener: %v %v", ok, err)
	}
	f.stopThroughA(t, "r-killed", req, done)
	f.listener(t, pid)
	if !f.hears(t, "after", 60*time.Second) {
		t.Fatal("b's listener does not hear the others after it was killed")
	}
}

// b's listening connection dies without a word (the proxy drops what it
// carries, both ways, and keeps it open): the stop issued on a still stops
// the call running on b, b finds its listener dead, listens again, and
// hears the others again. Without the check, b waited on the dead
// connection for ever, and heard no wake-up (approvals, ends, stops) again.
func TestDeadListenerFound(t *testing.T) {
	f := newStopFleet(t)
	req, done := f.runOnB(t, "r-cut")
	pid, port := f.listener(t, 0)
	if !f.proxy.Freeze(port) {
		t.Fatalf("b's listener (client port %d) does not go through the proxy", port)
	}
	if f.hears(t, "while-cut", 200*time.Millisecond) {
		t.Fatal("b heard a wake-up through a frozen connection: the test cuts nothing")
	}
	f.stopThroughA(t, "r-cut", req, done)
	f.listener(t, pid)
	if !f.hears(t, "after", 60*time.Second) {
		t.Fatal("b never listened again after its listening connection died without a word")
	}
}
