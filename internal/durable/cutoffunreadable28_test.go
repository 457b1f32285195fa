package durable

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// unreadableStore is a store whose record of request bad reads as one
// whose roles do not decode (as a damaged row reads: Unreadable, no roles).
type unreadableStore struct {
	*sqlite.Store
	bad string
}

func (s unreadableStore) mark(r *store.Request) {
	if r != nil && r.ID == s.bad {
		r.Roles, r.Unreadable = nil, "its roles: not JSON"
	}
}

func (s unreadableStore) GetRequest(ctx context.Context, id string) (*store.Request, error) {
	r, err := s.Store.GetRequest(ctx, id)
	s.mark(r)
	return r, err
}

func (s unreadableStore) ListRequests(ctx context.Context, f store.RequestFilter) ([]*store.Request, error) {
	rs, err := s.Store.ListRequests(ctx, f)
	for _, r := range rs {
		s.mark(r)
	}
	return rs, err
}

// TestStoppedEndedUnreadableReported: a stopped and ended request whose
// record cannot be read whole (its roles), found by crash28's recovery
// through a compensation of it cut off by the kill ("its own stop") or
// through its stopped parent ("stopped by its parent"), runs no undo, as
// a running request's unreadable record runs none (who it acted for cannot
// be known), and the report says so: its undos did not run, the write
// stays done. Before, the cut-off compensation's recovery skipped it
// without a word, and the parent's ran its undos with no roles.
func TestStoppedEndedUnreadableReported(t *testing.T) {
	for _, how := range []string{"its own stop", "stopped by its parent"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			sq := tempStore(t)
			st := unreadableStore{Store: sq, bad: "c"}
			undone := map[string]int{}
			newRuntime := func() (*reach.Runtime, *Checkpoints) {
				cp := New(sq, nil, nil)
				rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: store.NewIdempotency(sq, nil),
					DefaultBudget: &reach.Budget{}})
				rt.MustRegister(bookTools(func(ref string) { undone[ref]++ })...)
				return rt, cp
			}
			old, cp := newRuntime()
			pctx, p, err := old.Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Roles: []string{"booker"}})
			if err != nil {
				t.Fatal(err)
			}
			cctx, c, err := old.Delegate(pctx, &reach.Delegation{Agent: "booker", Task: "book", ID: "c"})
			if err != nil {
				t.Fatal(err)
			}
			if res := old.Call(cctx, &reach.Call{ID: "c1", Tool: "book", IdempotencyKey: "c1", Arguments: json.RawMessage(`{"ref":"c1"}`)}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			cause := reach.Cause{Mode: reach.Cancel, By: "api", Reason: "enough", At: time.Now(), Request: "p"}
			if how == "its own stop" {
				cause.Request, cause.By = "c", "reach"
				cp.RequestStopped(ctx, c, cause)
				if _, _, err := old.Begin(ctx, &reach.RequestOptions{ID: "c/compensate/0a1b2c3d", Principal: "alice", Agent: "reach", Budget: &reach.Budget{}}); err != nil {
					t.Fatal(err)
				}
			} else {
				cp.RequestStopped(ctx, p, cause)
				cp.RequestStopped(ctx, c, cause)
			}
			r, err := sq.GetRequest(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			r.Ended = time.Now()
			mustPut(t, sq, r)
			rt, _ := newRuntime()
			rep, err := Recover(ctx, st, rt, &RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if undone["c1"] != 0 {
				t.Errorf("c1 undone %d times; want none: c's record cannot be read whole, nothing runs as it", undone["c1"])
			}
			if !slices.ContainsFunc(rep.Unreadable, func(b BadRow) bool { return b.Table == "requests" && b.Key == "c" }) {
				t.Errorf("the report's unreadable rows %+v miss request c: its undos did not run, and nothing said so", rep.Unreadable)
			}
		})
	}
}
