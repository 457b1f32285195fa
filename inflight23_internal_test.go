package reach

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangUpAtClaim is an idempotency store whose claim of a call's key
// (the first whose key holds call) is taken, and then its caller goes
// away (leave) before the claim is answered: a caller gone after its
// write was claimed, before its tool was started.
type hangUpAtClaim struct {
	IdempotencyStore
	call  string
	once  sync.Once
	leave atomic.Pointer[context.CancelFunc]
}

func (h *hangUpAtClaim) Claim(ctx context.Context, c *IdemClaim) (*Result, bool, error) {
	rec, claimed, err := h.IdempotencyStore.Claim(ctx, c)
	if claimed && strings.HasSuffix(c.Key, "/"+h.call) {
		h.once.Do(func() {
			if leave := h.leave.Load(); leave != nil {
				(*leave)()
				<-ctx.Done()
			}
		})
	}
	return rec, claimed, err
}

// careAddItem registers add_item, a write that does its work (counted in
// runs) only if its caller is there when it is started: as a tool
// upstream, to which a call whose caller went away sends nothing.
func careAddItem(rt *Runtime) *atomic.Int32 {
	runs := new(atomic.Int32)
	rt.MustRegister(Tool{Name: "add_item", Access: Write, Reentrancy: Reentrant,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			runs.Add(1)
			return json.RawMessage(`"added"`), nil
		}})
	return runs
}

// hangUpCall is cutOffCall whose caller goes away once its key is claimed
// (h), before its tool is started.
func hangUpCall(t *testing.T, rt *Runtime, h *hangUpAtClaim, principal, id, args string) *Result {
	t.Helper()
	rctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	rctx, leave := context.WithCancel(rctx)
	defer leave()
	h.leave.Store(&leave)
	return rt.Call(rctx, &Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(args)})
}

// A write without a key whose caller goes away after its claim, before its
// tool is started, never started: its tool is not started then, and its
// retry runs it, once; the call after runs as well (nothing is left to
// refuse it). Before, the tool was started with its caller gone, and the
// retry was told the write was cut off and "may have taken effect"
// (interrupted), though nothing had been sent.
func TestInFlight23HangUpBeforeStartRetryRunsHere(t *testing.T) {
	h := &hangUpAtClaim{IdempotencyStore: NewMemoryIdempotency(time.Hour), call: "c1"}
	rt := New(&Options{Idempotency: h})
	runs := careAddItem(rt)
	if res := hangUpCall(t, rt, h, "alice", "c1", `{"item":"pear"}`); res.Status == StatusSuccess {
		t.Fatalf("the write whose caller went away before its tool started: %s; want it not run", res.Status)
	}
	res := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`)
	if res.Status != StatusSuccess {
		t.Fatalf("the retry of a write never started: %s %+v; want it run", res.Status, res.Error)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("add_item did its work %d times, want once (the retry)", n)
	}
	if res := cutOffCall(t, rt, nil, "alice", "c3", `{"item":"pear"}`); res.Status != StatusSuccess {
		t.Fatalf("the call after the retry: %s %+v; want it run", res.Status, res.Error)
	}
}

// The same across two instances sharing their stores: the write on a
// whose caller went away before its tool started is not noted in the
// shared store, and its retry through b runs it, once. Before, a noted it
// as its caller went (the early note of a write whose tool runs), and b
// told the retry it was cut off.
func TestInFlight23HangUpBeforeStartRetryThroughAnother(t *testing.T) {
	st := new(memCutOffStore)
	idem := NewMemoryIdempotency(time.Hour)
	h := &hangUpAtClaim{IdempotencyStore: idem, call: "c1"}
	a := New(&Options{CutOffs: st, CutOffsShared: true, Idempotency: h})
	b := New(&Options{CutOffs: st, CutOffsShared: true, Idempotency: idem})
	aruns, bruns := careAddItem(a), careAddItem(b)
	if res := hangUpCall(t, a, h, "alice", "c1", `{"item":"pear"}`); res.Status == StatusSuccess {
		t.Fatalf("the write whose caller went away before its tool started: %s; want it not run", res.Status)
	}
	if n := st.len(); n != 0 {
		t.Fatalf("%d cut-off writes stored for a write never started, want none", n)
	}
	res := cutOffCall(t, b, nil, "alice", "c2", `{"item":"pear"}`)
	if res.Status != StatusSuccess {
		t.Fatalf("the retry through b of a write never started on a: %s %+v; want it run", res.Status, res.Error)
	}
	if n, m := aruns.Load(), bruns.Load(); n != 0 || m != 1 {
		t.Fatalf("add_item did its work %d times on a and %d on b, want once on b", n, m)
	}
}

// A caller that goes away once its write's tool started is told as before:
// its retry is answered interrupted (the write may have taken effect),
// and nothing runs twice. The gate of a start does not hide a write cut
// off while its tool ran.
func TestInFlight23HangUpAfterStartStillTold(t *testing.T) {
	rt := New(nil)
	runs, started, release := deafAddItem(t, rt, 1, true)
	var leave context.CancelFunc
	done := make(chan *Result, 1)
	go func() { done <- cutOffCall(t, rt, &leave, "alice", "c1", `{"item":"pear"}`) }()
	<-started
	leave()
	release()
	<-done
	res := cutOffCall(t, rt, nil, "alice", "c2", `{"item":"pear"}`)
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "interrupted" {
		t.Fatalf("the retry of a write cut off while its tool ran: %s %+v; want interrupted", res.Status, res.Error)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("add_item ran %d times, want once", n)
	}
}
