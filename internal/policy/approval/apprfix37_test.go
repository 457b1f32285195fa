package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// landingStore answers the next write of an approval that carries a vote
// as a store whose write outlived its caller's deadline: "applied" writes
// it, then answers context.DeadlineExceeded; "conflict" writes it, then
// answers a conflict; "late" answers context.DeadlineExceeded and writes
// it only when land is called (SQLite's writer leaves a write queued
// when its caller's context ends, and applies it later).
type landingStore struct {
	store.Store
	mode  atomic.Value // string
	mu    sync.Mutex
	held  *store.ApprovalRecord
	fired atomic.Int32
}

func (s *landingStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	mode, _ := s.mode.Load().(string)
	var sa storedApproval
	if mode == "" || json.Unmarshal(a.Data, &sa) != nil || len(sa.Votes) == 0 {
		return s.Store.PutApproval(ctx, a)
	}
	s.mode.Store("")
	s.fired.Add(1)
	cp := *a
	switch mode {
	case "late":
		s.mu.Lock()
		s.held = &cp
		s.mu.Unlock()
		return context.DeadlineExceeded
	case "conflict":
		if err := s.Store.PutApproval(context.Background(), &cp); err != nil {
			return err
		}
		return fmt.Errorf("approval %s: %w", a.ID, store.ErrConflict)
	}
	if err := s.Store.PutApproval(context.Background(), &cp); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

func (s *landingStore) land(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		t.Fatal("no write held")
	}
	if err := s.Store.PutApproval(context.Background(), s.held); err != nil {
		t.Fatal(err)
	}
	s.held = nil
}

func closeOne(t *testing.T, l *life, req string) *reach.Result {
	return l.rt.Call(l.begin(t, req), &reach.Call{ID: "c1", Tool: "close_account", IdempotencyKey: "close-1",
		Arguments: json.RawMessage(`{"account":"1"}`)})
}

// TestApprfix37DecisionLandedLate: a queue of one instance whose vote's
// write timed out (or was answered a conflict) and was applied all the
// same, at once or later, goes on: the reviewer's vote after it is
// recorded, the call runs once, each action is audited once. Before, the
// store was a version ahead of the queue, which did not read it again
// (only a shared queue does): every later decision on the approval failed
// with a conflict, and the call waited for a restart.
func TestApprfix37DecisionLandedLate(t *testing.T) {
	for _, mode := range []string{"applied", "conflict", "late"} {
		t.Run(mode, func(t *testing.T) {
			ts := &landingStore{Store: openStore(t, t.TempDir())}
			var runs atomic.Int32
			log := &auditLog{}
			a := newLife(t, ts, &runs, &Options{Audit: log.audit, Audited: log.holds})
			id := WaitsFor(closeOne(t, a, "r1").Error)
			if id == "" {
				t.Fatal("the call is not pending")
			}
			ts.mode.Store(mode)
			_, err := a.q.Approve(id, Actor{Principal: "alice"}, "mine")
			if ts.fired.Load() != 1 {
				t.Fatal("the user's vote was not written")
			}
			if mode == "late" {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the user's vote whose write timed out: %v; want the timeout", err)
				}
				ts.land(t)
			} else if err != nil {
				// The vote is stored: the queue finds it so.
				t.Errorf("the user's vote, stored though its write answered an error: %v; want it recorded", err)
			}
			got, err := a.q.Approve(id, Actor{Principal: "rev", Roles: []string{"reviewer"}}, "ok")
			if err != nil || got.Status != Approved {
				t.Fatalf("the reviewer's vote after it: %v %s; want approved", err, got.Status)
			}
			if res := closeOne(t, a, "r2"); res.Status != reach.StatusSuccess {
				t.Fatalf("the approved call: %s", res.ModelText())
			}
			if res := closeOne(t, a, "r3"); res.Status != reach.StatusSuccess || runs.Load() != 1 {
				t.Fatalf("the approved call again: %s, %d runs; want its run, once", res.ModelText(), runs.Load())
			}
			for _, action := range []string{"requested", "voted", "approved", "used"} {
				if n := len(log.of(action)); n != 1 {
					t.Errorf("%s audited %d times; want once", action, n)
				}
			}
		})
	}
}

// TestApprfix37CallFindsDecisionLandedLate: the user's approval whose
// write timed out and was applied later lets the agent's call through
// when it comes again, on a queue of its own: its waiting frame's write
// conflicts, the queue reads the approval again and finds it approved;
// the call runs once, and the approval is audited once. Before, the call
// was answered pending until a restart (or a decision that failed too).
func TestApprfix37CallFindsDecisionLandedLate(t *testing.T) {
	ts := &landingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	log := &auditLog{}
	a := newLife(t, ts, &runs, &Options{Audit: log.audit, Audited: log.holds})
	id := WaitsFor(refund7(t, a, "r1").Error)
	if id == "" {
		t.Fatal("the call is not pending")
	}
	ts.mode.Store("late")
	if _, err := a.q.Approve(id, Actor{Principal: "alice"}, "ok"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the approval whose write timed out: %v; want the timeout", err)
	}
	ts.land(t)
	if res := refund7(t, a, "r2"); res.Status != reach.StatusSuccess {
		t.Fatalf("the call again once its approval is stored: %s; want it run", res.ModelText())
	}
	if res := refund7(t, a, "r3"); res.Status != reach.StatusSuccess || runs.Load() != 1 {
		t.Fatalf("the approved call again: %s, %d runs; want its run, once", res.ModelText(), runs.Load())
	}
	for _, action := range []string{"requested", "approved", "used"} {
		if n := len(log.of(action)); n != 1 {
			t.Errorf("%s audited %d times; want once", action, n)
		}
	}
}
