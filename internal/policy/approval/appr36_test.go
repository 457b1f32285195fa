package approval

import (
	"context"
	"sync/atomic"
	"testing"
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
