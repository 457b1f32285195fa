package approval

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// timingOutStore answers the writes of approvals that stall picks as a
// store that stops answering does once the write's deadline passes
// (context.DeadlineExceeded, nothing written), and records whether each
// such write had a deadline at all: without one, a store that stops
// answering holds it, and the queue's lock with it, for good.
type timingOutStore struct {
	store.Store
	stall   func(a *store.ApprovalRecord) bool
	stalled atomic.Int32
	bounded atomic.Int32
}

func (s *timingOutStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if s.stall != nil && s.stall(a) {
		s.stalled.Add(1)
		if _, ok := ctx.Deadline(); ok {
			s.bounded.Add(1)
		}
		return context.DeadlineExceeded
	}
	return s.Store.PutApproval(ctx, a)
}

// TestAppr37WritesUnderTheLockBounded: each write of an approval the
// queue makes under its lock (a new approval, a decision, a waiting
// frame, the clearing of an action's mark once audited) has a deadline
// (syncTimeout), as the claim of a mark before its audit has; one that
// times out leaves the approval as the store had it, and nothing is
// lost: a restart finds the approval, and it is decided, run or refused
// once, its actions audited once. Before, these writes waited on the
// store with no deadline: a store that stopped answering held the
// queue's lock, and every approval call of the gateway, for good.
func TestAppr37WritesUnderTheLockBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall func(a *store.ApprovalRecord) bool
	}{
		{"new", func(a *store.ApprovalRecord) bool { return a.Version == 0 }},
		{"decision", func(a *store.ApprovalRecord) bool { return a.Status == string(Denied) }},
		{"frame", func(a *store.ApprovalRecord) bool {
			return a.Status == string(Pending) && strings.Contains(string(a.Data), "r2")
		}},
		{"mark", func(a *store.ApprovalRecord) bool {
			return a.Version > 0 && !strings.Contains(string(a.Data), store.UnauditedMark)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &timingOutStore{Store: openStore(t, t.TempDir())}
			var runs atomic.Int32
			log := &auditLog{}
			a := newLife(t, ts, &runs, &Options{Audit: log.audit, Audited: log.holds})
			var id string
			if tc.name != "new" {
				id = WaitsFor(refund7(t, a, "r1").Error)
			}
			ts.stall = tc.stall
			switch tc.name {
			case "new":
				res := refund7(t, a, "r1")
				if res.Error == nil || res.Error.Code != "approval_store" {
					t.Fatalf("a new approval whose write timed out: %s; want refused approval_store", res.ModelText())
				}
			case "decision":
				if _, err := a.q.Deny(id, Actor{Principal: "alice"}, "no"); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("a denial whose write timed out: %v; want the timeout", err)
				}
				if got, _ := a.q.Get(id); got.Status != Pending {
					t.Errorf("after its denial's write timed out the approval is %s; want pending, as stored", got.Status)
				}
			case "frame":
				if res := refund7(t, a, "r2"); WaitsFor(res.Error) != id {
					t.Fatalf("the call repeated in another request: %s; want pending on %s", res.ModelText(), id)
				}
			case "mark":
				if _, err := a.q.Deny(id, Actor{Principal: "alice"}, "no"); err != nil {
					t.Fatal(err)
				}
			}
			if ts.stalled.Load() == 0 {
				t.Fatal("no write stalled")
			}
			if b := ts.bounded.Load(); b != ts.stalled.Load() {
				t.Errorf("%d of %d stalled writes had a deadline; want all", b, ts.stalled.Load())
			}
			// Whatever the queue does meanwhile, it is not held: a look at
			// it answers.
			_ = a.q.List("")
			ts.stall = nil

			// A restart: the approval as stored, decided once, audited once.
			b := newLife(t, ts, &runs, &Options{Audit: log.audit, Audited: log.holds})
			if tc.name == "new" {
				if l := b.q.List(""); len(l) != 0 {
					t.Fatalf("after the restart %d approvals; want none (its write timed out, the call was refused)", len(l))
				}
				id = WaitsFor(refund7(t, b, "r3").Error)
				if id == "" {
					t.Fatal("the call after the restart is not pending")
				}
			}
			got, ok := b.q.Get(id)
			want := Pending
			if tc.name == "mark" {
				want = Denied
			}
			if !ok || got.Status != want {
				t.Fatalf("after the restart approval %s is %v %s; want %s", id, ok, got.Status, want)
			}
			if want == Pending {
				if _, err := b.q.Approve(id, Actor{Principal: "alice"}, "ok"); err != nil {
					t.Fatal(err)
				}
				if res := refund7(t, b, "r4"); res.Status != reach.StatusSuccess {
					t.Fatalf("the approved call after the restart: %s", res.ModelText())
				}
				if res := refund7(t, b, "r5"); res.Status != reach.StatusSuccess || runs.Load() != 1 {
					t.Fatalf("the approved call again: %s, %d runs; want its run, once", res.ModelText(), runs.Load())
				}
			} else if d := log.of("denied"); len(d) != 1 {
				t.Errorf("the denial audited %d times: %+v; want once", len(d), d)
			}
			ar, err := ts.GetApproval(t.Context(), id)
			if err != nil || strings.Contains(string(ar.Data), store.UnauditedMark) {
				t.Errorf("after the restart the approval is still marked unaudited: %v %s", err, ar.Data)
			}
			for _, action := range []string{"requested", "approved", "used"} {
				if n := len(log.of(action)); n > 1 {
					t.Errorf("%s audited %d times; want once at most", action, n)
				}
			}
		})
	}
}
