package cluster

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

// frozenVerified is a recorder that freezes (as a process killed there)
// at the end of the write "book": once it is durable, if it carries the
// write's undo; before it is written, if not (queued, a kill before its
// commit loses it); or, with begins, as a compensation's request is begun.
type frozenVerified struct {
	*Recorder
	begins bool
	once   sync.Once
	hit    chan struct{}
	ended  chan struct{} // closed once r's end was told
}

func (f *frozenVerified) stop() {
	f.once.Do(func() { close(f.hit) })
	select {}
}

func (f *frozenVerified) Ended(ctx context.Context, c *reach.Checkpoint) {
	if f.begins || c.Tool != "book" {
		f.Recorder.Ended(ctx, c)
		return
	}
	if len(c.Undo) > 0 {
		f.Recorder.Ended(ctx, c)
	}
	f.stop()
}

func (f *frozenVerified) RequestEnded(ctx context.Context, r *reach.Request) {
	f.Recorder.RequestEnded(ctx, r)
	if r.ID() == "r" {
		close(f.ended)
	}
}

func (f *frozenVerified) RequestBegan(ctx context.Context, r *reach.Request) error {
	if f.begins && strings.Contains(r.ID(), "/compensate/") {
		f.stop()
	}
	return f.Recorder.RequestBegan(ctx, r)
}

// TestFailedVerifyUndoneOnceAfterAKillOnPostgres is
// TestFailedVerifyUndoneOnceAfterAKill (internal/durable) on PostgreSQL,
// recovered by a second instance: on instance a, a write of request r with
// an undo and a verify runs when r is stopped and ended (its end held for
// the write, or stored without it once the write's tool ignored the stop
// past its time). The write completes; its verify is refused (r is
// stopped), so it fails. The kill comes at its end, or (its end held) as
// its compensation's request is begun. The recovery of a's life on
// instance b undoes the write exactly once and stores r stopped and
// ended, and reports nothing of r as may have run. Before, the undo ran
// before the write's end: a kill in between left it "executing", may have
// run, and (killed before its undo ran) done.
func TestFailedVerifyUndoneOnceAfterAKillOnPostgres(t *testing.T) {
	for _, tc := range []struct {
		name         string
		late, begins bool
	}{{"held/end", false, false}, {"held/begun", false, true}, {"late/end", true, false}} {
		t.Run(tc.name, func(t *testing.T) { failedVerifyKilledOnPostgres(t, tc.late, tc.begins) })
	}
}

func failedVerifyKilledOnPostgres(t *testing.T, late, begins bool) {
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
	fz := &frozenVerified{Recorder: a.Recorder(durable.New(a.st, nil, nil)), begins: begins, hit: make(chan struct{}), ended: make(chan struct{})}
	idemA := store.NewIdempotency(a.st, &store.IdempotencyOptions{Instance: a.Instance(), Owner: a.Owner(), Alive: a.Alive})
	rtA := reach.New(&reach.Options{Checkpoints: fz, Requests: fz, DeadLetters: fz.Recorder, Idempotency: idemA, Middleware: []reach.Middleware{a.Admission()}, DisableLoopGuard: true,
		DefaultBudget: &reach.Budget{}})
	entered, release := make(chan struct{}), make(chan struct{})
	book := reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
		Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			close(entered)
			<-release // its cancellation ignored
			return a, nil
		},
		Undo:   &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`},
		Verify: &reach.Verify{Followup: reach.Followup{Tool: "check", Args: `{"ref": "{args.ref}"}`}, Condition: "result.ok"}}
	if late {
		book.Timeout, book.Retry = 10*time.Millisecond, &reach.RetryPolicy{Attempts: 1}
	}
	rtA.MustRegister(book,
		reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				onA.mu.Lock()
				onA.n["w"]++
				onA.mu.Unlock()
				return json.RawMessage(`"ok"`), nil
			}},
		reach.Tool{Name: "check", Access: reach.Read,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"ok":true}`), nil
			}})
	rctx, r, err := rtA.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	go rtA.Call(rctx, &reach.Call{ID: "w", Tool: "book", IdempotencyKey: "w", Arguments: json.RawMessage(`{"ref":"w"}`)})
	<-entered
	r.Stop(reach.Cancel, "api", "enough")
	r.End()
	if late {
		<-fz.ended // past the write's time: r's end told without it
	}
	close(release)
	<-fz.hit
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
		t.Errorf("undone %v by the recovery, %v by the life killed; want %v by the recovery: the write whose verify failed undone once",
			got, onA.get(), want)
	}
	for _, f := range rep.MayHaveRun {
		if f.Request == "r" {
			t.Errorf("the recovery reports %s of r as may have run; want it ended, failed, with its undo", f.Name)
		}
	}
	if rec, err := b.st.GetRequest(ctx, "r"); err != nil || rec.State != "stopped" || rec.Ended.IsZero() {
		t.Errorf("r after the recovery: %+v (%v); want stopped and ended", rec, err)
	}
	if ds, err := b.st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
		t.Errorf("dead letters after the recovery: %d (%v); want none", len(ds), err)
	}
}
