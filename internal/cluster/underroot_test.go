package cluster

import (
	"context"
	"encoding/json"
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

// underFleet is instance a, which began root-p and its sub-request sub-c
// and then stands for a killed life (not started: it hears and reads
// nothing, and stops nothing), and instance b, which joined sub-c (a
// sub-agent's call through it, as a restarted life of a does within the
// TTL of the kill) and runs a call of it that waits until it is cancelled.
type underFleet struct {
	a, b     *Cluster
	rtA, rtB *reach.Runtime
	admin    *pgx.Conn
	subA     context.Context // sub-c on a
	subB     context.Context // sub-c's part on b
	reqB     *reach.Request
	waited   chan *reach.Result // the waiting call's result
}

func newUnderFleet(t *testing.T) *underFleet {
	t.Helper()
	ctx := context.Background()
	url := pgtest.Database(t)
	f := &underFleet{waited: make(chan *reach.Result, 1)}
	running := make(chan struct{}, 1)
	var rts [2]*reach.Runtime
	var cs [2]*Cluster
	for i, name := range []string{"a", "b"} {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: time.Minute, Backstop: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		rt := reach.New(&reach.Options{Requests: c.Recorder(durable.New(st, nil, nil)), Middleware: []reach.Middleware{c.Admission()},
			DisableLoopGuard: true})
		rt.MustRegister(reach.Tool{Name: "kb__search", Access: reach.Read,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
		rt.MustRegister(reach.Tool{Name: "slow__wait", Access: reach.Read,
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				running <- struct{}{}
				select {
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case <-time.After(2 * time.Minute):
					return json.RawMessage(`{"waited":"to the end"}`), nil
				}
			}})
		// a is not started: it neither listens nor reads the stops of
		// what it runs, as a dead life does not, and so does not carry a
		// stop of root-p down to sub-c (RequestStopped) for b to hear.
		if name == "b" {
			if err := c.Start(rt, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		rts[i], cs[i] = rt, c
	}
	f.a, f.b, f.rtA, f.rtB = cs[0], cs[1], rts[0], rts[1]
	pctx, _, err := f.rtA.Begin(ctx, &reach.RequestOptions{ID: "root-p", Principal: "alice", Budget: &reach.Budget{ToolCalls: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if f.subA, _, err = f.rtA.Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t", ID: "sub-c"}); err != nil {
		t.Fatal(err)
	}
	f.subB, f.reqB, err = f.rtB.Begin(ctx, &reach.RequestOptions{ID: "sub-c", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := f.rtB.Call(f.subB, &reach.Call{ID: "one", Tool: "kb__search", Arguments: json.RawMessage(`{"q":"one"}`)}); res.IsError() {
		t.Fatalf("sub-c's first call on b: %+v", res.Error)
	}
	go func() {
		f.waited <- f.rtB.Call(f.subB, &reach.Call{ID: "wait", Tool: "slow__wait", Arguments: json.RawMessage(`{}`)})
	}()
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		t.Fatal("sub-c's waiting call never ran on b")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	f.admin = conn
	return f
}

// check waits for the call waiting in sub-c on b to be cancelled, then
// checks that sub-c, on b and on a (whose admission reads root-p's state
// in the store), starts no new work: a call of it is refused (interrupted
// or stopped) naming root-p.
func (f *underFleet) check(t *testing.T, want string) {
	t.Helper()
	select {
	case res := <-f.waited:
		if !res.IsError() || res.Error.Type != reach.TypeStopped && res.Error.Type != reach.TypeInterrupted {
			t.Fatalf("sub-c's waiting call on b, its root %s: %+v; want it cancelled", want, res)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("sub-c's waiting call on b still runs 30 s after its root was %s", want)
	}
	if cs := f.reqB.StopCause(); cs == nil || cs.Request != "root-p" {
		t.Errorf("sub-c on b: stop cause %+v; want one naming root-p", cs)
	}
	for i, c := range []struct {
		rt  *reach.Runtime
		ctx context.Context
	}{{f.rtB, f.subB}, {f.rtA, f.subA}} {
		res := c.rt.Call(c.ctx, &reach.Call{ID: fmt.Sprint("late", i), Tool: "kb__search", Arguments: json.RawMessage(fmt.Sprintf(`{"q":"late %d"}`, i))})
		if !res.IsError() || res.Error.Type != reach.TypeStopped && res.Error.Type != reach.TypeInterrupted ||
			!strings.Contains(res.Error.Message, "root-p") {
			t.Errorf("a call of sub-c on %s after root-p was %s: %+v; want it refused, naming root-p", []string{"b", "a"}[i], want, res)
		}
	}
}

// Root-p is interrupted by a recovery (a's life dead) while b, which
// joined sub-c, runs a call of it: b stops its part of sub-c (its backstop
// reads the requests above the sub-requests it joined), the call is
// cancelled, and no new call of sub-c starts on either instance. Before,
// b refused the next call at its admission but let the running one go on,
// and kept sub-c running until its idle gap.
func TestSubRequestUnderAnInterruptedRoot(t *testing.T) {
	f := newUnderFleet(t)
	if _, err := f.admin.Exec(context.Background(), `UPDATE requests SET state = 'interrupted',
		cause = '{"by":"recovery","reason":"its instances died"}' WHERE id = 'root-p'`); err != nil {
		t.Fatal(err)
	}
	f.check(t, "interrupted")
}

// Root-p is stopped through b while a, which ran it, is dead: b, which
// holds no part of root-p, is woken for it and stops its part of sub-c.
// Before, the stop reached sub-c only through a's part of root-p.
func TestSubRequestUnderAStoppedRoot(t *testing.T) {
	f := newUnderFleet(t)
	if _, _, err := f.b.Stop(context.Background(), "root-p", reach.Cancel, "ops", "wrong trip", nil); err != nil {
		t.Fatal(err)
	}
	f.check(t, "stopped")
}
