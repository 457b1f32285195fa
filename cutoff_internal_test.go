package reach

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cutOffCall runs add_item with args as principal's call id in a request of
// its own; leave, if not nil, is set to cancel the call (its caller going).
func cutOffCall(t *testing.T, rt *Runtime, leave *context.CancelFunc, principal, id, args string) *Result {
	t.Helper()
	rctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	if leave != nil {
		rctx, *leave = context.WithCancel(rctx)
	}
	return rt.Call(rctx, &Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(args)})
}

// deafAddItem registers add_item, a write whose first n runs each say so on
// started and then wait, deaf to their context, until release is called
// (the test's end calls it if the test did not). Once back, such a run
// returns its context's error if errWhenBack, else "added" as every other
// run does. runs counts the tool's runs.
func deafAddItem(t *testing.T, rt *Runtime, n int32, errWhenBack bool) (runs *atomic.Int32, started <-chan struct{}, release func()) {
	runs = new(atomic.Int32)
	var hold atomic.Int32
	hold.Store(n)
	start, rel := make(chan struct{}, n), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release)
	rt.MustRegister(Tool{Name: "add_item", Access: Write, Reentrancy: Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			if hold.Add(-1) >= 0 {
				start <- struct{}{}
				<-rel // deaf to its context
				if errWhenBack {
					return nil, ctx.Err()
				}
			}
			return json.RawMessage(`"added"`), nil
		}})
	return runs, start, release
}

// A tool that does not stop when its caller goes away is still running
// when its caller's retry comes: the retry is told, and nothing runs
// twice; the write's late return changes nothing, and the write after the
// retry runs. Before, the write was remembered only once its tool was
// back: the retry ran it a second time, and the late note then refused the
// next identical write, which was not a retry.
func TestCutOffRetryWhileToolRuns(t *testing.T) {
	rt := New(nil)
	runs, started, release := deafAddItem(t, rt, 1, false)
	var leave context.CancelFunc
	done := make(chan *Result)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()

	res := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`)
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "interrupted" {
		t.Fatalf("the retry while the first runs: %s %+v; want interrupted", res.Status, res.Error)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("add_item ran %d times by the retry, want 1", n)
	}
	release()
	<-done
	if res := cutOffCall(t, rt, nil, "alice", "c3", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the write after the retry: %s %+v; want it run", res.Status, res.Error)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("add_item ran %d times, want 2", n)
	}
}

// A write cancelled before its tool started did nothing: it is not
// remembered, and its identical write runs.
func TestCutOffBeforeToolStarted(t *testing.T) {
	waiting := make(chan struct{}, 1)
	rt := New(&Options{Middleware: []Middleware{func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*Result, error) {
			if string(c.Arguments) == `{"item":"slow"}` {
				waiting <- struct{}{}
				<-ctx.Done() // held before its tool, until its caller goes
				return nil, ctx.Err()
			}
			return next(ctx, c)
		}
	}}})
	var runs atomic.Int32
	rt.MustRegister(Tool{Name: "add_item", Access: Write, Reentrancy: Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`"added"`), nil
		}})
	var leave context.CancelFunc
	done := make(chan *Result)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"slow"}`) }()
	<-waiting
	leave()
	<-done
	if n := rt.cutOffs.n.Load(); n != 0 {
		t.Fatalf("%d writes remembered as cut off, want none: its tool never started", n)
	}
	if res := cutOffCall(t, rt, nil, "alice", "c2", `{ "item":"slow" }`); res.Status == StatusError && res.Error != nil && res.Error.Code == "interrupted" {
		t.Fatalf("the identical write: %+v; want it not refused", res.Error)
	}
}

