package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestAdopt36AsksTheAuditLogOnce: a survivor adopting three actions a
// dead instance stored and did not audit asks the audit log about them
// once (Options.Audited, all three), so that a request's log is read
// once, and audits each once. Before, it asked once an action.
func TestAdopt36AsksTheAuditLogOnce(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	ids := deniedUnaudited(t, st, &runs, "a", nil, "7", "8", "9")
	log := &auditLog{}
	var asked, about atomic.Int32
	audited := func(ctx context.Context, es []Event) []bool {
		asked.Add(1)
		about.Add(int32(len(es)))
		return log.holds(ctx, es)
	}
	b := newLife(t, st, &runs, &Options{Shared: true, Instance: "b", Audit: log.audit, Audited: audited})
	if err := b.q.Adopt(t.Context(), func(name string) bool { return name != "a" }); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 || about.Load() != int32(len(ids)) {
		t.Errorf("the audit log was asked %d times about %d actions; want once about %d", asked.Load(), about.Load(), len(ids))
	}
	if n := len(log.of("denied")); n != len(ids) {
		t.Errorf("%d denials audited; want %d", n, len(ids))
	}
}

// usedAfter stores n used approvals, each newer than any made before.
func usedAfter(t testing.TB, st store.Approvals, n int) {
	t.Helper()
	later := time.Now().Add(time.Minute)
	for i := range n {
		a := Approval{ID: fmt.Sprint("apr_later_", i), Status: Used, Requires: User, Tool: "refund", Principal: "alice",
			Request: "r", RootRequest: "r", Created: later.Add(time.Duration(i) * time.Millisecond), Expires: later.Add(time.Hour)}
		data, err := json.Marshal(storedApproval{Approval: a, Key: "k" + a.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutApproval(t.Context(), &store.ApprovalRecord{ID: a.ID, Key: "k" + a.ID, Status: string(a.Status),
			Created: a.Created, Expires: a.Expires, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAppr36PastTheNewestKept: a dead instance's unaudited denial, 1,001
// approvals decided after it (older than the newest 1,000 kept), is
// audited once, its mark cleared, by a survivor's adoptions, and by the
// instance's restarts under its name. Before, both read the live
// approvals and the newest MaxKept only, and never found it.
func TestAppr36PastTheNewestKept(t *testing.T) {
	for _, by := range []string{"b", "a"} {
		t.Run("by_"+by, func(t *testing.T) {
			st := &refusingStore{Store: openStore(t, t.TempDir())}
			var runs atomic.Int32
			id := deniedUnaudited(t, st, &runs, "a", nil, "7")[0]
			usedAfter(t, st, 1001)
			log := &auditLog{}
			for range 2 {
				l := newLife(t, st, &runs, &Options{Shared: true, Instance: by, Audit: log.audit, Audited: log.holds})
				if err := l.q.Adopt(t.Context(), func(name string) bool { return name != "a" }); err != nil {
					t.Fatal(err)
				}
			}
			if d := log.of("denied"); len(d) != 1 || d[0].Approval.ID != id || !d[0].Again {
				t.Fatalf("the old denial of a was audited as %+v; want once, again", d)
			}
			ar, err := st.GetApproval(t.Context(), id)
			if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
				t.Errorf("the action is still marked: %v %s", err, ar.Data)
			}
		})
	}
}

// hookStore runs after, once, when an approval written to it is denied:
// between the instance's write of its denial and what follows it.
type hookStore struct {
	store.Store
	after func()
}

func (s *hookStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	err := s.Store.PutApproval(ctx, a)
	if h := s.after; err == nil && h != nil && a.Status == string(Denied) {
		s.after = nil
		h()
	}
	return err
}

// revivedDuringAdoption: instance a denies an approval and, found dead
// (paused, cut off) right after its write, is adopted by b: either
// between a's write of the denial and its audit (adopterFirst), or after
// a's audit event and before its mark's clearing. a then goes on. The
// denial is audited exactly once either way: by b first (a's claim is
// refused), else by a (b's take-over is refused, or finds a's event).
func revivedDuringAdoption(t *testing.T, st store.Store, adopterFirst bool) {
	var runs atomic.Int32
	log := &auditLog{}
	b := newLife(t, st, &runs, &Options{Shared: true, Instance: "b", Audit: log.audit, Audited: log.holds})
	adopt := func() {
		if err := b.q.Adopt(t.Context(), func(name string) bool { return name != "a" }); err != nil {
			t.Error(err)
		}
	}
	hs := &hookStore{Store: st}
	audit := log.audit
	if adopterFirst {
		hs.after = adopt
	} else {
		adopted := false
		audit = func(ctx context.Context, e Event) {
			log.audit(ctx, e)
			if e.Action == "denied" && !adopted {
				adopted = true
				adopt()
			}
		}
	}
	a := newLife(t, hs, &runs, &Options{Shared: true, Instance: "a", Audit: audit, Audited: log.holds})
	id := WaitsFor(refund7(t, a, "r1").Error)
	if _, err := a.q.Deny(id, Actor{Principal: "alice"}, "no"); err != nil {
		t.Fatal(err)
	}
	adopt() // and once more, after a went on
	d := log.of("denied")
	if len(d) != 1 {
		t.Fatalf("the denial was audited %d times: %+v; want once", len(d), d)
	}
	if by := strings.Contains(d[0].Reason, "instance b"); by != adopterFirst {
		t.Errorf("the denial was audited as %q; want it by b: %v", d[0].Reason, adopterFirst)
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the denial is still marked: %v %s", err, ar.Data)
	}
	// Nor is it marked as a's own in a's memory: prune keeps a record
	// only while its own mark waits for its audit, and one taken over
	// stayed for the life of the process (a review found it).
	a.q.mu.Lock()
	rec := a.q.byID[id]
	if rec != nil && a.q.marked(rec) {
		t.Errorf("a's record of the denial is still marked as a's own (version %d), kept by prune for good", rec.version)
	}
	a.q.mu.Unlock()
}

// TestAppr36RevivedDuringAdoption: revivedDuringAdoption on SQLite. With
// the survivor first, a audited the denial too before (its audit asked
// nothing of the store).
func TestAppr36RevivedDuringAdoption(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run(map[bool]string{true: "adopter_first", false: "revived_first"}[first], func(t *testing.T) {
			revivedDuringAdoption(t, openStore(t, t.TempDir()), first)
		})
	}
}

// TestAppr36RevivedDuringAdoptionPostgres: the same on PostgreSQL.
func TestAppr36RevivedDuringAdoptionPostgres(t *testing.T) {
	c := pgtest.Own(t)
	for i, first := range []bool{true, false} {
		t.Run(map[bool]string{true: "adopter_first", false: "revived_first"}[first], func(t *testing.T) {
			url, err := c.CreateDatabase(t.Context(), fmt.Sprint("appr36_", i))
			if err != nil {
				t.Fatal(err)
			}
			st, err := postgres.Open(t.Context(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			revivedDuringAdoption(t, st, first)
		})
	}
}

// BenchmarkAdoptOfNone: an adoption over a SQLite store keeping 5,000
// decided approvals, none marked: what each recovery, and the periodic
// sweep, costs when there is nothing to adopt.
func BenchmarkAdoptOfNone(b *testing.B) {
	st := openStore(b, b.TempDir())
	usedAfter(b, st, 5000)
	var runs atomic.Int32
	l := newLife(b, st, &runs, &Options{Shared: true, Instance: "b", Audit: func(context.Context, Event) {}})
	for b.Loop() {
		if err := l.q.Adopt(b.Context(), func(string) bool { return false }); err != nil {
			b.Fatal(err)
		}
	}
}
