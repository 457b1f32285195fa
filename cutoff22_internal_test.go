package reach

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// twoInstances is two runtimes sharing one cut-off store (CutOffsShared)
// and one idempotency store, as two instances on one PostgreSQL do, with
// the cut-off store they share.
func twoInstances() (a, b *Runtime, st *memCutOffStore) {
	st = new(memCutOffStore)
	idem := NewMemoryIdempotency(time.Hour)
	a = New(&Options{CutOffs: st, CutOffsShared: true, Idempotency: idem})
	b = New(&Options{CutOffs: st, CutOffsShared: true, Idempotency: idem})
	return a, b, st
}

// A write on instance a whose caller goes away while its tool still runs
// (a tool deaf to its context) is cut off already: its retry through
// instance b is told so, and nothing runs twice. Its late return changes
// nothing: the write after the retry runs. Before, a stored the write only
// once its tool was back: b found nothing, and ran the write a second
// time (a retry through a itself was told, from a's writes running).
func TestCutOff22RetryThroughAnotherWhileToolRuns(t *testing.T) {
	a, b, st := twoInstances()
	runs, started, release := deafAddItem(t, a, 1, true)
	brun, _, _ := deafAddItem(t, b, 0, false)
	var leave context.CancelFunc
	done := make(chan *Result, 1)
	go func() { done <- cutOffCall(t, a, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	// a sees its caller gone (this is not the race of a retry sent before
	// it did): until the store holds a write, or long past.
	for deadline := time.Now().Add(10 * time.Second); st.len() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}

	res := cutOffCall(t, b, nil, "alice", "c2", `{"item":"pear"}`)
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "interrupted" || !strings.Contains(res.Error.Message, "call c1 ") {
		t.Fatalf("the retry through b while a's tool runs: %s %+v; want interrupted, naming c1", res.Status, res.Error)
	}
	if n, m := runs.Load(), brun.Load(); n != 1 || m != 0 {
		t.Fatalf("add_item ran %d times on a and %d on b by then, want once on a", n, m)
	}
	release()
	<-done
	if res := cutOffCall(t, b, nil, "alice", "c3", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the write after the retry, once a's tool is back: %s %+v; want it run (the cut-off write was told once)", res.Status, res.Error)
	}
	if n := brun.Load(); n != 1 {
		t.Fatalf("add_item ran %d times on b, want once (the write after the retry)", n)
	}
}

func (s *memCutOffStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// handingStore is a memCutOffStore where, once, another retry (r2's call
// c2) is handed the write just after a read of it: two retries of one
// cut-off write at once, the other's hand-over between this one's read
// and its own.
type handingStore struct {
	*memCutOffStore
	once sync.Once
}

func (s *handingStore) GetCutOff(ctx context.Context, key string, now time.Time) (*CutOffRecord, error) {
	r, err := s.memCutOffStore.GetCutOff(ctx, key, now)
	if r != nil {
		s.once.Do(func() { s.memCutOffStore.HandCutOff(ctx, key, r.Request, r.Call, "r2", "c2") })
	}
	return r, err
}

// Two retries of one write cut off, through two instances at once: the
// other retry is handed the write between this one's read of it and its
// own hand-over. Both are told (interrupted), and the write does not run a
// second time; the write after them runs. Before, this retry's hand-over
// failed, and it ran the write, while the other was told it was cut off.
func TestCutOff22TwoRetriesWithinTheHandOver(t *testing.T) {
	st := &handingStore{memCutOffStore: new(memCutOffStore)}
	idem := NewMemoryIdempotency(time.Hour)
	a := New(&Options{CutOffs: st, CutOffsShared: true, Idempotency: idem})
	b := New(&Options{CutOffs: st, CutOffsShared: true, Idempotency: idem})
	runs, started, release := deafAddItem(t, a, 1, true)
	brun, _, _ := deafAddItem(t, b, 0, false)
	var leave context.CancelFunc
	done := make(chan *Result, 1)
	go func() { done <- cutOffCall(t, a, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	release()
	<-done
	if st.len() != 1 {
		t.Fatalf("%d writes cut off in the store, want 1", st.len())
	}
	res := cutOffCall(t, b, nil, "alice", "c3", `{"item":"pear"}`)
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "interrupted" || !strings.Contains(res.Error.Message, "call c1 ") {
		t.Fatalf("the retry whose hand-over another retry took first: %s %+v; want interrupted, naming c1", res.Status, res.Error)
	}
	if n, m := runs.Load(), brun.Load(); n != 1 || m != 0 {
		t.Fatalf("add_item ran %d times on a and %d on b, want once on a", n, m)
	}
	// This one, handed the write from the other, answered for it: the
	// other, told too, finds it no more once answered.
	if n := st.len(); n != 0 {
		t.Fatalf("%d writes cut off in the store after the retry was answered, want none", n)
	}
	if res := cutOffCall(t, b, nil, "alice", "c4", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the write after both retries were answered: %s %+v; want it run", res.Status, res.Error)
	}
}

// Two sub-agents of one request, under one principal: the first's write is
// cut off while it runs (its sub-request stopped, its caller gone), and the
// second makes the identical write. It is taken for a retry, and told so:
// an orchestrator that hands a stopped worker's sub-task to another worker
// retries that write, and a fan-out that makes the same write twice is a
// bug; the first may have taken effect either way. The refusal names the
// first's call, and the second's next identical call runs (a write made
// twice on purpose costs one call more).
func TestCutOff22SiblingSubAgents(t *testing.T) {
	rt := New(nil)
	runs, started, release := deafAddItem(t, rt, 1, true)
	rctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	sub := func(agent string) context.Context {
		ctx, r, err := rt.Delegate(rctx, &Delegation{Agent: agent, Task: "add a pear, as " + agent})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.End)
		return ctx
	}
	call := func(ctx context.Context, id string) *Result {
		return rt.Call(ctx, &Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}
	w1, leave := context.WithCancel(sub("worker1"))
	done := make(chan *Result, 1)
	go func() { done <- call(w1, "w1") }()
	<-started
	leave()
	release()
	<-done

	w2 := sub("worker2")
	res := call(w2, "w2")
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "interrupted" || !strings.Contains(res.Error.Message, "call w1 ") {
		t.Fatalf("worker2's identical write after worker1's was cut off: %s %+v; want interrupted, naming w1", res.Status, res.Error)
	}
	if !strings.Contains(res.Error.Suggestion, "call it again") {
		t.Fatalf("the refusal does not say how to make the write anyway: %q", res.Error.Suggestion)
	}
	if res := call(w2, "w2b"); res.Status != StatusSuccess {
		t.Fatalf("worker2's next identical write: %s %+v; want it run", res.Status, res.Error)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("add_item ran %d times, want 2 (worker1's cut off, worker2's second call)", n)
	}
}

// BenchmarkCutOffRunningWrite is what the writes running cost a keyless
// write (start, then end answered): with a store this process alone uses
// ("own"), and with a shared one ("shared"), where each also registers its
// early note on its caller's context (context.AfterFunc) and unregisters
// it at its end.
//
//	go test -run '^$' -bench CutOffRunningWrite -count 6 .
func BenchmarkCutOffRunningWrite(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "own"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			t := &cutOffs{store: new(memCutOffStore), shared: shared}
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			id := cutOffID{"alice\x00\x00", "add_item", "d"}
			began := time.Now()
			for b.Loop() {
				t.start(id, ctx, "root", began, "r", "c1")
				t.end(ctx, id, "r", "c1", false)
			}
		})
	}
}

// heldClaims is an IdempotencyStore whose claims of keys ending in hold
// wait, once, until release is closed, saying so on held.
type heldClaims struct {
	IdempotencyStore
	hold    string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *heldClaims) Claim(ctx context.Context, c *IdemClaim) (*Result, bool, error) {
	if strings.HasSuffix(c.Key, s.hold) {
		s.once.Do(func() {
			s.held <- struct{}{}
			<-s.release
		})
	}
	return s.IdempotencyStore.Claim(ctx, c)
}

// Two retries at once of a write cut off on one instance with a store of
// its own (SQLite's case): the first took the write from memory and is
// claiming its key when the second comes. Both are told, as on a shared
// store (TestCutOff22TwoRetriesWithinTheHandOver), and the write after
// them runs. Before, the first's take had forgotten the write: the second
// ran it while the first was told it was cut off.
func TestCutOff22TwoRetriesAtOnceHere(t *testing.T) {
	idem := &heldClaims{IdempotencyStore: NewMemoryIdempotency(time.Hour), hold: "/c2", held: make(chan struct{}), release: make(chan struct{})}
	rt := New(&Options{CutOffs: new(memCutOffStore), Idempotency: idem})
	runs, started, release := deafAddItem(t, rt, 1, true)
	var leave context.CancelFunc
	done := make(chan *Result, 1)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	release()
	<-done
	first := make(chan *Result, 1)
	go func() { first <- cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`) }()
	<-idem.held // the first retry took the write, and claims its key
	res := cutOffCall(t, rt, nil, "alice", "c3", `{"item":"pear"}`)
	close(idem.release)
	r2 := <-first
	for _, r := range []*Result{r2, res} {
		if r.Status != StatusError || r.Error == nil || r.Error.Code != "interrupted" || !strings.Contains(r.Error.Message, "call c1 ") {
			t.Fatalf("two retries at once: %s %+v; want each interrupted, naming c1", r.Status, r.Error)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("add_item ran %d times, want once", n)
	}
	if res := cutOffCall(t, rt, nil, "alice", "c4", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the write after both retries were answered: %s %+v; want it run", res.Status, res.Error)
	}
}
