package approval

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// decidingStore holds back the next write of a decision (a vote or a
// denial) of one approval, as mode says: "land" answers
// context.DeadlineExceeded and applies the write when the approval is
// read the second time after (SQLite's writer keeps a write queued when
// its caller's context ends, and applies it a moment later); "fail"
// answers a failure and writes nothing; "stall" answers
// context.DeadlineExceeded, writes nothing, and holds every read of the
// approval after it until release is closed or the read's context ends
// (told on readEnded).
type decidingStore struct {
	store.Store
	mu        sync.Mutex
	target    string
	mode      string
	held      *store.ApprovalRecord
	fired     bool
	reads     int
	readIn    chan struct{}
	release   chan struct{}
	readEnded chan struct{}
}

func (s *decidingStore) arm(id, mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target, s.mode = id, mode
	s.readIn, s.release, s.readEnded = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
}

func (s *decidingStore) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	var sa storedApproval
	s.mu.Lock()
	if s.fired || a.ID != s.target || json.Unmarshal(a.Data, &sa) != nil || len(sa.Votes) == 0 && sa.Denial == nil {
		s.mu.Unlock()
		return s.Store.PutApproval(ctx, a)
	}
	s.fired = true
	defer s.mu.Unlock()
	switch s.mode {
	case "fail":
		return errors.New("storing approval " + a.ID + ": disk I/O error")
	case "land":
		cp := *a
		s.held = &cp
	}
	return context.DeadlineExceeded
}

func (s *decidingStore) GetApproval(ctx context.Context, id string) (*store.ApprovalRecord, error) {
	s.mu.Lock()
	if !s.fired || id != s.target {
		s.mu.Unlock()
		return s.Store.GetApproval(ctx, id)
	}
	s.reads++
	if s.mode == "land" && s.reads == 2 && s.held != nil {
		if err := s.Store.PutApproval(context.Background(), s.held); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.held = nil
	}
	mode, in, release, ended := s.mode, s.readIn, s.release, s.readEnded
	first := s.reads == 1
	s.mu.Unlock()
	if mode == "stall" {
		if first {
			close(in)
		}
		select {
		case <-release:
		case <-ctx.Done():
			select {
			case ended <- struct{}{}:
			default:
			}
			return nil, context.Cause(ctx)
		}
	}
	return s.Store.GetApproval(ctx, id)
}

func refund8(t *testing.T, l *life, req string) *reach.Result {
	return l.rt.Call(l.begin(t, req), &reach.Call{ID: "c1", Tool: "refund", IdempotencyKey: "refund-8",
		Arguments: json.RawMessage(`{"order":"8"}`)})
}

// TestAppr38DecisionLandedAfterItsDeadlineStands: a decision whose write
// timed out and that the store applied a moment after is answered as
// made (the store holds it: it stands), saying so, through the API too;
// the approved call runs once, the denied one is refused with the
// denial, and the action is audited once. Before, the decision was
// answered "context deadline exceeded" (500 on the API, "not recorded,
// decided already or not yours" in the UI), while the read-back that
// followed the failed write had found it applied: a human told to
// decide again was then told it was decided already.
func TestAppr38DecisionLandedAfterItsDeadlineStands(t *testing.T) {
	for _, c := range []struct {
		approve, shared bool
	}{{true, false}, {false, false}, {true, true}, {false, true}} {
		approve := c.approve
		action, status, path := "denied", Denied, "/deny"
		if approve {
			action, status, path = "approved", Approved, "/approve"
		}
		name := action
		if c.shared {
			name += " shared" // a store instances share: merged from it (syncID)
		}
		t.Run(name, func(t *testing.T) {
			ts := &decidingStore{Store: openStore(t, t.TempDir())}
			var runs atomic.Int32
			log := &auditLog{}
			o := &Options{Audit: log.audit, Audited: log.holds}
			if c.shared {
				o.Shared, o.Instance = true, "a"
			}
			a := newLife(t, ts, &runs, o)
			id := WaitsFor(refund7(t, a, "r1").Error)
			if id == "" {
				t.Fatal("the call is not pending")
			}
			ts.arm(id, "land")
			srv := httptest.NewServer(a.q.Handler(&HandlerOptions{Actor: func(*http.Request) Actor { return Actor{Principal: "alice"} }}))
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/approvals/"+id+path, "application/json", strings.NewReader(`{"reason":"mine"}`))
			if err != nil {
				t.Fatal(err)
			}
			var v View
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || v.Status != status || v.Notice == "" {
				t.Fatalf("the decision whose write landed after its deadline: %d %v %s notice %q; want 200, %s, saying it stands",
					resp.StatusCode, err, v.Status, v.Notice, status)
			}
			if got, _ := a.q.Get(id); got.Status != status {
				t.Fatalf("the queue holds it %s; want %s", got.Status, status)
			}
			res := refund7(t, a, "r2")
			if approve && (res.Status != reach.StatusSuccess || runs.Load() != 1) {
				t.Fatalf("the approved call: %s, %d runs; want it run once", res.ModelText(), runs.Load())
			}
			if !approve && (res.Status == reach.StatusSuccess || runs.Load() != 0 || !strings.Contains(res.ModelText(), "mine")) {
				t.Fatalf("the denied call: %s, %d runs; want the denial", res.ModelText(), runs.Load())
			}
			if res := refund7(t, a, "r3"); approve && (res.Status != reach.StatusSuccess || runs.Load() != 1) {
				t.Fatalf("the approved call again: %s, %d runs; want its run, once", res.ModelText(), runs.Load())
			}
			if n := len(log.of(action)); n != 1 {
				t.Errorf("%s audited %d times; want once", action, n)
			}
		})
	}
}

