package reach

import (
	"context"
	"encoding/json"
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
	if _, ok := tab.take(alice); !ok {
		t.Fatal("alice's cut-off write was dropped for mallory's")
	}
	if _, ok := tab.take(last); !ok {
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
