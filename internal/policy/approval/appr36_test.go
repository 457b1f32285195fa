package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
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

// TestAdopt36PastTheNewestKept: a dead instance's unaudited denial older
// than the newest 1,000 approvals kept (1,001 decided after it) is
// adopted and audited, once. Before, adoption read the live approvals and
// the newest MaxKept only, and never found it.
func TestAdopt36PastTheNewestKept(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	id := deniedUnaudited(t, st, &runs, "a", nil, "7")[0]
	usedAfter(t, st, 1001)
	log := &auditLog{}
	b := newLife(t, st, &runs, &Options{Shared: true, Instance: "b", Audit: log.audit, Audited: log.holds})
	for range 2 {
		if err := b.q.Adopt(t.Context(), func(name string) bool { return name != "a" }); err != nil {
			t.Fatal(err)
		}
	}
	if d := log.of("denied"); len(d) != 1 || d[0].Approval.ID != id || !d[0].Again {
		t.Fatalf("the old denial of dead a was audited as %+v; want once, again", d)
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the adopted action is still marked: %v %s", err, ar.Data)
	}
}

// usedAfter stores n used approvals, each newer than any made before.
func usedAfter(t *testing.T, st store.Approvals, n int) {
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

// TestRestart36PastTheNewestKept: an instance starting again under its
// name audits its earlier life's unaudited denial though 1,001 approvals
// were decided after it (older than the newest 1,000 kept), once, and
// clears its mark. Before, the restart read the live approvals and the
// newest MaxKept only, and never found it.
func TestRestart36PastTheNewestKept(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	id := deniedUnaudited(t, st, &runs, "a", nil, "7")[0]
	usedAfter(t, st, 1001)
	log := &auditLog{}
	for range 2 {
		newLife(t, st, &runs, &Options{Shared: true, Instance: "a", Audit: log.audit, Audited: log.holds})
	}
	if d := log.of("denied"); len(d) != 1 || d[0].Approval.ID != id || !d[0].Again {
		t.Fatalf("the old denial was audited at the restarts as %+v; want once, again", d)
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the action is still marked after the restart: %v %s", err, ar.Data)
	}
}
