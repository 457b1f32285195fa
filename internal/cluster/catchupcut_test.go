package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestCatchUpCutStallsNoListener: the pool connection that carries the
// listener's catch-up read of the stops missed (Stops) dies without a
// word as it sends it (the network drops it and all after it, and keeps
// the connection open). The read is bounded by the TTL: the listener goes
// on and hears the others' wake-ups, and the catch-up is run again (the
// MCP sessions' Recheck called a second time). Without the bound, the
// listener waited on the dead connection, and heard nothing, until TCP
// gave up on it.
func TestCatchUpCutStallsNoListener(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	proxy := pgtest.NewProxy(t, pgtest.Shared(t).Addr())
	st, err := postgres.Open(ctx, proxy.Via(url), &postgres.Options{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := New(ctx, &Options{Store: st, Instance: "b", TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var rechecks atomic.Int32
	c.OnSessionEnd(&SessionEnds{Recheck: func(context.Context) { rechecks.Add(1) }})
	rt := reach.New(&reach.Options{Requests: c.Recorder(durable.New(st, nil, nil)), Middleware: []reach.Middleware{c.Admission()},
		DisableLoopGuard: true})
	heard := make(chan string, 64)
	cut := proxy.FreezeOn("FROM requests WHERE stop > 0 AND updated > $1")
	err = c.Start(rt, func(id string) {
		select {
		case heard <- id:
		default:
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The deadlines only end a test that would otherwise hang.
	select {
	case <-cut:
	case <-time.After(60 * time.Second):
		t.Fatal("the catch-up never read the stops missed")
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// Sent again until heard: the listener hears only once its catch-up
	// is done.
	deadline := time.After(60 * time.Second)
	for {
		if _, err := admin.Exec(ctx, `SELECT pg_notify('reach', $1)`, "approval:after"); err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-heard:
			if id != "after" {
				continue
			}
		case <-time.After(100 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("the listener whose catch-up's connection was cut hears no wake-up")
		}
		break
	}
	for rechecks.Load() < 2 {
		select {
		case <-deadline:
			t.Fatalf("the catch-up cut short was not run again (Recheck called %d times)", rechecks.Load())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
