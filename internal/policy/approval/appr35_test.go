package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// refusingStore refuses every approval write once refuse is set: the
// write that clears an action's unaudited mark, after its audit event,
// never lands, as when the gateway is killed between the two.
type refusingStore struct {
	*sqlite.Store
	refuse atomic.Bool
}

func (s *refusingStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if s.refuse.Load() {
		return errors.New("refused: killed")
	}
	return s.Store.PutApproval(ctx, a)
}

// auditLog is an audit log the way the gateway's is read back by
// Options.Audited: the events appended, found by their approval, action
// and requirement.
type auditLog struct {
	told
}

func (l *auditLog) holds(_ context.Context, es []Event) []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := make([]bool, len(es))
	for i, e := range es {
		for _, ev := range l.events {
			if ev.Approval.ID == e.Approval.ID && ev.Action == e.Action && ev.Approval.Requires == e.Approval.Requires {
				held[i] = true
			}
		}
	}
	return held
}

// TestAppr35ReauditFindsEventWritten: killed after an action's audit
// event and before its mark's clearing, the restart asks the audit log
// (Options.Audited), finds the event written, audits nothing again and
// clears the mark. Before, the restart audited the action a second time.
func TestAppr35ReauditFindsEventWritten(t *testing.T) {
	for _, action := range []string{"requested", "denied"} {
		t.Run(action, func(t *testing.T) {
			st := &refusingStore{Store: openStore(t, t.TempDir())}
			var runs atomic.Int32
			log := &auditLog{}
			o := &Options{Audit: func(ctx context.Context, e Event) {
				log.audit(ctx, e)
				if e.Action == action {
					st.refuse.Store(true) // killed once the event is appended
				}
			}}
			a := newLife(t, st, &runs, o)
			id := WaitsFor(refund7(t, a, "r1").Error)
			if action == "denied" {
				if _, err := a.q.Deny(id, Actor{Principal: "alice"}, "no"); err != nil {
					t.Fatal(err)
				}
			}
			st.refuse.Store(false)
			ar, err := st.GetApproval(t.Context(), id)
			if err != nil || !strings.Contains(string(ar.Data), `"unaudited":true`) {
				t.Fatalf("the action's mark was cleared, or the approval is gone: %v %s", err, ar.Data)
			}
			b := newLife(t, st, &runs, &Options{Audit: log.audit, Audited: log.holds})
			if n := len(log.of(action)); n != 1 {
				t.Errorf("the audit log holds %d %s events after the restart; want 1: %+v", n, action, log.of(action))
			}
			ar, err = st.GetApproval(t.Context(), id)
			if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
				t.Errorf("the mark is kept after the restart found its event: %v %s", err, ar.Data)
			}
			_ = b
			newLife(t, st, &runs, &Options{Audit: log.audit, Audited: log.holds})
			if n := len(log.of(action)); n != 1 {
				t.Errorf("a second restart: %d %s events; want 1", n, action)
			}
		})
	}
}

