package approval

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// failOnceStore fails the first approval write once armed, with an error
// that is not a conflict (the database went away for a moment).
type failOnceStore struct {
	*sqlite.Store
	armed atomic.Bool
}

func (s *failOnceStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if s.armed.CompareAndSwap(true, false) {
		return errors.New("connection reset")
	}
	return s.Store.PutApproval(ctx, a)
}

// deniedUnaudited makes instance deny the approvals of refunds of
// orders, each stored and its denial never audited (the instance is
// killed before the event is appended), and returns their ids. Its other
// actions go to told, if not nil.
func deniedUnaudited(t *testing.T, st *refusingStore, runs *atomic.Int32, instance string, told func(context.Context, Event), orders ...string) []string {
	t.Helper()
	var killed atomic.Bool
	a := newLife(t, st, runs, &Options{Shared: true, Instance: instance, Audit: func(ctx context.Context, e Event) {
		if e.Action == "denied" {
			killed.Store(true)
			st.refuse.Store(true) // killed before the event is appended
			return
		}
		if told != nil {
			told(ctx, e)
		}
	}})
	var ids []string
	for i, order := range orders {
		res := a.rt.Call(a.begin(t, "r"+order), &reach.Call{ID: "c1", Tool: "refund", IdempotencyKey: "refund-" + order,
			Arguments: json.RawMessage(`{"order":"` + order + `"}`)})
		id := WaitsFor(res.Error)
		if id == "" {
			t.Fatalf("refund %d: %s", i, res.ModelText())
		}
		if _, err := a.q.Deny(id, Actor{Principal: "alice"}, "not this one"); err != nil {
			t.Fatal(err)
		}
		st.refuse.Store(false)
		ids = append(ids, id)
	}
	if !killed.Load() {
		t.Fatal("no denial was told to the audit")
	}
	for _, id := range ids {
		ar, err := st.GetApproval(t.Context(), id)
		if err != nil || !strings.Contains(string(ar.Data), `"unaudited":true`) {
			t.Fatalf("approval %s is not marked unaudited: %v", id, err)
		}
	}
	return ids
}

// TestAdopt35PastAFailedWrite: the take-over of one of a dead instance's
// unaudited actions fails (not a conflict); Adopt says so and goes on
// with the others, and a later Adopt takes the one it failed. Before, it
// stopped at the failure and left the rest unaudited.
func TestAdopt35PastAFailedWrite(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	ids := deniedUnaudited(t, st, &runs, "a", nil, "7", "8", "9")
	fs := &failOnceStore{Store: st.Store}
	log := &auditLog{}
	b := newLife(t, fs, &runs, &Options{Shared: true, Instance: "b", Audit: log.audit, Audited: log.holds})
	alive := func(name string) bool { return name != "a" }
	fs.armed.Store(true)
	if err := b.q.Adopt(t.Context(), alive); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("Adopt with a take-over failing: %v; want its error", err)
	}
	if n := len(log.of("denied")); n != len(ids)-1 {
		t.Fatalf("%d denials audited past the failed take-over; want %d", n, len(ids)-1)
	}
	if err := b.q.Adopt(t.Context(), alive); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range log.of("denied") {
		got[e.Approval.ID]++
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("the denial of %s was audited %d times; want 1 (%v)", id, got[id], got)
		}
	}
}

// TestAdopt35RestartClaimFails: an instance starting again under its name
// fails to claim its earlier life's unaudited action for a reason other
// than a conflict (nobody took it over): it audits it all the same.
// Before, any failure was taken for a take-over, and the action was left
// unaudited.
func TestAdopt35RestartClaimFails(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	ids := deniedUnaudited(t, st, &runs, "a", nil, "7")
	fs := &failOnceStore{Store: st.Store}
	fs.armed.Store(true)
	log := &auditLog{}
	newLife(t, fs, &runs, &Options{Shared: true, Instance: "a", Audit: log.audit, Audited: log.holds})
	if fs.armed.Load() {
		t.Fatal("the restart wrote no approval")
	}
	d := log.of("denied")
	if len(d) != 1 || d[0].Approval.ID != ids[0] || !d[0].Again {
		t.Fatalf("the restart audited %+v; want the denial of %s, again", d, ids[0])
	}
	ar, err := st.GetApproval(t.Context(), ids[0])
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the mark is kept once audited: %v %s", err, ar.Data)
	}
}
