package reach_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// sharedEntityStore is an entity store several runtimes share, and the
// checkpoints over it.
type sharedEntityStore interface {
	reach.EntityStore
	durable.Store
}

// TestSharedTurnWritesOfOneEntityTakeTurns: two writes of order 7 one model
// turn asked for take turns (TestTurnWritesOfOneEntityTakeTurns), on
// entity versions shared by several instances (in memory, and in
// PostgreSQL), with checkpoints and without. The first is held as it lets
// go of the entity's lock (reach.SetLetGo) until the second, which waited
// for it, has ended: the second finds the first's write noted as its
// request's own and runs. Before, the request noted the version the
// store's claim gave only after the lock was let go, and the second was
// refused stale_read ("changed since you read it") by its own request's
// write. A write of order 7 by another instance while the first ran is
// still a stale read: the turn's second write is refused.
func TestSharedTurnWritesOfOneEntityTakeTurns(t *testing.T) {
	var cluster *pgtest.Cluster
	var dbs atomic.Int64
	stores := []struct {
		name string
		open func(t *testing.T) sharedEntityStore
	}{
		{"memory", func(*testing.T) sharedEntityStore { return store.NewMemory() }},
		{"postgres", func(t *testing.T) sharedEntityStore {
			url, err := cluster.CreateDatabase(t.Context(), "turn"+strconv.FormatInt(dbs.Add(1), 10))
			if err != nil {
				t.Fatal(err)
			}
			st, err := postgres.Open(t.Context(), url, &postgres.Options{MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	}
	for _, sc := range stores {
		if sc.name == "postgres" {
			cluster = pgtest.Own(t) // one for the subtests, stopped as the test ends
		}
		for _, checkpointed := range []bool{false, true} {
			for _, other := range []bool{false, true} {
				name := sc.name
				if checkpointed {
					name += "/checkpointed"
				}
				if other {
					name += "/written_by_another_instance"
				}
				t.Run(name, func(t *testing.T) {
					st := sc.open(t)
					sharedTurnWrites(t, st, checkpointed, other)
				})
			}
		}
	}
}

func sharedTurnWrites(t *testing.T, st sharedEntityStore, checkpointed, other bool) {
	opts := func() *reach.Options {
		o := &reach.Options{Entities: st}
		if checkpointed {
			o.Checkpoints = durable.New(st, nil, nil)
		}
		return o
	}
	// The other instance, on the same store.
	rt2 := reach.New(opts())
	rt2.MustRegister(reach.Tool{Name: "note", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{order}"}, Func: echo})
	ctx2, _ := begin(t, rt2, nil)

	rt := reach.New(opts())
	started := make(chan struct{})
	rt.MustRegister(
		reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"order:{order}"}, Func: echo},
		reach.Tool{Name: "note", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{order}"},
			Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Text string }
				json.Unmarshal(a, &in)
				if in.Text == "a" {
					if other { // another instance writes order 7 while this write runs
						if r := rt2.Call(ctx2, &reach.Call{ID: "elsewhere", Tool: "note", Arguments: json.RawMessage(`{"order":"7","text":"x"}`)}); r.IsError() {
							t.Errorf("the other instance's write: %s", r.ModelText())
						}
					}
					close(started)
				}
				return a, nil
			}},
	)
	bDone := make(chan struct{})
	var b *reach.Result
	reach.SetLetGo(rt, func(call string) {
		if call == "a" {
			<-bDone // the turn's other write, which waited for order 7, ends first
		}
	})
	ctx, _ := begin(t, rt, nil)
	if r := call(rt, ctx, "get", `{"order":"7"}`); r.IsError() {
		t.Fatal(r.ModelText())
	}
	tctx, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	a := make(chan *reach.Result, 1)
	go func() {
		a <- rt.Call(tctx, &reach.Call{ID: "a", Tool: "note", Arguments: json.RawMessage(`{"order":"7","text":"a"}`)})
	}()
	<-started // a holds order 7: b waits for it
	go func() {
		defer close(bDone)
		b = rt.Call(tctx, &reach.Call{ID: "b", Tool: "note", Arguments: json.RawMessage(`{"order":"7","text":"b"}`)})
	}()
	if r := <-a; r.IsError() {
		t.Fatalf("the turn's first write: %s", r.ModelText())
	}
	<-bDone
	turn.EndModel(reach.TokenUsage{})
	if other {
		if b.Status != reach.StatusRefused || b.Error.Code != "stale_read" {
			t.Fatalf("the turn's second write of order 7, which another instance wrote while the first ran: %s; want stale_read", b.ModelText())
		}
		return
	}
	if b.IsError() {
		t.Fatalf("the turn's second write of order 7, which waited for its first: %s", b.ModelText())
	}
	// The request's versions are its writes': its next write runs.
	if r := rt.Call(ctx, &reach.Call{ID: "c", Tool: "note", Arguments: json.RawMessage(`{"order":"7","text":"c"}`)}); r.IsError() {
		t.Fatalf("the request's write after both: %s", r.ModelText())
	}
}

// TestSharedFailedWriteUndoneBeforeItsEntityIsLetGo: a write of order 7
// whose check fails is undone before its lock on order 7 is let go, on
// entity versions shared by several instances (in memory, and in
// PostgreSQL), checkpointed or not, as on one runtime's own versions: a
// write of order 7 by another request, which waited for it, runs after
// the undo, and the undo does not take back what that write did. The
// failed write is held as it lets go of the lock (reach.SetLetGo) until
// the other write has ended. Before, a checkpointed write on a shared
// store let go of the lock as its tool's claim was made, before its end
// was recorded and its undo ran: the other request's write ran in
// between, and the undo, run after it, wrote over it.
func TestSharedFailedWriteUndoneBeforeItsEntityIsLetGo(t *testing.T) {
	var cluster *pgtest.Cluster
	var dbs atomic.Int64
	for _, name := range []string{"memory", "postgres"} {
		if name == "postgres" {
			cluster = pgtest.Own(t)
		}
		for _, tc := range []struct{ checkpointed, stop bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			sub := name
			if tc.checkpointed {
				sub += "/checkpointed"
			}
			if tc.stop {
				sub += "/stopped_while_it_ran"
			}
			t.Run(sub, func(t *testing.T) {
				var st sharedEntityStore = store.NewMemory()
				if cluster != nil {
					url, err := cluster.CreateDatabase(t.Context(), "undo"+strconv.FormatInt(dbs.Add(1), 10))
					if err != nil {
						t.Fatal(err)
					}
					pg, err := postgres.Open(t.Context(), url, &postgres.Options{MaxConns: 4})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { pg.Close() })
					st = pg
				}
				undoneBeforeLetGo(t, st, tc.checkpointed, tc.stop)
			})
		}
	}
}

// undoneBeforeLetGo: a write of order 7 fails its check, or (stop) its
// request is cancelled while its tool runs, which ignores that and
// completes; its undo runs before another request's write of order 7,
// which waited for it.
func undoneBeforeLetGo(t *testing.T, st sharedEntityStore, checkpointed, stop bool) {
	o := &reach.Options{Entities: st}
	if checkpointed {
		o.Checkpoints = durable.New(st, nil, nil)
	}
	rt := reach.New(o)
	var mu sync.Mutex
	var ran []string
	log := func(s string) {
		mu.Lock()
		ran = append(ran, s)
		mu.Unlock()
	}
	started, proceed := make(chan struct{}), make(chan struct{})
	rt.MustRegister(
		reach.Tool{Name: "refund", Access: reach.Write, Writes: []string{"order:{order}"},
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				close(started)
				<-proceed // past its request's stop, if stop
				log("refund")
				return json.RawMessage(`{"ok":` + strconv.FormatBool(stop) + `}`), nil
			},
			Undo:   &reach.Followup{Tool: "cancel_refund", Args: `{"order": "{args.order}"}`},
			Verify: &reach.Verify{Followup: reach.Followup{Tool: "get_refund", Args: `{}`}, Condition: `result.ok == true`}},
		reach.Tool{Name: "get_refund", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":` + strconv.FormatBool(stop) + `}`), nil
		}},
		reach.Tool{Name: "cancel_refund", Access: reach.Write, Writes: []string{"order:{order}"},
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				log("undo")
				return a, nil
			}},
		reach.Tool{Name: "note", Access: reach.Write, Writes: []string{"order:{order}"},
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				log("note")
				return a, nil
			}},
	)
	otherDone := make(chan struct{})
	var other *reach.Result
	reach.SetLetGo(rt, func(call string) {
		if call == "a" {
			<-otherDone // the other request's write, which waited for order 7, ends first
		}
	})
	ctx, req := begin(t, rt, nil)
	ctx2, _ := begin(t, rt, nil)
	a := make(chan *reach.Result, 1)
	go func() {
		a <- rt.Call(ctx, &reach.Call{ID: "a", Tool: "refund", Arguments: json.RawMessage(`{"order":"7"}`)})
	}()
	<-started // a holds order 7: the other request's write waits for it
	go func() {
		defer close(otherDone)
		other = rt.Call(ctx2, &reach.Call{ID: "b", Tool: "note", Arguments: json.RawMessage(`{"order":"7"}`)})
	}()
	if stop {
		req.Stop(reach.Cancel, "test", "user left")
	}
	close(proceed)
	if r := <-a; !stop && (r.Status != reach.StatusError || r.Error.Code != "verify_failed") {
		t.Fatalf("the refund whose check fails: %s; want verify_failed", r.ModelText())
	}
	<-otherDone
	if other.IsError() {
		t.Fatalf("the other request's write: %s", other.ModelText())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"refund", "undo", "note"}; !slices.Equal(ran, want) {
		t.Errorf("the tools ran %v; want %v: the write undone before the other request's write of order 7", ran, want)
	}
}
