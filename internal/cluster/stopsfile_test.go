package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

// instanceOn starts instance name on the database at url, with its stops
// file at stops (none if ""), and a runtime whose tool slow__wait runs
// until cancelled (running gets its arguments). Its store is closed by
// the test's end unless the test closed it first.
func instanceOn(t *testing.T, url, name, stops string, running chan string) (*Cluster, *reach.Runtime, *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := New(ctx, &Options{Store: st, Instance: name, TTL: time.Second, StopsFile: stops})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
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
	return c, rt, st
}

// A stop applied to a's part of a request while the store refuses it
// (here its reach_stop raises an error), and a dead before the store
// takes it (its connections gone, its loops ended, its life left in the
// store as a kill leaves it): the stop was kept in a's data folder, and
// a's next life stores it as it starts, so the call running on b is
// cancelled with a's cause, the request is stored stopped, and the file
// is gone. Before, the stop was kept in memory only and died with a: the
// call on b ran on to its end.
func TestStopNotStoredSurvivesItsInstance(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	stops := filepath.Join(t.TempDir(), "stops-kept-a.jsonl")
	running := make(chan string, 4)
	a, rtA, stA := instanceOn(t, url, "a", stops, running)
	_, rtB, stB := instanceOn(t, url, "b", "", running)
	const id = "r-filed"
	bctx, reqB, err := rtB.Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Result, 1)
	go func() {
		done <- rtB.Call(bctx, &reach.Call{ID: "wait", Tool: "slow__wait", Arguments: json.RawMessage(`{}`)})
	}()
	select {
	case <-running:
	case res := <-done:
		t.Fatalf("the call on b ended before it ran: %+v", res.Error)
	case <-time.After(time.Minute):
		t.Fatal("the call on b never ran")
	}
	_, reqA, err := rtA.Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	restore := refuse(t, admin, "reach_stop(text,integer,text,bigint)")
	reqA.Stop(reach.Cancel, "operator", "enough")
	if cs := reqA.StopCause(); cs == nil {
		t.Fatal("a's part is not stopped")
	}
	if b, err := os.ReadFile(stops); err != nil || !strings.Contains(string(b), `"request":"r-filed"`) {
		t.Fatalf("the stop the store refused is not kept in a's data folder: %q (%v)", b, err)
	}
	// a dies with its stop not stored: nothing of its life talks to the
	// store again.
	stA.Close()
	a.Close()
	restore()

	// a's next life, over the same data folder.
	instanceOn(t, url, "a", stops, running)
	select {
	case res := <-done:
		if !res.IsError() || res.Error.Type != reach.TypeStopped {
			t.Fatalf("the call on b ended %+v; want it cancelled by a's stop", res.Error)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call on b still runs a minute after a's next start: the stop a kept when the store refused it died with a")
	}
	if cs := reqB.StopCause(); cs == nil || cs.Reason != "enough" {
		t.Fatalf("b's part stopped with %+v; want a's cause", cs)
	}
	rec, err := stB.GetRequest(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := durable.DecodeCause(rec.Cause); rec.State != "stopped" || c.Reason != "enough" {
		t.Errorf("the request is stored %s (%+v); want it stopped with a's cause", rec.State, c)
	}
	if _, err := os.Stat(stops); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stops file is still there once its stop is stored: %v", err)
	}
	reqB.End()
}

// A stop an earlier life left in the file whose request ended since (its
// last part left it with no stop) is dropped: the request stays ended,
// nothing of it undone, and the file goes.
func TestFiledStopOfAnEndedRequestDropped(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	running := make(chan string, 4)
	_, rtB, stB := instanceOn(t, url, "b", "", running)
	const id = "r-ended"
	_, reqB, err := rtB.Begin(ctx, &reach.RequestOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	reqB.End()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		rec, err := stB.GetRequest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == "ended" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s is stored %s a minute after its one part ended; want ended", id, rec.State)
		}
	}
	stops := filepath.Join(t.TempDir(), "stops-kept-a.jsonl")
	line, _ := json.Marshal(filedStop{Request: id, Mode: int(reach.Cancel), Cause: durable.EncodeCause(reach.Cause{By: "operator", Reason: "late", Mode: reach.Cancel})})
	if err := os.WriteFile(stops, append(append(line, '\n'), `{"request":"cut sh`...), 0o600); err != nil {
		t.Fatal(err)
	}
	instanceOn(t, url, "a", stops, running)
	rec, err := stB.GetRequest(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != "ended" {
		t.Errorf("the ended request is stored %s after a's start stored the stop it kept; want it ended still", rec.State)
	}
	if _, err := os.Stat(stops); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stops file is still there once read: %v", err)
	}
}
