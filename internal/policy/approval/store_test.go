package approval

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// life is one run of a gateway over a store: a runtime with its queue, as
// a restart makes them anew.
type life struct {
	rt *reach.Runtime
	q  *Queue
}

func newLife(t testing.TB, st store.Store, runs *atomic.Int32, o *Options) *life {
	t.Helper()
	eng := policy.New(nil)
	if o == nil {
		o = &Options{}
	}
	if o.Requires == nil {
		o.Requires = eng.Requirement
	}
	o.Store = st
	l := &life{q: New(o)}
	if err := l.q.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.rt = reach.New(&reach.Options{Authorizer: eng, Approver: l.q.Approver(), ApprovalKey: l.q.ApprovalKey, Idempotency: store.NewIdempotency(st, nil)})
	run := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	}
	l.rt.MustRegister(reach.Tool{Name: "refund", Access: reach.Write, Func: run},
		reach.Tool{Name: "close_account", Access: reach.HighRisk, Func: run})
	return l
}

func (l *life) begin(t *testing.T, id string) context.Context {
	t.Helper()
	ctx, req, err := l.rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Principal: "alice", Budget: &reach.Budget{Turns: 100}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(req.End)
	return ctx
}

func openStore(t testing.TB, dir string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestApprovalsSurviveRestart: a pending approval keeps its vote and
// expiry across a restart; decided after it, the agent's repeated call
// (same idempotency key, in a new request) runs exactly once, and its
// retries are answered by that run, across another restart too.
func TestApprovalsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	close := func(l *life) *reach.Result {
		return l.rt.Call(l.begin(t, "req-"+time.Now().Format("150405.000000000")), &reach.Call{ID: "c1", Tool: "close_account",
			IdempotencyKey: "close-42", Arguments: json.RawMessage(`{"account":"42"}`)})
	}
	st := openStore(t, dir)
	first := newLife(t, st, &runs, nil)
	if res := close(first); res.Status != reach.StatusPending {
		t.Fatalf("first call: %s %+v", res.Status, res.Error)
	}
	a := first.q.List(Pending)[0]
	if _, err := first.q.Approve(a.ID, alice, "ok by me"); err != nil { // one of two votes: user+reviewer
		t.Fatal(err)
	}
	st.Close()

	st = openStore(t, dir)
	second := newLife(t, st, &runs, nil)
	got, ok := second.q.Get(a.ID)
	if !ok || got.Status != Pending || len(got.Votes) != 1 || got.Votes[0].By != "alice" || !got.Expires.Equal(a.Expires) ||
		got.Tool != "close_account" || got.Requires != UserAndReviewer {
		t.Fatalf("after a restart: %+v, %v; want it pending with alice's vote and its expiry", got, ok)
	}
	if res := close(second); res.Status != reach.StatusPending || !strings.Contains(res.Error.Message, a.ID) {
		t.Fatalf("the repeated call before the decision: %s %+v; want pending on %s", res.Status, res.Error, a.ID)
	}
	if n := len(second.q.List("")); n != 1 {
		t.Errorf("%d approvals after the repeated call, want the one", n)
	}
	if _, err := second.q.Approve(a.ID, carol, "checked"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res := close(second)
		if res.Status != reach.StatusSuccess || (i > 0) != res.Replayed {
			t.Fatalf("repeated call %d after the approval: %s replayed=%v %+v", i, res.Status, res.Replayed, res.Error)
		}
	}
	st.Close()

	st = openStore(t, dir)
	third := newLife(t, st, &runs, nil)
	if res := close(third); res.Status != reach.StatusSuccess || !res.Replayed {
		t.Errorf("after another restart: %s replayed=%v %+v; want the recorded result", res.Status, res.Replayed, res.Error)
	}
	if got, _ := third.q.Get(a.ID); got.Status != Used || len(got.Votes) != 2 {
		t.Errorf("the approval after another restart: %+v", got)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the approved call ran %d times, want once", n)
	}
}