// One owner cutting off writes by the thousand fills the table: the oldest
// of its own are dropped, not another owner's older write.
func TestCutOffEvictsTheFloodersOwn(t *testing.T) {
	var tab cutOffs
	at := time.Now()
	alice := cutOffID{"alice\x00\x00", "add_item", "x"}
	tab.note(alice.key(), cutOffWrite{owner: alice.scope, tool: "add_item", call: "c1", at: at})
	var last cutOffID
	for i := range cutOffCap + 10 {
		last = cutOffID{"mallory\x00\x00", "add_item", strconv.Itoa(i)}
		tab.note(last.key(), cutOffWrite{owner: last.scope, tool: "add_item", call: "m", at: at.Add(time.Duration(i+1) * time.Microsecond)})
	}
	if n := len(tab.m); n > cutOffCap {
		t.Fatalf("%d writes remembered, cap %d", n, cutOffCap)
	}
	if _, ok := tab.take(t.Context(), alice, "", time.Now()); !ok {
		t.Fatal("alice's cut-off write was dropped for mallory's")
	}
	if _, ok := tab.take(t.Context(), last, "", time.Now()); !ok {
		t.Fatal("mallory's newest write was dropped")
	}
}

// A write its request's stop cut off while its tool ran is remembered as
// the others are, and its retry is told that stop, not that its caller hung
// up or cancelled it: the caller did neither.
func TestCutOffByStopSaysSo(t *testing.T) {
	rt := New(nil)
	started := make(chan struct{}, 1)
	rt.MustRegister(Tool{Name: "add_item", Access: Write, Reentrancy: Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			if string(args) == `{"item":"pear"}` && len(started) == 0 {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(`"added"`), nil
		}})
	ctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result)
	go func() {
		done <- rt.Call(ctx, &Call{ID: "c1", Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}()
	<-started
	req.Stop(Cancel, "operator", "budget review")
	<-done
	req.End()
	res := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`)
	if res.Error == nil || res.Error.Code != "interrupted" {
		t.Fatalf("the retry: %s %+v; want interrupted", res.Status, res.Error)
	}
	if m := res.Error.Message; strings.Contains(m, "hung up") || !strings.Contains(m, "stopped") || !strings.Contains(m, "budget review") {
		t.Fatalf("the retry's message: %q; want the stop named, not a hang-up", m)
	}
}

// A write its request's stop cut off while its tool still runs (a tool
// deaf to its context) is cut off already: its retry is told that stop, as
// once the tool is back, not that its caller hung up or cancelled it.
func TestCutOffByStopWhileToolRunsSaysSo(t *testing.T) {
	rt := New(nil)
	_, started, release := deafAddItem(t, rt, 1, false)
	ctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result)
	go func() {
		done <- rt.Call(ctx, &Call{ID: "c1", Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}()
	<-started
	req.Stop(Cancel, "operator", "budget review")
	res := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`)
	release()
	<-done
	req.End()
	if res.Error == nil || res.Error.Code != "interrupted" {
		t.Fatalf("the retry while the first runs: %s %+v; want interrupted", res.Status, res.Error)
	}
	if m := res.Error.Message; strings.Contains(m, "hung up") || !strings.Contains(m, "stopped") || !strings.Contains(m, "budget review") {
		t.Fatalf("the retry's message: %q; want the stop named, not a hang-up", m)
	}
}

