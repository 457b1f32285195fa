package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// CutOffs checks a reach.CutOffStore as runtimes use it: two runtimes
// over one store (two instances), a life and the next: a write whose
// caller went away on one is caught when its retry reaches the other,
// once; another agent of the principal, whose request was open before,
// runs its identical write; the store keeps a write for its window only.
func CutOffs(t *testing.T, s reach.CutOffStore) {
	t.Helper()
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	var hold atomic.Bool
	instance := func(shared bool) *reach.Runtime {
		rt := reach.New(&reach.Options{CutOffs: s, CutOffsShared: shared})
		rt.MustRegister(reach.Tool{Name: "add_item", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				if hold.CompareAndSwap(true, false) {
					started <- struct{}{}
					<-ctx.Done() // the write took effect; its caller went away
					return nil, ctx.Err()
				}
				return json.RawMessage(`"added"`), nil
			}})
		return rt
	}
	begin := func(rt *reach.Runtime) context.Context {
		ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		return ctx
	}
	call := func(ctx context.Context, rt *reach.Runtime, id string) *reach.Result {
		return rt.Call(ctx, &reach.Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}
	interrupted := func(r *reach.Result) bool {
		return r.Status == reach.StatusError && r.Error != nil && r.Error.Code == "interrupted"
	}
	a, b := instance(true), instance(true)
	other := begin(b) // another agent's request on B, open before the write
	time.Sleep(time.Millisecond)
	ctx, leave := context.WithCancel(begin(a))
	hold.Store(true)
	done := make(chan *reach.Result)
	go func() { done <- call(ctx, a, "c1") }()
	<-started
	leave()
	<-done // A has recorded it: the retry's connection came after

	if r := call(other, b, "o1"); r.Status != reach.StatusSuccess {
		t.Fatalf("another agent's identical write on B: %s %+v; want it run", r.Status, r.Error)
	}
	r := call(begin(b), b, "c1")
	if !interrupted(r) || !strings.Contains(r.Error.Message, "call c1") {
		t.Fatalf("the retry on B: %s %+v; want interrupted, naming call c1", r.Status, r.Error)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("add_item ran %d times, want 2 (the cut-off write, the other agent's)", n)
	}
	for i, rt := range []*reach.Runtime{a, b} {
		if r := call(begin(rt), rt, "c2"); r.Status != reach.StatusSuccess {
			t.Fatalf("the write after the retry, on instance %d: %s %+v; want it run (told once)", i, r.Status, r.Error)
		}
	}

	// The next life of A (a restart) catches a retry too, the store read
	// once at its start (a store this process alone uses).
	ctx, leave = context.WithCancel(begin(a))
	hold.Store(true)
	go func() { done <- call(ctx, a, "c3") }()
	<-started
	leave()
	<-done
	next := instance(false)
	if r := call(begin(next), next, "c1"); !interrupted(r) || !strings.Contains(r.Error.Message, "call c3") {
		t.Fatalf("the retry in the next life: %s %+v; want interrupted, naming call c3", r.Status, r.Error)
	}
	if after := instance(false); after != nil {
		if r := call(begin(after), after, "c4"); r.Status != reach.StatusSuccess {
			t.Fatalf("the write after the retry, in the life after: %s %+v; want it run (the retry took it from the store)", r.Status, r.Error)
		}
	}

	// The store keeps a write for its window, and one instance takes it.
	now := time.Now()
	w := reach.CutOffRecord{Key: "k", Tool: "add_item", Request: "r", Call: "c", At: now, Expires: now.Add(time.Minute)}
	if err := s.PutCutOff(t.Context(), &w); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetCutOff(t.Context(), "k", now.Add(2*time.Minute)); err != nil || got != nil {
		t.Fatalf("GetCutOff past its expiry = %+v, %v; want none", got, err)
	}
	if got, err := s.GetCutOff(t.Context(), "k", now); err != nil || got == nil || got.Call != "c" || got.Request != "r" {
		t.Fatalf("GetCutOff = %+v, %v; want call c of request r", got, err)
	}
	// One retry has it handed over (another's hand-over finds it gone);
	// it stays, as the retry's, until that retry takes it.
	if took, err := s.HandCutOff(t.Context(), "k", "r", "c", "r2", "c2"); err != nil || !took {
		t.Fatalf("HandCutOff = %v, %v; want handed over", took, err)
	}
	if took, err := s.HandCutOff(t.Context(), "k", "r", "c", "r3", "c3"); err != nil || took {
		t.Fatalf("HandCutOff again = %v, %v; want handed over once", took, err)
	}
	if got, err := s.GetCutOff(t.Context(), "k", now); err != nil || got == nil || got.Call != "c2" || got.Request != "r2" || got.Tool != "add_item" {
		t.Fatalf("GetCutOff after the hand-over = %+v, %v; want call c2 of request r2", got, err)
	}
	if took, err := s.TakeCutOff(t.Context(), "k", "r2", "c2"); err != nil || !took {
		t.Fatalf("TakeCutOff of the retry handed it = %v, %v; want taken", took, err)
	}
	if err := s.PutCutOff(t.Context(), &w); err != nil {
		t.Fatal(err)
	}
	if took, err := s.TakeCutOff(t.Context(), "k", "r", "other"); err != nil || took {
		t.Fatalf("TakeCutOff of another call = %v, %v; want not taken", took, err)
	}
	if took, err := s.TakeCutOff(t.Context(), "k", "r", "c"); err != nil || !took {
		t.Fatalf("TakeCutOff = %v, %v; want taken", took, err)
	}
	if took, err := s.TakeCutOff(t.Context(), "k", "r", "c"); err != nil || took {
		t.Fatalf("TakeCutOff again = %v, %v; want taken once", took, err)
	}
}
