package approval

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// restow writes ar back to st changed by edit (its stored approval),
// under id, with its times.
func restow(t *testing.T, st store.Approvals, ar store.ApprovalRecord, id string, created, expires time.Time, edit func(*storedApproval)) {
	t.Helper()
	sa, err := decodeStored(&ar)
	if err != nil {
		t.Fatal(err)
	}
	sa.ID, sa.Created, sa.Expires = id, created, expires
	edit(&sa)
	data, err := json.Marshal(sa)
	if err != nil {
		t.Fatal(err)
	}
	if id != ar.ID {
		ar.Version = 0
	}
	ar.ID, ar.Created, ar.Expires, ar.Data = id, created, expires, data
	if err := st.PutApproval(t.Context(), &ar); err != nil {
		t.Fatal(err)
	}
}

// TestApprfix36OldMarkedKeptInOrder: an instance's unaudited use of an
// approval, older than the newest 1,000 kept, and a newer use of the same
// call: after a restart the inbox lists the newer first, a retry is
// answered by the newer (still in its time, where the old one expired)
// and runs under its id, and the old one is audited again once, its mark
// cleared. Before, Load put the old marked one after every newer one, so
// it answered first: the retry asked for approval anew, and the inbox
// listed it first.
func TestApprfix36OldMarkedKeptInOrder(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	a := newLife(t, st, &runs, &Options{Shared: true, Instance: "a", Audit: func(context.Context, Event) {}})
	id := WaitsFor(refund7(t, a, "r1").Error)
	if _, err := a.q.Approve(id, Actor{Principal: "alice"}, "ok"); err != nil {
		t.Fatal(err)
	}
	if res := refund7(t, a, "r1b"); res.Status != reach.StatusSuccess {
		t.Fatalf("the approved call: %s", res.ModelText())
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil || ar.Status != string(Used) {
		t.Fatalf("the used approval: %v %+v", err, ar)
	}
	now := time.Now()
	restow(t, st, *ar, id, now.Add(-2*time.Hour), now.Add(-time.Hour), func(sa *storedApproval) { sa.Unaudited, sa.Instance = true, "a" })
	usedAfter(t, st, 1001)
	newer := "apr_zz_newer"
	restow(t, st, *ar, newer, now.Add(time.Hour), now.Add(2*time.Hour), func(sa *storedApproval) { sa.Unaudited, sa.Instance = false, "" })

	log := &auditLog{}
	b := newLife(t, st, &runs, &Options{Shared: true, Instance: "a", Audit: log.audit, Audited: log.holds})
	if l := b.q.List(""); len(l) == 0 || l[0].ID != newer {
		t.Errorf("after the restart the inbox lists %v first; want %s (the newest)", l[0].ID, newer)
	}
	b.q.mu.Lock()
	k := keys{req: ar.Key, idem: ar.Alt}
	recent := b.q.usedRecently(k, time.Now())
	last := b.q.lastUsed(k)
	b.q.mu.Unlock()
	if !recent || last == nil || last.ID != newer {
		t.Errorf("the call's last use is %v (recent: %v); want %s, in its time", last.ID, recent, newer)
	}
	if res := refund7(t, b, "r2"); res.Status == reach.StatusPending {
		t.Errorf("a retry after the restart: %s; want it let through under the newer use", res.ModelText())
	}
	if u := log.of("used"); len(u) != 1 || u[0].Approval.ID != id || !u[0].Again {
		t.Errorf("the old use was audited as %+v; want once, again", u)
	}
	got, err := st.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(got.Data), `"unaudited"`) {
		t.Errorf("the old use is still marked: %v %s", err, got.Data)
	}
}

// stallingStore holds the write after the first of a denial (the claim of
// its mark, before its audit: claimed) until the test releases it with
// what it returns, as a PostgreSQL that stops answering until the
// write's context ends; entered says whether that context had a deadline.
type stallingStore struct {
	store.Store
	denials int
	entered chan bool
	release chan error
}

func (s *stallingStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if a.Status == string(Denied) {
		if s.denials++; s.denials == 2 {
			_, bounded := ctx.Deadline()
			s.entered <- bounded
			return <-s.release
		}
	}
	return s.Store.PutApproval(ctx, a)
}

// TestApprfix36ClaimStalls: on a shared store that stops answering when
// an action's mark is claimed before its audit, the claim waits with a
// deadline (syncTimeout), under the queue's lock as every write of its
// records (written outside it, a local change made meanwhile, a waiting
// frame or an expiry, was refused by the claim's version and lost: a
// review found it); timed out, the action is audited all the same (at
// least once: a survivor that took it over meanwhile would audit it too,
// where skipping it could lose it), once, and its mark cleared, so a
// survivor adopting the instance finds nothing to audit. Before, the
// claim's write had no deadline: every approval call of the instance
// waited on the store for as long as it did not answer.
func TestApprfix36ClaimStalls(t *testing.T) {
	ss := &stallingStore{Store: openStore(t, t.TempDir()), entered: make(chan bool), release: make(chan error)}
	var runs atomic.Int32
	log := &auditLog{}
	a := newLife(t, ss, &runs, &Options{Shared: true, Instance: "a", Audit: log.audit, Audited: log.holds})
	id := WaitsFor(refund7(t, a, "r1").Error)
	done := make(chan error)
	go func() {
		_, err := a.q.Deny(id, Actor{Principal: "alice"}, "no")
		done <- err
	}()
	if bounded := <-ss.entered; !bounded {
		t.Error("the claim's write has no deadline")
	}
	ss.release <- context.DeadlineExceeded
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := log.of("denied"); len(d) != 1 || d[0].Again {
		t.Fatalf("the denial was audited as %+v; want once", d)
	}
	ar, err := ss.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the denial is still marked: %v %s", err, ar.Data)
	}
	b := newLife(t, ss, &runs, &Options{Shared: true, Instance: "b", Audit: log.audit, Audited: log.holds})
	if err := b.q.Adopt(t.Context(), func(name string) bool { return name != "a" }); err != nil {
		t.Fatal(err)
	}
	if d := log.of("denied"); len(d) != 1 {
		t.Errorf("after an adoption the denial was audited %d times: %+v; want once", len(d), d)
	}
}