// Two identical writes run at once (two agents of one principal), and
// the first one's caller goes away while its tool still runs: its retry is
// told, though the second began after it, and nothing runs a third time;
// the write after the retry runs. Before, the second's start replaced the
// first among the writes running: the retry ran, and the first's late
// return then refused the next identical write, which was not a retry.
func TestCutOffRetryWhileTwinRuns(t *testing.T) {
	rt := New(nil)
	runs, started, release := deafAddItem(t, rt, 2, false)
	var leave context.CancelFunc
	done := make(chan *Result, 2)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	go func() { done <- cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`) }()
	<-started
	leave()

	res := cutOffCall(t, rt, nil, "alice", "c3", `{"item":"pear"}`)
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "interrupted" || !strings.Contains(res.Error.Message, "call c1 ") {
		t.Fatalf("the retry of c1 while c1 and c2 run: %s %+v; want interrupted, naming c1", res.Status, res.Error)
	}
	release()
	<-done
	<-done
	if res := cutOffCall(t, rt, nil, "alice", "c4", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the write after the retry: %s %+v; want it run", res.Status, res.Error)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("add_item ran %d times, want 3 (c1, c2, c4)", n)
	}
}

// A write whose retry was told it was cut off while its tool still ran
// is told once, also when the write after the retry runs before the cut
// one's tool is back: that write took the cut one's place among the
// writes running, and the cut one's late return was remembered anew, so
// the next identical write, which was no retry, was refused a second time.
func TestCutOffToldOnceWhenTheNextRunsFirst(t *testing.T) {
	rt := New(nil)
	runs, started, release := deafAddItem(t, rt, 1, true)
	var leave context.CancelFunc
	done := make(chan *Result)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	if res := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`); res.Error == nil || res.Error.Code != "interrupted" {
		t.Fatalf("the retry while the first runs: %s %+v; want interrupted", res.Status, res.Error)
	}
	if res := cutOffCall(t, rt, nil, "alice", "c3", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the write after the retry, the first still running: %s %+v; want it run", res.Status, res.Error)
	}
	release()
	<-done
	if res := cutOffCall(t, rt, nil, "alice", "c4", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the next write, once the first is back: %s %+v; want it run (the first was told once)", res.Status, res.Error)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("add_item ran %d times, want 3", n)
	}
}

// Two agents that share one principal (one API key, or loopback with no
// auth) each have a session of their own (its root request): one's write
// cut off is not the other's, whose identical write, in the session it had
// open already, runs. The cut-off agent's retry is told, in its own
// session as in a new one (a client that reconnected). Before, the owner
// was the principal alone: the other agent's write was refused.
func TestCutOffSessionsOfOnePrincipal(t *testing.T) {
	rt := New(nil)
	var runs atomic.Int32
	var hold atomic.Bool
	started := make(chan struct{}, 1)
	rt.MustRegister(Tool{Name: "add_item", Access: Write, Reentrancy: Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			if hold.CompareAndSwap(true, false) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(`"added"`), nil
		}})
	session := func() (context.Context, *Request) {
		ctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: "shared"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		return ctx, req
	}
	call := func(ctx context.Context, id string) *Result {
		return rt.Call(ctx, &Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}
	interrupted := func(r *Result) bool {
		return r.Status == StatusError && r.Error != nil && r.Error.Code == "interrupted"
	}
	for _, retryIn := range []string{"its own session", "a new session"} {
		runs.Store(0)
		actx, _ := session() // agent A
		bctx, _ := session() // agent B, open before A's write
		time.Sleep(time.Millisecond)
		cctx, leave := context.WithCancel(actx)
		hold.Store(true)
		done := make(chan *Result)
		go func() { done <- call(cctx, "a1") }()
		<-started
		leave()
		<-done
		if r := call(bctx, "b1"); interrupted(r) || r.Status != StatusSuccess {
			t.Fatalf("%s: agent B's identical write: %s %+v; want it run, not taken for A's retry", retryIn, r.Status, r.Error)
		}
		rctx := actx
		if retryIn == "a new session" {
			rctx, _ = session()
		}
		if r := call(rctx, "a2"); !interrupted(r) {
			t.Fatalf("%s: agent A's retry: %s %+v; want interrupted", retryIn, r.Status, r.Error)
		}
		if n := runs.Load(); n != 2 {
			t.Fatalf("%s: add_item ran %d times, want 2 (A's cut off, B's)", retryIn, n)
		}
	}
}