// TestAppr38DecisionNotRecordedSaysSo: a decision the store refused is
// answered as not recorded (ErrNotRecorded; 503 not_recorded on the API,
// saying to look again and decide again), the approval stays pending,
// and the same decision made again is recorded and lets the call run
// once. Before, the API answered 500 internal with no word of what to
// do.
func TestAppr38DecisionNotRecordedSaysSo(t *testing.T) {
	ts := &decidingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	log := &auditLog{}
	a := newLife(t, ts, &runs, &Options{Audit: log.audit, Audited: log.holds})
	id := WaitsFor(refund7(t, a, "r1").Error)
	if id == "" {
		t.Fatal("the call is not pending")
	}
	ts.arm(id, "fail")
	srv := httptest.NewServer(a.q.Handler(&HandlerOptions{Actor: func(*http.Request) Actor { return Actor{Principal: "alice"} }}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/approvals/"+id+"/approve", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error struct{ Code, Message, Suggestion string } `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "not_recorded" ||
		!strings.Contains(e.Error.Suggestion, "decide it again") {
		t.Fatalf("the decision the store refused: %d %v %+v; want 503 not_recorded saying to decide again", resp.StatusCode, err, e.Error)
	}
	if got, _ := a.q.Get(id); got.Status != Pending || len(got.Votes) != 0 {
		t.Fatalf("the approval after it: %s %v; want pending, no vote", got.Status, got.Votes)
	}
	if _, err := a.q.Approve(id, Actor{Principal: "alice"}, ""); err != nil {
		t.Fatalf("the decision made again: %v", err)
	}
	if res := refund7(t, a, "r2"); res.Status != reach.StatusSuccess || runs.Load() != 1 {
		t.Fatalf("the approved call: %s, %d runs; want it run once", res.ModelText(), runs.Load())
	}
	if n := len(log.of("approved")); n != 1 {
		t.Errorf("approved audited %d times; want once", n)
	}
}

// TestAppr38ReadBackOffTheLock: while a decision's write that failed is
// read back from a store slow to answer, the queue's other approvals are
// decided and their calls answered: the read-back does not hold the
// queue's lock. Before, it was made under the lock, for up to 5 s after
// the write's own 5 s, and every decision and every call waiting on an
// approval waited behind it.
func TestAppr38ReadBackOffTheLock(t *testing.T) {
	ts := &decidingStore{Store: openStore(t, t.TempDir())}
	var runs atomic.Int32
	a := newLife(t, ts, &runs, nil)
	slow := WaitsFor(refund7(t, a, "r1").Error)
	other := WaitsFor(refund8(t, a, "r2").Error)
	if slow == "" || other == "" || slow == other {
		t.Fatal("the calls are not pending, each on its approval")
	}
	ts.arm(slow, "stall")
	done := make(chan error, 1)
	go func() {
		_, err := a.q.Approve(slow, Actor{Principal: "alice"}, "")
		done <- err
	}()
	<-ts.readIn // the slow one's write failed, and it is being read back
	decided := make(chan error, 1)
	go func() {
		_, err := a.q.Approve(other, Actor{Principal: "alice"}, "")
		if err == nil {
			if res := refund8(t, a, "r3"); res.Status != reach.StatusSuccess {
				err = errors.New(res.ModelText())
			}
		}
		decided <- err
	}()
	select {
	case err := <-decided:
		if err != nil {
			t.Fatalf("the other approval, decided meanwhile: %v", err)
		}
	case <-ts.readEnded:
		t.Fatal("the other approval waited until the slow one's read-back gave up: the read-back holds the queue's lock")
	}
	close(ts.release)
	if err := <-done; !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("the slow one, not in the store: %v; want ErrNotRecorded", err)
	}
	if got, _ := a.q.Get(slow); got.Status != Pending {
		t.Fatalf("the slow one is %s; want pending", got.Status)
	}
}

// TestAppr38OnceKeysNamedForTheSweep: every action an approval audits,
// under every requirement, is one whose audit key (Event.Once) the
// retention sweep names when it removes the approval
// (store.ApprovalOnceActions, ApprovalOnceRequires): a key it did not
// name would stay for good.
func TestAppr38OnceKeysNamedForTheSweep(t *testing.T) {
	for _, s := range []Status{Pending, Approved, Used, Denied, Expired} {
		for _, votes := range []int{0, 1} {
			rec := &record{Approval: Approval{ID: "apr_1", Status: s, Requires: User}}
			if votes > 0 {
				rec.Votes = []Vote{{By: "alice", As: "user"}}
			}
			q := New(nil)
			e := q.reaudit(time.Now(), rec, "")
			if !slices.Contains(store.ApprovalOnceActions, e.Action) {
				t.Errorf("action %q (an approval %s) is not one the sweep names", e.Action, s)
			}
		}
	}
	for _, r := range []string{User, UserAndReviewer} {
		if !slices.Contains(store.ApprovalOnceRequires, r) {
			t.Errorf("requirement %q is not one the sweep names", r)
		}
	}
	e := Event{Action: "denied", Approval: Approval{ID: "apr_1", Requires: UserAndReviewer}}
	if got, want := e.Once(), store.ApprovalOnce("apr_1", "denied", UserAndReviewer); got != want {
		t.Errorf("Once = %q; want the store's key %q", got, want)
	}
}

// unreadStore is a store instances share whose reads of approvals fail
// (the database is down).
type unreadStore struct{ store.Store }

func (unreadStore) GetApproval(context.Context, string) (*store.ApprovalRecord, error) {
	return nil, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
}

// TestAppr38UnknownWhileTheStoreIsDown: an instance sharing a store that
// does not answer, asked for an approval it does not know (asked through
// another instance), says it cannot tell (ErrUnreadable: the API's 503
// store_unavailable, a decision's ErrNotRecorded), not that there is no
// such approval. Before, the human deciding an approval that waited was
// told it did not exist (404), and to list the approvals.
func TestAppr38UnknownWhileTheStoreIsDown(t *testing.T) {
	q := New(&Options{Store: unreadStore{openStore(t, t.TempDir())}, Shared: true, Instance: "b"})
	const id = "apr_0123456789abcdef0123456789abcdef"
	if _, ok, err := q.Find(id); ok || !errors.Is(err, ErrUnreadable) {
		t.Errorf("Find of an approval not known here, the store down: %v %v; want ErrUnreadable", ok, err)
	}
	if _, err := q.Approve(id, Actor{Principal: "alice"}, ""); !errors.Is(err, ErrNotRecorded) || errors.Is(err, ErrNotFound) {
		t.Errorf("Approve of it: %v; want ErrNotRecorded, not ErrNotFound", err)
	}
	srv := httptest.NewServer(q.Handler(&HandlerOptions{Actor: func(*http.Request) Actor { return Actor{Principal: "alice"} }}))
	defer srv.Close()
	for _, c := range []struct{ method, path string }{{"GET", ""}, {"POST", "/approve"}, {"POST", "/deny"}} {
		req, _ := http.NewRequest(c.method, srv.URL+"/v1/approvals/"+id+c.path, strings.NewReader(`{"reason":"no"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Code, Suggestion string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "store_unavailable" {
			t.Errorf("%s %s: %d %+v; want 503 store_unavailable", c.method, c.path, resp.StatusCode, e.Error)
		}
	}
}
