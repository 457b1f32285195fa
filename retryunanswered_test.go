package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// TestRetryDeadLetterOfAnUndoThatIgnoresItsContext: an operator retries a
// dead-lettered undo whose tool now ignores its cancellation and does not
// answer. The retry is waited for its tool's time only, as a
// compensation's undo is: then it answers the operator "may have run"
// (undo_unanswered) and the dead letter is open again, one attempt more.
// Before, the retry waited for the tool for good, the dead letter taken
// (every other action on it busy) and the operator's call unanswered (in
// the bubble: a deadlock).
func TestRetryDeadLetterOfAnUndoThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var undos atomic.Int32
		entered, release := make(chan struct{}), make(chan struct{})
		once := &reach.RetryPolicy{Attempts: 1}
		rt := reach.New(nil)
		rt.MustRegister(
			reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Retry: once,
				Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil },
				Undo: &reach.Followup{Tool: "unbook", Args: `{}`}},
			reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Timeout: 10 * time.Millisecond, Retry: once,
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					if undos.Add(1) == 1 {
						return nil, errors.New("booking system down")
					}
					close(entered)
					<-release // ignores its context
					return json.RawMessage(`{}`), nil
				}})
		ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if res := rt.Call(ctx, &reach.Call{ID: "w", Tool: "book", Arguments: json.RawMessage(`{}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
		if comps := r.Compensate(t.Context(), "test"); len(comps) != 1 || comps[0].DeadLetter == "" {
			t.Fatalf("compensation %+v; want its undo dead-lettered", comps)
		}
		r.End()
		id := func() string {
			dls, err := rt.DeadLetters(t.Context(), reach.DeadLetterOpen)
			if err != nil || len(dls) != 1 {
				t.Fatalf("dead letters %+v, %v; want one open", dls, err)
			}
			return dls[0].ID
		}()
		res, dl, err := rt.RetryDeadLetter(t.Context(), id, "ops")
		if err != nil {
			t.Fatal(err)
		}
		<-entered
		if !res.IsError() || res.Error.Code != "undo_unanswered" {
			t.Errorf("retry = %s %s; want undo_unanswered", res.Status, res.ModelText())
		}
		if dl.State != reach.DeadLetterOpen || dl.Attempts != 2 {
			t.Errorf("dead letter %s after %d attempts; want open again after 2", dl.State, dl.Attempts)
		}
		close(release)
		synctest.Wait()
	})
}