// After a restart, recovery tells the runtime of the writes it cut off by
// their record keys. A caller's own key that ends in "/CALLID" (here
// "batch/c1", of call c1) is the caller's, not one derived from its
// request: its keyless identical write is not refused. A derived key,
// exactly "ROOT/CALLID", is remembered. Before, any key ending in
// "/CALLID" was taken for a derived one.
func TestCutOffOwnKeyEndingInCallID(t *testing.T) {
	rt := New(nil)
	scope := "alice\x00\x00"
	began := time.Now().Add(-time.Minute)
	rt.NoteCutOff(scope+"add_item:batch/c1", "add_item", "req1", "req1", "c1", "d1", began)
	if n := rt.cutOffs.n.Load(); n != 0 {
		t.Fatalf("a caller's own key ending in /c1: %d writes remembered, want none", n)
	}
	rt.NoteCutOff(scope+"add_item:sub/req1/c1", "add_item", "req1", "req1", "c1", "d1", began)
	if n := rt.cutOffs.n.Load(); n != 0 {
		t.Fatalf("a caller's own key ending in req1/c1: %d writes remembered, want none", n)
	}
	rt.NoteCutOff(scope+"add_item:req1/c1", "add_item", "req1", "req2", "c1", "d1", began)
	if n := rt.cutOffs.n.Load(); n != 1 {
		t.Fatalf("the derived key req1/c1: %d writes remembered, want 1", n)
	}
	w, ok := rt.cutOffs.take(t.Context(), cutOffID{scope, "add_item", "d1"}, "req3", time.Now())
	if !ok || w.call != "c1" || w.request != "req2" || !w.restart {
		t.Fatalf("the retry took %+v %v; want call c1 of request req2, cut off by a restart", w, ok)
	}
}

// memCutOffStore is a CutOffStore in memory, as a store this process
// alone uses keeps them.
type memCutOffStore struct {
	mu sync.Mutex
	m  map[string]CutOffRecord
}

func (s *memCutOffStore) ListCutOffs(_ context.Context, now time.Time) ([]*CutOffRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []*CutOffRecord
	for _, r := range s.m {
		if r.Expires.After(now) {
			rs = append(rs, &r)
		}
	}
	slices.SortFunc(rs, func(a, b *CutOffRecord) int { return a.At.Compare(b.At) })
	return rs, nil
}

func (s *memCutOffStore) PutCutOff(_ context.Context, r *CutOffRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]CutOffRecord{}
	}
	s.m[r.Key] = *r
	return nil
}

func (s *memCutOffStore) GetCutOff(_ context.Context, key string, now time.Time) (*CutOffRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[key]; ok && r.Expires.After(now) {
		return &r, nil
	}
	return nil, nil
}

func (s *memCutOffStore) TakeCutOff(_ context.Context, key, request, call string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[key]; ok && r.Request == request && r.Call == call {
		delete(s.m, key)
		return true, nil
	}
	return false, nil
}

func (s *memCutOffStore) HandCutOff(_ context.Context, key, request, call, toRequest, toCall string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[key]; ok && r.Request == request && r.Call == call {
		r.Request, r.Call = toRequest, toCall
		s.m[key] = r
		return true, nil
	}
	return false, nil
}

// The next life, which reads the cut-off writes of a store this process
// alone uses (a restart), still drops the flooder's own past the cap, not
// another owner's. Before, the writes it read had no owner: past the cap
// the oldest of them all was dropped, another owner's too.
func TestCutOffEvictsTheFloodersOwnAfterRestart(t *testing.T) {
	st := new(memCutOffStore)
	tab := cutOffs{store: st}
	at := time.Now()
	alice := cutOffID{"alice\x00\x00", "add_item", "x"}
	tab.note(alice.key(), cutOffWrite{owner: alice.scope, tool: "add_item", request: "r", call: "c1", at: at})
	var last cutOffID
	for i := range cutOffCap + 10 {
		last = cutOffID{"mallory\x00\x00", "add_item", strconv.Itoa(i)}
		tab.note(last.key(), cutOffWrite{owner: last.scope, tool: "add_item", request: "r", call: "m" + strconv.Itoa(i), at: at.Add(time.Duration(i+1) * time.Microsecond)})
	}
	next := cutOffs{store: st}
	next.load()
	if n := len(next.m); n > cutOffCap {
		t.Fatalf("%d writes remembered after the restart, cap %d", n, cutOffCap)
	}
	if _, ok := next.take(t.Context(), alice, "", time.Now()); !ok {
		t.Fatal("after the restart, alice's cut-off write was dropped for mallory's")
	}
	if _, ok := next.take(t.Context(), last, "", time.Now()); !ok {
		t.Fatal("after the restart, mallory's newest write was dropped")
	}
}