// TestApprovalOfEndedRequestAfterRestart: the request ended before the
// restart; the agent repeats the same call in a request of the same id
// after the approval: it runs once.
func TestApprovalOfEndedRequestAfterRestart(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	call := func(ctx context.Context, l *life) *reach.Result {
		return l.rt.Call(ctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(`{"order":"7"}`)})
	}
	st := openStore(t, dir)
	o := func() *Options { return &Options{Requires: func(context.Context, *reach.Call) string { return User }} }
	first := newLife(t, st, &runs, o())
	first.rt.Replace(reach.Tool{Name: "refund", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{}`), nil
	}})
	if res := call(first.begin(t, "trip"), first); res.Status != reach.StatusPending {
		t.Fatalf("first call: %s", res.Status)
	}
	st.Close()
	st = openStore(t, dir)
	second := newLife(t, st, &runs, o())
	second.rt.Replace(reach.Tool{Name: "refund", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{}`), nil
	}})
	if _, err := second.q.Approve(second.q.List(Pending)[0].ID, alice, ""); err != nil {
		t.Fatal(err)
	}
	ctx := second.begin(t, "trip")
	if res := call(ctx, second); res.Status != reach.StatusSuccess || res.Replayed {
		t.Fatalf("the repeated call: %s %+v", res.Status, res.Error)
	}
	if res := call(ctx, second); res.Status != reach.StatusSuccess || !res.Replayed || runs.Load() != 1 {
		t.Errorf("its retry: %s replayed=%v, runs %d; want the recorded result, one run", res.Status, res.Replayed, runs.Load())
	}
}

// TestApprovalExpiresWhileDown: an approval whose time ran out while the
// gateway was down is expired when it is read back, and stays so.
func TestApprovalExpiresWhileDown(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	st := openStore(t, dir)
	first := newLife(t, st, &runs, &Options{TTL: 50 * time.Millisecond})
	first.rt.Call(first.begin(t, "r1"), &reach.Call{ID: "c1", Tool: "close_account", Arguments: json.RawMessage(`{}`)})
	id := first.q.List(Pending)[0].ID
	st.Close()
	time.Sleep(60 * time.Millisecond)
	st = openStore(t, dir)
	second := newLife(t, st, &runs, nil)
	if a, _ := second.q.Get(id); a.Status != Expired {
		t.Errorf("read back after its expiry: %s, want expired", a.Status)
	}
	if rec, err := st.GetApproval(t.Context(), id); err != nil || rec.Status != string(Expired) {
		t.Errorf("stored: %+v, %v; want expired", rec, err)
	}
}

// TestApprovalNotRecorded: a call whose approval the store cannot record
// is refused as transient, and leaves no approval behind.
func TestApprovalNotRecorded(t *testing.T) {
	var runs atomic.Int32
	st := openStore(t, t.TempDir())
	l := newLife(t, st, &runs, nil)
	st.Close()
	res := l.rt.Call(l.begin(t, "r1"), &reach.Call{ID: "c1", Tool: "close_account", Arguments: json.RawMessage(`{}`)})
	if res.Error == nil || res.Error.Code != "approval_store" || res.Error.Type != reach.TypeTransient {
		t.Errorf("a call whose approval cannot be recorded: %s %+v", res.Status, res.Error)
	} else if m := res.Error.Message; strings.Contains(m, "sql") || strings.Contains(m, "closed") {
		t.Errorf("the refusal carries the store's own error text: %q", m)
	}
	if n := len(l.q.List("")); n != 0 || runs.Load() != 0 {
		t.Errorf("%d approvals, %d runs; want none", n, runs.Load())
	}
	if _, err := l.q.Approve("apr_x", alice, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Approve(unknown) = %v", err)
	}
}

