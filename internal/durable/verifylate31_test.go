package durable

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// frozenQueue is frozen whose end of a call, queued (not durable: a kill
// before its commit loses it), freezes it too, before it is queued.
type frozenQueue struct {
	*frozen
}

func (f *frozenQueue) QueueFrame(fr *store.Frame) {
	if f.frame != nil && f.frame(fr) {
		f.stop()
	}
	f.frozen.QueueFrame(fr)
}

// TestFailedVerifyUndoneOnceAfterAKill: a write of request r with an undo
// and a verify completes, and its verify fails: refused, as r was stopped
// while the write ran (its end held for the write, or stored without it
// once the write's tool ignored the stop past its time), or not confirmed
// in a request that runs on. The store is frozen (a kill) at the write's
// end, its undo not run yet; as its compensation's request is begun; or
// after its undo's end, the request not ended. After the restart the write is undone exactly once, is not
// reported "may have run", and nothing is dead-lettered. Before, its undo
// ran before its end was recorded: a kill in between left it "executing",
// which the restart reports "may have run" and does not undo: undone
// though reported so, or (killed before its undo ran) left done.
func TestFailedVerifyUndoneOnceAfterAKill(t *testing.T) {
	for _, stop := range []string{"held", "late", "none"} {
		for _, at := range []string{"end", "begun", "undone"} {
			if stop == "late" && at == "begun" {
				// Its compensation's request is begun before its end
				// (as a late write's, lateUndo): a kill there leaves
				// the write "executing", may have run, as before.
				continue
			}
			t.Run(stop+"/"+at, func(t *testing.T) { failedVerifyKilled(t, stop, at) })
		}
	}
}

func failedVerifyKilled(t *testing.T, stop, at string) {
	ctx := context.Background()
	st := tempStore(t)
	var mu sync.Mutex
	undone := map[string]int{}
	entered, release, endStored := make(chan struct{}), make(chan struct{}), make(chan struct{})
	newRuntime := func(s Store) *reach.Runtime {
		cp := New(s, nil, nil)
		rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(st, nil),
			DefaultBudget: &reach.Budget{}})
		tools := bookTools(func(ref string) { mu.Lock(); undone[ref]++; mu.Unlock() })
		tools[0].Verify = &reach.Verify{Followup: reach.Followup{Tool: "check", Args: `{"ref": "{args.ref}"}`}, Condition: "result.ok"}
		if stop == "late" {
			tools[0].Timeout, tools[0].Retry = 10*time.Millisecond, &reach.RetryPolicy{Attempts: 1}
		}
		if stop != "none" {
			tools[0].Func = func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				if strings.Contains(string(a), `"w"`) {
					close(entered)
					<-release // its cancellation ignored
				}
				return a, nil
			}
		}
		tools = append(tools, reach.Tool{Name: "check", Access: reach.Read,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"ok":false}`), nil
			}})
		rt.MustRegister(tools...)
		return rt
	}
	var once sync.Once
	fz := &frozenQueue{&frozen{Store: st, hit: make(chan struct{}),
		frame: func(f *store.Frame) bool {
			switch at {
			case "end":
				return f.Request == "r" && f.Name == "book" && f.State != "executing"
			case "undone":
				return strings.HasPrefix(f.Request, "r/compensate/") && f.Name == "unbook" && f.State == "completed"
			}
			return false
		},
		request: func(r *store.Request) bool {
			if r.ID == "r" && !r.Ended.IsZero() {
				once.Do(func() { close(endStored) })
			}
			return at == "begun" && strings.HasPrefix(r.ID, "r/compensate/") && r.Ended.IsZero()
		}}}
	old := newRuntime(fz)
	rctx, r, err := old.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	go old.Call(rctx, &reach.Call{ID: "w", Tool: "book", IdempotencyKey: "w", Arguments: json.RawMessage(`{"ref":"w"}`)})
	if stop != "none" {
		<-entered
		r.Stop(reach.Cancel, "api", "enough")
		r.End()
		if stop == "late" {
			<-endStored // past the write's time: r's end stored without it
		}
		close(release)
	}
	<-fz.hit
	rep, err := Recover(ctx, st, newRuntime(st), &RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(undone)
	mu.Unlock()
	if want := map[string]int{"w": 1}; !maps.Equal(got, want) {
		t.Errorf("undone %v after the restart; want %v: the write whose verify failed undone exactly once", got, want)
	}
	for _, f := range rep.MayHaveRun {
		if f.Request == "r" {
			t.Errorf("the restart reports %s of r as may have run; want it ended, failed, with its undo", f.Name)
		}
	}
	if ds, err := st.ListDeadLetters(ctx, ""); err != nil || len(ds) != 0 {
		t.Errorf("dead letters after the restart: %d (%v); want none", len(ds), err)
	}
	want := "stopped"
	if stop == "none" {
		want = "interrupted"
	}
	if rec, err := st.GetRequest(ctx, "r"); err != nil || rec.State != want || rec.Ended.IsZero() {
		t.Errorf("r after the restart: %+v (%v); want %s and ended", rec, err, want)
	}
	fs, err := st.RequestFrames(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Name == "book" && (f.State != "failed" || len(f.Undo) == 0) {
			t.Errorf("the write's checkpoint after the restart: %s, undo %s; want failed, with its undo", f.State, f.Undo)
		}
	}
}
