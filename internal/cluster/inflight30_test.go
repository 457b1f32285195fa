package cluster

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

// frozenBegins is a recorder whose begin of a compensation's request
// signals hit and never returns, as a process killed there would.
type frozenBegins struct {
	*Recorder
	hit chan struct{}
}

func (f *frozenBegins) RequestBegan(ctx context.Context, r *reach.Request) error {
	if strings.Contains(r.ID(), "/compensate/") {
		close(f.hit)
		select {}
	}
	return f.Recorder.RequestBegan(ctx, r)
}

// TestWriteInFlightUndoneAfterAKillOnPostgres: on instance a, a write of
// request r is running when r is stopped (its tool does not stop when
// cancelled), and r is ended at once. The write completes after; its end
// is checkpointed with its undo, and the kill comes as its compensation's
// request is begun. The recovery of a's life on instance b undoes the
// write once and stores r stopped and ended. Before, r's end was stored
// at once (its part left it): no recovery claimed r, no compensation's
// request was stored, and the write stayed done.
func TestWriteInFlightUndoneAfterAKillOnPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	var cs [2]*Cluster
	for i, name := range []string{"a", "b"} {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	a, b := cs[0], cs[1]
	onA, onB := &undoCounter{n: map[string]int{}}, &undoCounter{n: map[string]int{}}
	fz := &frozenBegins{Recorder: a.Recorder(durable.New(a.st, nil, nil)), hit: make(chan struct{})}
	idemA := store.NewIdempotency(a.st, &store.IdempotencyOptions{Instance: a.Instance(), Owner: a.Owner(), Alive: a.Alive})
	rtA := reach.New(&reach.Options{Checkpoints: fz.Recorder, Requests: fz, DeadLetters: fz.Recorder, Idempotency: idemA,
		Middleware: []reach.Middleware{a.Admission()}, DisableLoopGuard: true, DefaultBudget: &reach.Budget{}})
	entered, release := make(chan struct{}), make(chan struct{})
	rtA.MustRegister(
		reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				close(entered)
				<-release // its cancellation ignored
				return a, nil
			},
			Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
		reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				onA.mu.Lock()
				onA.n["w"]++
				onA.mu.Unlock()
				return json.RawMessage(`"ok"`), nil
			}})
	rctx, r, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	go rtA.Call(rctx, &reach.Call{ID: "w", Tool: "book", IdempotencyKey: "w", Arguments: json.RawMessage(`{"ref":"w"}`)})
	<-entered
	r.Stop(reach.Cancel, "api", "enough")
	r.End()
	close(release)
	select {
	case <-fz.hit:
	case <-time.After(time.Minute):
		t.Fatal("the write's compensation was not begun within a minute")
	}
	// The kill: a is dead, its last heartbeat an hour old, judged by b.
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `UPDATE instances SET seen = seen - 3600000000000 WHERE owner = $1`, a.Owner()); err != nil {
		t.Fatal(err)
	}
	dead, err := b.st.Judge(ctx, []string{a.Owner()}, time.Minute)
	if err != nil || !slices.Equal(dead, []string{a.Owner()}) {
		t.Fatalf("judging a's life: %v (%v)", dead, err)
	}
	rtB, idemB := bookingRuntime(b, onB)
	rep, err := durable.Recover(ctx, b.st, rtB, &durable.RecoverOptions{Idempotency: idemB, Shared: &judgedLives{Cluster: b, dead: dead}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := onB.get(), map[string]int{"w": 1}; !maps.Equal(got, want) || len(onA.get()) != 0 {
		t.Errorf("undone %v by the recovery, %v by the life killed; want %v by the recovery: the write that completed after the stop undone once",
			got, onA.get(), want)
	}
	if rec, err := b.st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() || !slices.Contains(rep.Stopped, "r") {
		t.Errorf("r after the recovery: %+v (%v), reported stopped %v; want stopped and ended", rec, err, rep.Stopped)
	}
}

// frozenEnds is a recorder whose checkpoint of a completed write's end,
// with its undo, signals hit once durable and never returns, as a process
// killed right after it would.
type frozenEnds struct {
	*Recorder
	hit chan struct{}
}

func (f *frozenEnds) Ended(ctx context.Context, c *reach.Checkpoint) {
	f.Recorder.Ended(ctx, c)
	if c.Tool == "book" && len(c.Undo) > 0 {
		close(f.hit)
		select {}
	}
}

// TestLateWriteUndoneAfterAKillOnPostgres: on instance a, a write of
// request r is running when r is stopped and ended, and its tool ignores
// the stop past its time: r's end is stored without it. The write
// completes after, and the kill comes right after its end's checkpoint,
// with its undo. The recovery of a's life on instance b undoes the write
// once: its compensation's request was begun before its end. Before, that
// request came after the write's end, and the kill left r stopped and
// ended, which no recovery found: the write stayed done.
func TestLateWriteUndoneAfterAKillOnPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	var cs [2]*Cluster
	for i, name := range []string{"a", "b"} {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c, err := New(ctx, &Options{Store: st, Instance: name, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	a, b := cs[0], cs[1]
	onA, onB := &undoCounter{n: map[string]int{}}, &undoCounter{n: map[string]int{}}
	fz := &frozenEnds{Recorder: a.Recorder(durable.New(a.st, nil, nil)), hit: make(chan struct{})}
	endStored := make(chan struct{})
	idemA := store.NewIdempotency(a.st, &store.IdempotencyOptions{Instance: a.Instance(), Owner: a.Owner(), Alive: a.Alive})
	rtA := reach.New(&reach.Options{Checkpoints: fz, Requests: &endSignal{Recorder: fz.Recorder, id: "r", ended: endStored}, DeadLetters: fz.Recorder,
		Idempotency: idemA, Middleware: []reach.Middleware{a.Admission()}, DisableLoopGuard: true, DefaultBudget: &reach.Budget{}})
	entered, release := make(chan struct{}), make(chan struct{})
	rtA.MustRegister(
		reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Timeout: 10 * time.Millisecond, Retry: &reach.RetryPolicy{Attempts: 1},
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				close(entered)
				<-release // its cancellation ignored, past its time
				return a, nil
			},
			Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
		reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				onA.mu.Lock()
				onA.n["w"]++
				onA.mu.Unlock()
				return json.RawMessage(`"ok"`), nil
			}})
	rctx, r, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	go rtA.Call(rctx, &reach.Call{ID: "w", Tool: "book", IdempotencyKey: "w", Arguments: json.RawMessage(`{"ref":"w"}`)})
	<-entered
	r.Stop(reach.Cancel, "api", "enough")
	r.End()
	<-endStored // past the write's time: r's end told without it
	close(release)
	select {
	case <-fz.hit:
	case <-time.After(time.Minute):
		t.Fatal("the write's end was not checkpointed within a minute")
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `UPDATE instances SET seen = seen - 3600000000000 WHERE owner = $1`, a.Owner()); err != nil {
		t.Fatal(err)
	}
	dead, err := b.st.Judge(ctx, []string{a.Owner()}, time.Minute)
	if err != nil || !slices.Equal(dead, []string{a.Owner()}) {
		t.Fatalf("judging a's life: %v (%v)", dead, err)
	}
	rtB, idemB := bookingRuntime(b, onB)
	if _, err := durable.Recover(ctx, b.st, rtB, &durable.RecoverOptions{Idempotency: idemB, Shared: &judgedLives{Cluster: b, dead: dead}}); err != nil {
		t.Fatal(err)
	}
	if got, want := onB.get(), map[string]int{"w": 1}; !maps.Equal(got, want) || len(onA.get()) != 0 {
		t.Errorf("undone %v by the recovery, %v by the life killed; want %v by the recovery: the late write undone once", got, onA.get(), want)
	}
	if rec, err := b.st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
		t.Errorf("r after the recovery: %+v (%v); want stopped and ended", rec, err)
	}
}

// endSignal is a recorder that closes ended once request id's end was
// told to it.
type endSignal struct {
	*Recorder
	id    string
	ended chan struct{}
}

func (e *endSignal) RequestEnded(ctx context.Context, r *reach.Request) {
	e.Recorder.RequestEnded(ctx, r)
	if r.ID() == e.id {
		close(e.ended)
	}
}