// TestApprovalsAcrossInstances: two instances share a store; an approval
// asked on one is decided on the other, which never saw it; the agent's
// repeated call then runs once, on either; a call held on one wakes when
// the other decides.
func TestApprovalsAcrossInstances(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	a := newLife(t, st, &runs, &Options{Shared: true})
	b := newLife(t, st, &runs, &Options{Shared: true})
	closeOn := func(l *life, req, key string) *reach.Result {
		return l.rt.Call(l.begin(t, req), &reach.Call{ID: "c1", Tool: "close_account", IdempotencyKey: key,
			Arguments: json.RawMessage(`{"account":"42"}`)})
	}
	approve := func(l *life, id string) {
		t.Helper()
		for _, by := range []Actor{{Principal: "alice"}, {Principal: "rev", Roles: []string{"reviewer"}}} {
			if _, err := l.q.Approve(id, by, "ok"); err != nil {
				t.Fatalf("approving %s on the other instance: %v", id, err)
			}
		}
	}
	res := closeOn(a, "ra", "close-42")
	if res.Status != reach.StatusPending {
		t.Fatalf("the first call on A: %s", res.ModelText())
	}
	pending := b.q.List(Pending) // B lists what A asked
	if len(pending) != 1 {
		t.Fatalf("B lists %d pending approvals, want A's one", len(pending))
	}
	approve(b, pending[0].ID)
	if res := closeOn(a, "ra2", "close-42"); res.Status != reach.StatusSuccess || runs.Load() != 1 {
		t.Fatalf("the repeated call on A: %s, %d runs", res.ModelText(), runs.Load())
	}
	if res := closeOn(b, "rb", "close-42"); res.Status != reach.StatusSuccess || !res.Replayed || runs.Load() != 1 {
		t.Fatalf("the call repeated on B: %s (replayed %v), %d runs; want A's result, 1 run", res.ModelText(), res.Replayed, runs.Load())
	}

	// A call held on A is let through when B decides.
	held := newLife(t, st, &runs, &Options{Shared: true, Wait: time.Minute})
	done := make(chan *reach.Result, 1)
	go func() { done <- closeOn(held, "rh", "close-43") }()
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, p := range b.q.List(Pending) {
			id = p.ID
		}
	}
	if id == "" {
		t.Fatal("the held call's approval never reached the store")
	}
	approve(b, id)
	select {
	case res := <-done:
		if res.Status != reach.StatusSuccess || runs.Load() != 2 {
			t.Fatalf("the held call: %s, %d runs", res.ModelText(), runs.Load())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held call did not wake when the other instance approved it")
	}
}

// TestEndWithRequests: the approvals of calls in requests that can no
// longer go on (interrupted, stopped) end when they carry no idempotency
// key, saying why, durably, and are not found by any later call; one the
// caller's key names stays pending, as does one of another request, and a
// used one stays used.
func TestEndWithRequests(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	st := openStore(t, dir)
	o := func() *Options { return &Options{Requires: func(context.Context, *reach.Call) string { return User }} }
	l := newLife(t, st, &runs, o())
	ask := l.begin(t, "ask")
	keyless := l.rt.Call(ask, &reach.Call{ID: "c1", Tool: "close_account", Arguments: json.RawMessage(`{"account":"1"}`)})
	keyed := l.rt.Call(ask, &reach.Call{ID: "c2", Tool: "close_account", IdempotencyKey: "k-2", Arguments: json.RawMessage(`{"account":"2"}`)})
	other := l.rt.Call(l.begin(t, "other"), &reach.Call{ID: "c1", Tool: "close_account", Arguments: json.RawMessage(`{"account":"3"}`)})
	for _, r := range []*reach.Result{keyless, keyed, other} {
		if r.Status != reach.StatusPending {
			t.Fatalf("a first call: %s %+v", r.Status, r.Error)
		}
	}
	byArgs := func(q *Queue) map[string]Approval {
		m := map[string]Approval{}
		for _, a := range q.List("") {
			m[string(a.Arguments)] = a
		}
		return m
	}
	if n := l.q.EndWithRequests(t.Context(), []string{"ask"}, "was interrupted by a restart of the gateway"); n != 1 {
		t.Errorf("ended %d approvals, want the one without a key", n)
	}
	st.Close()
	st = openStore(t, dir)
	l2 := newLife(t, st, &runs, o())
	got := byArgs(l2.q)
	if a := got[`{"account":"1"}`]; a.Status != Expired || !strings.Contains(a.Note, "Request ask was interrupted") || !strings.Contains(a.Note, "asks for approval again") {
		t.Errorf("the approval without a key, read back: %s %q", a.Status, a.Note)
	}
	if a := got[`{"account":"2"}`]; a.Status != Pending {
		t.Errorf("the approval the key names: %s, want pending", a.Status)
	}
	if a := got[`{"account":"3"}`]; a.Status != Pending {
		t.Errorf("another request's approval: %s, want pending", a.Status)
	}
	if _, err := l2.q.Approve(got[`{"account":"1"}`].ID, alice, ""); !errors.Is(err, ErrDecided) {
		t.Errorf("approving the ended one: %v, want ErrDecided", err)
	}
	// The key still finds its approval from a new request; approved, it
	// runs once, and a second end leaves the used approval as it is.
	if _, err := l2.q.Approve(got[`{"account":"2"}`].ID, alice, ""); err != nil {
		t.Fatal(err)
	}
	res := l2.rt.Call(l2.begin(t, "new"), &reach.Call{ID: "c9", Tool: "close_account", IdempotencyKey: "k-2", Arguments: json.RawMessage(`{"account":"2"}`)})
	if res.Status != reach.StatusSuccess || runs.Load() != 1 {
		t.Fatalf("the keyed call in a new request: %s %+v, runs %d", res.Status, res.Error, runs.Load())
	}
	if n := l2.q.EndWithRequests(t.Context(), []string{"ask", "new"}, "was stopped"); n != 0 {
		t.Errorf("a second end ended %d, want none", n)
	}
	if a, _ := l2.q.Get(got[`{"account":"2"}`].ID); a.Status != Used {
		t.Errorf("the used approval: %s", a.Status)
	}
}

