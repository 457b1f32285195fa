package approval

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// killableStore refuses every write of approvals once dead: an instance
// killed (kill -9), whose later writes never land.
type killableStore struct {
	store.Store
	dead atomic.Bool
}

func (s *killableStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if s.dead.Load() {
		return context.Canceled
	}
	return s.Store.PutApproval(ctx, a)
}

// realAudit is an instance's audit of approval actions into log, a real
// audit log on the shared store, as the gateway writes them (the event's
// key, Event.Once) and finds them again (Options.Audited); dead drops
// what a killed instance would have appended.
func realAudit(log *audit.Log, dead *atomic.Bool) (func(context.Context, Event), func(context.Context, []Event) []bool) {
	head := func(a *Approval) string { return "approval " + a.ID + " (" + a.Requires + ")" }
	add := func(ctx context.Context, e Event) {
		if e.Elsewhere || dead != nil && dead.Load() {
			return
		}
		a := &e.Approval
		if _, err := log.Append(ctx, &audit.Event{Request: a.Request, Kind: "approval", Name: a.Tool, Decision: e.Action,
			Principal: a.Principal, Message: head(a) + " by " + e.By, Once: e.Once()}); err != nil {
			panic(err)
		}
	}
	held := func(ctx context.Context, es []Event) []bool {
		out := make([]bool, len(es))
		for i, e := range es {
			evs, err := log.Show(ctx, e.Approval.Request)
			if err != nil {
				continue
			}
			for _, ev := range evs {
				if ev.Kind == "approval" && ev.Decision == e.Action && strings.HasPrefix(ev.Message, head(&e.Approval)) {
					out[i] = true
				}
			}
		}
		return out
	}
	return add, held
}

// auditedActions counts the approval events of request req in log, by
// action, and checks that the chain verifies.
func auditedActions(t *testing.T, log *audit.Log, req string) map[string]int {
	t.Helper()
	evs, err := log.Show(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == "approval" {
			n[ev.Decision]++
		}
	}
	if _, err := log.Verify(t.Context()); err != nil {
		t.Errorf("the audit chain does not verify: %v", err)
	}
	return n
}

// pausedAfterClaim: instance a approves a call, claims the approval's
// mark and pauses before its audit event (afterClaim: a VM paused, a
// process stopped); meanwhile survivor b finds a dead and takes the
// action over (Adopt), audits it and clears the mark; then a goes on and
// appends its event. Or a is killed there (kill -9) and starts again.
// Either way the audit log holds the approval once, its chain verifies,
// and the approved call runs once, on either instance.
func pausedAfterClaim(t *testing.T, st store.Store, killed bool) {
	log, err := audit.New(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	ks := &killableStore{Store: st}
	var runs atomic.Int32
	addA, heldA := realAudit(log, &ks.dead)
	a := newLife(t, ks, &runs, &Options{Shared: true, Instance: "a", Audit: addA, Audited: heldA})
	addB, heldB := realAudit(log, nil)
	b := newLife(t, st, &runs, &Options{Shared: true, Instance: "b", Audit: addB, Audited: heldB})
	id := WaitsFor(refund7(t, a, "r1").Error)
	if id == "" {
		t.Fatal("the call is not pending")
	}
	var paused atomic.Bool
	afterClaim = func(e *Event) {
		if e.Action != "approved" || e.Again || !paused.CompareAndSwap(false, true) {
			return
		}
		if killed {
			ks.dead.Store(true) // nothing of a's lands after its claim
			return
		}
		if err := b.q.Adopt(context.Background(), func(name string) bool { return name != "a" }); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterClaim = nil })
	if _, err := a.q.Approve(id, Actor{Principal: "alice"}, "ok"); err != nil {
		t.Fatal(err)
	}
	if !paused.Load() {
		t.Fatal("the approval was never claimed before its audit")
	}
	if killed {
		a = newLife(t, st, &runs, &Options{Shared: true, Instance: "a", Audit: addB, Audited: heldB}) // the restart
	}
	if err := b.q.Adopt(t.Context(), func(name string) bool { return name != "a" }); err != nil {
		t.Fatal(err)
	}
	if n := auditedActions(t, log, "r1"); n["approved"] != 1 || n["requested"] != 1 {
		t.Errorf("the audit log holds %v; want the approval, and its request, once", n)
	}
	if res := refund7(t, a, "r2"); res.Status != reach.StatusSuccess {
		t.Fatalf("the approved call on a: %s", res.ModelText())
	}
	if res := refund7(t, b, "r3"); res.Status != reach.StatusSuccess {
		t.Fatalf("the approved call again, on b: %s", res.ModelText())
	}
	if runs.Load() != 1 {
		t.Errorf("the approved call ran %d times; want once", runs.Load())
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(ar.Data), store.UnauditedMark) {
		t.Errorf("the approval is still marked unaudited: %v %s", err, ar.Data)
	}
	if n := auditedActions(t, log, "r1"); n["approved"] != 1 || n["used"] != 1 {
		t.Errorf("after the runs the audit log holds %v; want the approval and its use once each", n)
	}
}

// TestAppr37PausedAfterClaimAuditedOnce: pausedAfterClaim on SQLite. Before
// (no key for an approval's action in the audit log), the paused instance
// appended the approval a second time after the survivor's.
func TestAppr37PausedAfterClaimAuditedOnce(t *testing.T) {
	for _, killed := range []bool{false, true} {
		t.Run(map[bool]string{false: "paused", true: "killed"}[killed], func(t *testing.T) {
			pausedAfterClaim(t, openStore(t, t.TempDir()), killed)
		})
	}
}

// TestAppr37PausedAfterClaimAuditedOncePostgres: the same on PostgreSQL,
// where the key is looked up under the audit head's lock.
func TestAppr37PausedAfterClaimAuditedOncePostgres(t *testing.T) {
	url := pgtest.Database(t)
	for _, killed := range []bool{false, true} {
		t.Run(map[bool]string{false: "paused", true: "killed"}[killed], func(t *testing.T) {
			u := url
			if killed {
				u = pgtest.Database(t)
			}
			st, err := postgres.Open(t.Context(), u, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			pausedAfterClaim(t, st, killed)
		})
	}
}
