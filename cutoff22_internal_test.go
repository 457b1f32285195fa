package reach

import (
	"context"
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