// ckIdem is an IdempotencyStore whose claims carry their "executing"
// checkpoint (Claim.Checkpointed), durable with the claim, as a store
// may do; cp records the checkpoints.
type ckIdem struct {
	IdempotencyStore
	cp *ckRecords
}

func (s ckIdem) Claim(ctx context.Context, c *IdemClaim) (*Result, bool, error) {
	rec, claimed, err := s.IdempotencyStore.Claim(ctx, c)
	if err == nil && claimed && c.Checkpoint != nil {
		c.Checkpointed = true
		s.cp.Executing(ctx, c.Checkpoint)
	}
	return rec, claimed, err
}

// ckRecords counts the checkpoints begun and ended.
type ckRecords struct{ executing, ended atomic.Int32 }

func (r *ckRecords) Executing(context.Context, *Checkpoint) error { r.executing.Add(1); return nil }
func (r *ckRecords) Ended(context.Context, *Checkpoint)           { r.ended.Add(1) }

// A retry of a cut-off write caught by the read of a shared store, after
// its key's claim was taken with its "executing" checkpoint, ends that
// checkpoint: nothing ran. Before, it stayed executing, and the next
// start settled it as a call the restart cut off.
func TestCutOffSharedEndsClaimsCheckpoint(t *testing.T) {
	cp := new(ckRecords)
	rt := New(&Options{CutOffs: new(memCutOffStore), CutOffsShared: true, Checkpoints: cp,
		Idempotency: ckIdem{NewMemoryIdempotency(time.Hour), cp}})
	_, started, release := deafAddItem(t, rt, 1, true)
	var leave context.CancelFunc
	done := make(chan *Result, 1)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	release()
	<-done
	if r := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`); r.Error == nil || r.Error.Code != "interrupted" {
		t.Fatalf("the retry: %s %+v; want interrupted", r.Status, r.Error)
	}
	if e, n := cp.executing.Load(), cp.ended.Load(); e != n {
		t.Fatalf("%d checkpoints begun, %d ended; want each ended", e, n)
	}
}

// TestCutOffTakenHereEndsClaimsCheckpoint: a retry refused from the
// runtime's own memory, with a store (SQLite's case), claims its key before
// the write is taken from the store (a kill then leaves the claim:
// cutoff.taken); the "executing" checkpoint durable with that claim ends as
// the refusal. Left open, the next start took the refused retry for a write
// cut off, and refused the write after it again.
func TestCutOffTakenHereEndsClaimsCheckpoint(t *testing.T) {
	cp := new(ckRecords)
	rt := New(&Options{CutOffs: new(memCutOffStore), Checkpoints: cp,
		Idempotency: ckIdem{NewMemoryIdempotency(time.Hour), cp}})
	_, started, release := deafAddItem(t, rt, 1, true)
	var leave context.CancelFunc
	done := make(chan *Result, 1)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	release()
	<-done
	if r := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`); r.Error == nil || r.Error.Code != "interrupted" {
		t.Fatalf("the retry: %s %+v; want interrupted", r.Status, r.Error)
	}
	if e, n := cp.executing.Load(), cp.ended.Load(); e != n {
		t.Fatalf("%d checkpoints begun, %d ended; want each ended", e, n)
	}
}