// TestAppr35AdoptDeadInstance: an action instance a stored and did not
// audit (a kill between the two), a never starting again under its name,
// is audited by the instances that share the store once a is dead
// (Adopt), exactly once among them however many adopt at once; not while
// a lives, and not again after.
func TestAppr35AdoptDeadInstance(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	log := &auditLog{}
	id := deniedUnaudited(t, st, &runs, "a", log.audit, "7")[0]
	var lives []*life
	for _, name := range []string{"b", "c", "d"} {
		lives = append(lives, newLife(t, st, &runs, &Options{Shared: true, Instance: name, Audit: log.audit, Audited: log.holds}))
	}
	alive := func(name string) bool { return name != "a" }
	if err := lives[0].q.Adopt(t.Context(), func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if n := len(log.of("denied")); n != 0 {
		t.Fatalf("the denial of a, alive, was audited %d times by another instance", n)
	}
	var wg sync.WaitGroup
	for _, l := range lives {
		wg.Go(func() {
			if err := l.q.Adopt(t.Context(), alive); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	d := log.of("denied")
	if len(d) != 1 || d[0].By != "alice" || !strings.Contains(d[0].Reason, "not this one") || !d[0].Again {
		t.Fatalf("the denial of dead a was audited as %+v; want once, by alice, her reason with it, audited again", d)
	}
	for _, l := range lives {
		if err := l.q.Adopt(t.Context(), alive); err != nil {
			t.Fatal(err)
		}
	}
	newLife(t, st, &runs, &Options{Shared: true, Instance: "a", Audit: log.audit, Audited: log.holds})
	if n := len(log.of("denied")); n != 1 {
		t.Errorf("after more adoptions and a's return: %d denied events; want 1", n)
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil || strings.Contains(string(ar.Data), `"unaudited"`) {
		t.Errorf("the adopted action is still marked: %v %s", err, ar.Data)
	}
}

// TestAppr35FramesPastMaxRoots: 300 requests wait for one approval (the
// call repeated with its idempotency key, each in a request of its own):
// its decision's event names a frame of every one of them, though the
// store lists 256 (maxRoots), so the running gateway settles them all.
// Before, the frames of the requests past the 256th stayed waiting until
// their graphs were read back from the store.
func TestAppr35FramesPastMaxRoots(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	log := &auditLog{}
	l := newLife(t, st, &runs, &Options{Audit: log.audit})
	const n = 300
	id := ""
	for i := range n {
		res := refund7(t, l, fmt.Sprint("r", i))
		if res.Status != reach.StatusPending {
			t.Fatalf("call %d: %s", i, res.ModelText())
		}
		if id == "" {
			id = WaitsFor(res.Error)
		}
	}
	ar, err := st.GetApproval(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var stored Approval
	if err := json.Unmarshal(ar.Data, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Frames) > maxRoots {
		t.Errorf("the store lists %d frames; want at most %d", len(stored.Frames), maxRoots)
	}
	if _, err := l.q.Deny(id, Actor{Principal: "alice"}, "no"); err != nil {
		t.Fatal(err)
	}
	d := log.of("denied")
	if len(d) != 1 {
		t.Fatalf("%d denied events", len(d))
	}
	roots := map[string]bool{}
	for i := range d[0].Approval.Frames {
		roots[d[0].Approval.FrameRoot(i)] = true
	}
	for i := range n {
		if r := fmt.Sprint("r", i); !roots[r] {
			t.Errorf("the denial names no frame of request %s (%d requests named of %d)", r, len(roots), n)
			break
		}
	}
	if got, _ := l.q.Get(id); len(got.Frames) > maxRoots {
		t.Errorf("the approval shown lists %d frames; want at most %d", len(got.Frames), maxRoots)
	}
}

// listHookStore runs hook once, after its first listing of the newest
// approvals (live or not: Load's second).
type listHookStore struct {
	*sqlite.Store
	hook func()
}

func (s *listHookStore) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]*store.ApprovalRecord, error) {
	ars, err := s.Store.ListApprovals(ctx, f)
	if h := s.hook; h != nil && !f.Live {
		s.hook = nil
		h()
	}
	return ars, err
}

// TestAppr35RestartRacingAdoption: instance b starts again under its name
// while c, which found b dead, takes over b's unaudited denial between
// b's reading of it and its audit: the action is audited once, by c (b's
// restart claims it first, conditionally on its version, and finds it
// taken). Before, both audited it.
func TestAppr35RestartRacingAdoption(t *testing.T) {
	st := &refusingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	log := &auditLog{}
	deniedUnaudited(t, st, &runs, "b", log.audit, "7")
	c := newLife(t, st, &runs, &Options{Shared: true, Instance: "c", Audit: log.audit})
	hs := &listHookStore{Store: st.Store}
	hs.hook = func() {
		if err := c.q.Adopt(t.Context(), func(name string) bool { return name != "b" }); err != nil {
			t.Error(err)
		}
	}
	newLife(t, hs, &runs, &Options{Shared: true, Instance: "b", Audit: log.audit})
	if d := log.of("denied"); len(d) != 1 || !strings.Contains(d[0].Reason, "instance c") {
		t.Errorf("the denial was audited as %+v; want once, by c", d)
	}
}