// TestEndWithRequestsShared: on a store instances share, the instance
// whose recovery found a request interrupted ends its approvals although
// it never read one (the wake-up of its writing missed) and holds an
// older copy of another (a vote cast on the instance that asked): both
// end in the store, not only in this instance's memory.
func TestEndWithRequestsShared(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	o := func() *Options {
		return &Options{Shared: true, Requires: func(context.Context, *reach.Call) string { return UserAndReviewer }}
	}
	a := newLife(t, st, &runs, o())
	b := newLife(t, st, &runs, o())
	ask := func(req, account string) {
		t.Helper()
		res := a.rt.Call(a.begin(t, req), &reach.Call{ID: "c1", Tool: "close_account", Arguments: json.RawMessage(`{"account":"` + account + `"}`)})
		if res.Status != reach.StatusPending {
			t.Fatalf("the call in %s: %s", req, res.ModelText())
		}
	}
	ask("voted", "1")
	seen := b.q.List(Pending) // b reads it, then a's user votes: b's copy is older
	if len(seen) != 1 {
		t.Fatalf("b lists %d pending approvals, want 1", len(seen))
	}
	if _, err := a.q.Approve(seen[0].ID, alice, ""); err != nil {
		t.Fatal(err)
	}
	ask("unread", "2") // b never reads it
	if n := b.q.EndWithRequests(t.Context(), []string{"voted", "unread"}, "was interrupted by a restart of the gateway"); n != 2 {
		t.Errorf("b ended %d approvals, want both", n)
	}
	ars, err := st.ListApprovals(t.Context(), store.ApprovalFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, ar := range ars {
		if ar.Status != string(Expired) {
			t.Errorf("approval %s in the store: %s, want expired", ar.ID, ar.Status)
		}
	}
	if len(ars) != 2 {
		t.Errorf("%d approvals in the store, want 2", len(ars))
	}
}

// TestDenialHoldsOnAnotherInstance: on a store instances share, a call
// denied on one instance is refused on another that never saw it, also
// when the same call was denied once before, long ago. The store lists a
// call's approvals newest first, and the instance made each one it had
// not seen the one in force in turn, so the oldest won; being past its
// window it was then dropped, and the call asked the human again, with
// the current denial (or a pending or approved approval) ignored.
func TestDenialHoldsOnAnotherInstance(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	b := newLife(t, st, &runs, &Options{Shared: true}) // up before any approval
	refund := func(l *life, req string) *reach.Result {
		return l.rt.Call(l.begin(t, req), &reach.Call{ID: "c1", Tool: "refund", IdempotencyKey: "refund-7",
			Arguments: json.RawMessage(`{"order":"7"}`)})
	}
	deny := func(l *life) {
		t.Helper()
		p := l.q.List(Pending)
		if len(p) != 1 {
			t.Fatalf("%d pending approvals, want 1", len(p))
		}
		if _, err := l.q.Deny(p[0].ID, Actor{Principal: "alice"}, "no"); err != nil {
			t.Fatal(err)
		}
	}
	// The first denial, long ago: its window has passed.
	old := newLife(t, st, &runs, &Options{Shared: true})
	if res := refund(old, "r1"); res.Status != reach.StatusPending {
		t.Fatalf("the first call: %s", res.ModelText())
	}
	deny(old)
	ars, err := st.ListApprovals(t.Context(), store.ApprovalFilter{})
	if err != nil || len(ars) != 1 {
		t.Fatalf("stored approvals: %d, %v", len(ars), err)
	}
	ar := ars[0]
	var data map[string]any
	if err := json.Unmarshal(ar.Data, &data); err != nil {
		t.Fatal(err)
	}
	ar.Created, ar.Expires = ar.Created.Add(-2*time.Hour), time.Now().Add(-time.Hour)
	data["created"], data["expires"] = ar.Created, ar.Expires
	if ar.Data, err = json.Marshal(data); err != nil {
		t.Fatal(err)
	}
	if err := st.PutApproval(t.Context(), ar); err != nil {
		t.Fatal(err)
	}
	// Asked again and denied again, now, on another instance.
	a := newLife(t, st, &runs, &Options{Shared: true})
	if res := refund(a, "r2"); res.Status != reach.StatusPending {
		t.Fatalf("the call after the old denial's window: %s", res.ModelText())
	}
	deny(a)
	// B never saw either: the current denial holds there.
	res := refund(b, "r3")
	if res.Status != reach.StatusRefused || res.Error == nil || res.Error.Code != "approval_denied" || runs.Load() != 0 {
		t.Errorf("the denied call on another instance: %s %s, %d runs; want refused approval_denied", res.Status, res.ModelText(), runs.Load())
	}
	if p := b.q.List(Pending); len(p) != 0 {
		t.Errorf("the denied call asked for approval again on the other instance: %d pending", len(p))
	}
}

// Of two approvals of one call asked at once on two instances, the newer
// is in force everywhere; the older, read from the store, was never in
// force on an instance that loads both, and so never expired there: it
// stayed pending past its time, listed in the inbox, and a vote on it
// was taken. It expires at its time as the one in force does.
func TestOlderTwinExpires(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	a := newLife(t, st, &runs, &Options{Shared: true})
	call := &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(`{"order":"7"}`)}
	if res := a.rt.Call(a.begin(t, "r1"), call); res.Status != reach.StatusPending {
		t.Fatalf("the first call: %s", res.ModelText())
	}
	ars, err := st.ListApprovals(t.Context(), store.ApprovalFilter{})
	if err != nil || len(ars) != 1 {
		t.Fatalf("stored approvals: %d, %v", len(ars), err)
	}
	// Its twin, asked a moment later on another instance that had not
	// read it yet; the older one's time has passed.
	older, twin := *ars[0], *ars[0]
	var data map[string]any
	if err := json.Unmarshal(twin.Data, &data); err != nil {
		t.Fatal(err)
	}
	twin.ID = older.ID + "x"
	twin.Created = older.Created.Add(time.Second)
	data["id"], data["created"] = twin.ID, twin.Created
	if twin.Data, err = json.Marshal(data); err != nil {
		t.Fatal(err)
	}
	twin.Version = 0
	if err := st.PutApproval(t.Context(), &twin); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(older.Data, &data); err != nil {
		t.Fatal(err)
	}
	older.Expires = time.Now().Add(-time.Minute)
	data["expires"] = older.Expires
	if older.Data, err = json.Marshal(data); err != nil {
		t.Fatal(err)
	}
	if err := st.PutApproval(t.Context(), &older); err != nil {
		t.Fatal(err)
	}
	c := newLife(t, st, &runs, &Options{Shared: true})
	for _, p := range c.q.List(Pending) {
		if p.ID == older.ID {
			t.Errorf("the older twin, past its time, is listed pending")
		}
	}
	if got, err := c.q.Approve(older.ID, Actor{Principal: "alice"}, "ok"); !errors.Is(err, ErrDecided) {
		t.Errorf("a vote on the older twin past its time: %s, %v; want ErrDecided (expired)", got.Status, err)
	}
}
