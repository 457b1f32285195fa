package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// switchable is a tool whose failure the test turns on and off, and counts
// its runs.
type switchable struct {
	runs atomic.Int32
	fail atomic.Pointer[error]
	data string
}

func (s *switchable) set(err error) { s.fail.Store(&err) }

func (s *switchable) fn(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	s.runs.Add(1)
	if p := s.fail.Load(); p != nil && *p != nil {
		return nil, *p
	}
	if s.data != "" {
		return json.RawMessage(s.data), nil
	}
	return args, nil
}

var errDown = &reach.ToolError{Type: "unavailable", Message: "upstream kb is not reachable: connection refused"}

// breakerEvents records the breaker changes a runtime reports.
type breakerEvents struct {
	mu sync.Mutex
	ev []*reach.Event
}

func (r *breakerEvents) Record(_ context.Context, e *reach.Event) {
	if e.Breaker == nil {
		return
	}
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *breakerEvents) changes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.ev {
		out = append(out, e.Name+" "+e.Breaker.From.String()+">"+e.Breaker.To.String())
	}
	return out
}

// oneCall makes one call in a request of its own, so that the loop guard
// of one request does not see the calls as repeats.
func oneCall(t *testing.T, rt *reach.Runtime, tool, args string) *reach.Result {
	t.Helper()
	ctx, req, err := rt.Begin(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	return rt.Call(ctx, &reach.Call{ID: "c1", Tool: tool, Arguments: json.RawMessage(args)})
}

func breakerState(rt *reach.Runtime, kind, name string) reach.BreakerStatus {
	for _, s := range rt.Breakers() {
		if s.Kind == kind && s.Name == name {
			return s
		}
	}
	return reach.BreakerStatus{State: -1}
}

// TestBreakerOpensFailsFastAndRecovers: after Failures transient failures
// in a row the breaker opens; the next call fails at once, without
// running the tool, with an error of type unavailable that says what is
// down since when and when it is tried again; after the probe interval one
// call goes through, and its success closes the breaker. Each change is
// recorded.
func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &breakerEvents{}
		rt := reach.New(&reach.Options{Recorder: rec})
		kb := &switchable{}
		kb.set(errDown)
		rt.MustRegister(reach.Tool{Name: "kb_search", Retry: &reach.RetryPolicy{Attempts: 1},
			Breaker: &reach.BreakerPolicy{Failures: 3, OpenFor: 10 * time.Second}, Func: kb.fn})
		start := time.Now()
		for i := range 3 {
			res := oneCall(t, rt, "kb_search", `{"q":"refunds"}`)
			if res.Error == nil || res.Error.Type != reach.TypeTransient {
				t.Fatalf("call %d: %+v, want a transient failure", i+1, res.Error)
			}
		}
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerOpen || got.Failures != 3 || !got.RetryAt.Equal(start.Add(10*time.Second)) {
			t.Fatalf("breaker after 3 failures: %+v, want open until %v", got, start.Add(10*time.Second))
		}
		res := oneCall(t, rt, "kb_search", `{"q":"refunds"}`)
		if kb.runs.Load() != 3 {
			t.Errorf("the tool ran %d times, want 3: an open breaker runs nothing", kb.runs.Load())
		}
		e := res.Error
		if res.Status != reach.StatusError || e == nil || e.Type != reach.TypeUnavailable || e.Code != "breaker_open" || e.Guard != "breaker" {
			t.Fatalf("call while open: %s %+v, want an error of type unavailable", res.Status, e)
		}
		if !errors.Is(e, reach.ErrUnavailable) || !errors.Is(e, reach.ErrToolFailed) || errors.Is(e, reach.ErrRefused) {
			t.Errorf("errors.Is of %v: unavailable %v, tool failed %v, refused %v; want true, true, false", e,
				errors.Is(e, reach.ErrUnavailable), errors.Is(e, reach.ErrToolFailed), errors.Is(e, reach.ErrRefused))
		}
		text := res.ModelText()
		for _, want := range []string{"kb_search is unavailable", "failing since " + start.UTC().Format(time.RFC3339),
			"3 failures in a row", "connection refused", "tries it again at " + start.Add(10*time.Second).UTC().Format(time.RFC3339),
			"Go on without kb_search"} {
			if !strings.Contains(text, want) {
				t.Errorf("the model reads %q, missing %q", text, want)
			}
		}
		if e.RetryAfter != 10*time.Second {
			t.Errorf("RetryAfter = %s, want 10s", e.RetryAfter)
		}

		kb.set(nil) // it comes back
		time.Sleep(9 * time.Second)
		if res := oneCall(t, rt, "kb_search", `{"q":"refunds"}`); res.Error == nil || res.Error.Code != "breaker_open" || res.Error.RetryAfter != time.Second {
			t.Fatalf("a call 1s before the probe: %+v, want breaker_open with 1s to go", res.Error)
		}
		time.Sleep(time.Second)
		if res := oneCall(t, rt, "kb_search", `{"q":"refunds"}`); res.Status != reach.StatusSuccess {
			t.Fatalf("the probe: %s %v, want a success", res.Status, res.Error)
		}
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerClosed || got.Failures != 0 {
			t.Errorf("breaker after the probe: %+v, want closed", got)
		}
		want := []string{"tool:kb_search closed>open", "tool:kb_search open>half_open", "tool:kb_search half_open>closed"}
		if got := rec.changes(); !slices.Equal(got, want) {
			t.Errorf("recorded changes %q, want %q", got, want)
		}
		rec.mu.Lock()
		if ev := rec.ev[0]; ev.Request == "" || ev.Breaker.RetryAt.IsZero() || !strings.Contains(ev.Breaker.Reason, "3 transient failures in a row") {
			t.Errorf("the opening's event: %+v %+v, want the request that opened it, the retry time and why", ev, ev.Breaker)
		}
		rec.mu.Unlock()
	})
}

// TestBreakerHalfOpenLetsOneProbe: while the probe is out, other calls
// fail at once (breaker_probing); a failed probe opens the breaker for
// another interval; a cancelled probe frees its slot without deciding.
func TestBreakerHalfOpenLetsOneProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		release := make(chan error)
		var runs atomic.Int32
		var slow atomic.Bool
		rt.MustRegister(reach.Tool{Name: "kb_search", Retry: &reach.RetryPolicy{Attempts: 1}, Reentrancy: reach.Reentrant,
			Breaker: &reach.BreakerPolicy{Failures: 1, OpenFor: time.Second},
			Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				runs.Add(1)
				if !slow.Load() {
					return nil, errDown
				}
				select {
				case err := <-release:
					return args, err
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}})
		oneCall(t, rt, "kb_search", `{}`) // opens it
		time.Sleep(time.Second)
		slow.Store(true)

		probe := func(ctx context.Context) chan *reach.Result {
			ch := make(chan *reach.Result, 1)
			go func() {
				rctx, req, _ := rt.Begin(ctx, nil)
				defer req.End()
				ch <- rt.Call(rctx, &reach.Call{ID: "p", Tool: "kb_search", Arguments: json.RawMessage(`{}`)})
			}()
			synctest.Wait()
			return ch
		}
		// A cancelled probe decides nothing, and frees the slot.
		cctx, cancel := context.WithCancel(t.Context())
		ch := probe(cctx)
		if res := oneCall(t, rt, "kb_search", `{}`); res.Error == nil || res.Error.Code != "breaker_probing" {
			t.Fatalf("a call while the probe is out: %+v, want breaker_probing", res.Error)
		}
		cancel()
		<-ch
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerHalfOpen || got.Probing {
			t.Fatalf("after a cancelled probe: %+v, want half-open with no probe out", got)
		}
		// A failed probe opens it again.
		ch = probe(t.Context())
		release <- errDown
		if res := <-ch; res.Error == nil || res.Error.Type != reach.TypeTransient {
			t.Fatalf("the failed probe: %+v", res.Error)
		}
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerOpen {
			t.Fatalf("after a failed probe: %+v, want open", got)
		}
		n := runs.Load()
		if res := oneCall(t, rt, "kb_search", `{}`); res.Error == nil || res.Error.Code != "breaker_open" || runs.Load() != n {
			t.Fatalf("a call after the failed probe: %+v (%d runs, want %d)", res.Error, runs.Load(), n)
		}
		// A successful one closes it.
		time.Sleep(time.Second)
		ch = probe(t.Context())
		release <- nil
		if res := <-ch; res.Status != reach.StatusSuccess {
			t.Fatalf("the probe: %+v", res.Error)
		}
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerClosed {
			t.Fatalf("after a good probe: %+v, want closed", got)
		}
	})
}

// TestBreakerFailureRate: failures that are not in a row open the breaker
// once their rate over the window reaches Rate with MinCalls made; the
// window forgets old attempts.
func TestBreakerFailureRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		kb := &switchable{}
		rt.MustRegister(reach.Tool{Name: "kb_search", Retry: &reach.RetryPolicy{Attempts: 1},
			Breaker: &reach.BreakerPolicy{Failures: 100, Rate: 0.5, MinCalls: 6, Window: time.Minute}, Func: kb.fn})
		step := func(fail bool) {
			if fail {
				kb.set(errDown)
			} else {
				kb.set(nil)
			}
			oneCall(t, rt, "kb_search", `{}`)
		}
		// Two good, one bad, twice: 2 of 6 failed.
		for range 2 {
			step(false)
			step(false)
			step(true)
		}
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerClosed || got.Calls != 6 || got.Failed != 2 {
			t.Fatalf("after 2 failures of 6: %+v, want closed", got)
		}
		time.Sleep(2 * time.Minute) // the window forgets them
		step(true)
		step(false)
		step(true)
		step(false)
		step(true)
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerClosed || got.Calls != 5 {
			t.Fatalf("after 3 failures of 5 (fewer than MinCalls): %+v, want closed with 5 calls", got)
		}
		step(true)
		if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerOpen {
			t.Fatalf("after 4 failures of 6: %+v, want open", got)
		}
	})
}

// TestBreakerCountsOnlyTransientFailures: permanent failures, refusals by
// a guard and cancels never open the breaker.
func TestBreakerCountsOnlyTransientFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		args string
		ctx  func(context.Context) context.Context
	}{
		{"a permanent failure", &reach.ToolError{Type: "invalid_args", Message: "no such order, try again later"}, `{"id":"1"}`, nil},
		{"an untyped failure", errors.New("the order is closed"), `{"id":"1"}`, nil},
		{"a refusal by a guard", errDown, `{"id":1}`, nil},
		{"a cancel", errDown, `{"id":"1"}`, func(ctx context.Context) context.Context {
			c, cancel := context.WithCancel(ctx)
			cancel()
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := reach.New(nil)
			kb := &switchable{}
			kb.set(tc.err)
			rt.MustRegister(reach.Tool{Name: "get_order", Retry: &reach.RetryPolicy{Attempts: 1},
				InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`),
				Breaker:     &reach.BreakerPolicy{Failures: 2, MinCalls: 2}, Func: kb.fn})
			for range 4 {
				ctx, req, err := rt.Begin(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.ctx != nil {
					ctx = tc.ctx(ctx)
				}
				rt.Call(ctx, &reach.Call{ID: "c", Tool: "get_order", Arguments: json.RawMessage(tc.args)})
				req.End()
			}
			if got := breakerState(rt, "tool", "get_order"); got.State != reach.BreakerClosed || got.Failures != 0 {
				t.Errorf("after 4 such calls: %+v, want closed with no failure counted", got)
			}
		})
	}
}

// TestRetriesStopAtAnOpenBreaker: a call's retries go through the breaker
// too: once it opens, no further attempt is made, and the call fails with
// the breaker's error and the attempts it made.
func TestRetriesStopAtAnOpenBreaker(t *testing.T) {
	rt := reach.New(nil)
	kb := &switchable{}
	kb.set(errDown)
	rt.MustRegister(reach.Tool{Name: "kb_search", Retry: &reach.RetryPolicy{Attempts: 5, Base: time.Millisecond, Max: time.Millisecond},
		Breaker: &reach.BreakerPolicy{Failures: 2}, Func: kb.fn})
	res := oneCall(t, rt, "kb_search", `{}`)
	if got := kb.runs.Load(); got != 2 {
		t.Errorf("the tool ran %d times, want 2: no retry against an open breaker", got)
	}
	if res.Error == nil || res.Error.Type != reach.TypeUnavailable || res.Error.Retry != "2/5" {
		t.Errorf("result: %+v, want unavailable after 2/5 attempts", res.Error)
	}
}

// TestUpstreamBreaker: the tools of one upstream share its breaker, which
// counts the failures that say the upstream could not be reached: when it
// opens, a call to another of its tools fails at once, naming the
// upstream. A tool's own transient failure (an error result the upstream
// answered with) counts on that tool's breaker only.
func TestUpstreamBreaker(t *testing.T) {
	rt := reach.New(&reach.Options{UpstreamBreakers: map[string]*reach.BreakerPolicy{"kb": {Failures: 2}}})
	search, fetch, other := &switchable{}, &switchable{}, &switchable{}
	rt.MustRegister(
		reach.Tool{Name: "kb__search", Upstream: "kb", Tags: []string{"docs"}, Retry: &reach.RetryPolicy{Attempts: 1}, Func: search.fn},
		reach.Tool{Name: "kb__fetch", Upstream: "kb", Tags: []string{"docs"}, Retry: &reach.RetryPolicy{Attempts: 1}, Func: fetch.fn},
		reach.Tool{Name: "wiki__search", Upstream: "wiki", Tags: []string{"docs"}, Func: other.fn},
	)
	// The upstream answers with an error result that says it is transient:
	// the tool's failure, not the upstream's.
	search.set(&reach.ToolError{Type: "tool_error", Message: "503 the index is rebuilding, try again later"})
	for range 3 {
		oneCall(t, rt, "kb__search", `{}`)
	}
	if got := breakerState(rt, "upstream", "kb"); got.State != reach.BreakerClosed || got.Failures != 0 {
		t.Fatalf("upstream breaker after the tool's own failures: %+v, want closed", got)
	}
	if res := oneCall(t, rt, "kb__fetch", `{}`); res.Status != reach.StatusSuccess {
		t.Fatalf("another tool of the upstream: %v", res.Error)
	}
	// Now the upstream goes away.
	search.set(nil)
	fetch.set(errDown)
	oneCall(t, rt, "kb__fetch", `{}`)
	oneCall(t, rt, "kb__fetch", `{"page":2}`)
	if got := breakerState(rt, "upstream", "kb"); got.State != reach.BreakerOpen {
		t.Fatalf("upstream breaker after 2 unreachable: %+v, want open", got)
	}
	n := search.runs.Load()
	res := oneCall(t, rt, "kb__search", `{}`)
	if search.runs.Load() != n || res.Error == nil || res.Error.Code != "breaker_open" {
		t.Fatalf("kb__search while its upstream is open: %+v (ran %d more times)", res.Error, search.runs.Load()-n)
	}
	if !strings.Contains(res.Error.Message, "its upstream kb has been failing") {
		t.Errorf("message %q does not name the upstream", res.Error.Message)
	}
	if !slices.Equal(res.Error.Alternatives, []string{"wiki__search"}) || !strings.Contains(res.Error.Suggestion, "Use wiki__search instead") {
		t.Errorf("alternatives %q, suggestion %q: want wiki__search (of another upstream), not kb__fetch", res.Error.Alternatives, res.Error.Suggestion)
	}
}

// TestFallback: a read whose breaker is open, or whose transient failure
// exhausted its retries, is answered by its first healthy fallback, with
// the arguments its template makes; the result says so, in its Fallback
// field and in the text the model reads; the fallback call is a frame of
// its own under the original call.
func TestFallback(t *testing.T) {
	rt := reach.New(nil)
	kb, dead, mirror := &switchable{}, &switchable{}, &switchable{data: `{"hits":["refund policy"]}`}
	kb.set(errDown)
	dead.set(errDown)
	rt.MustRegister(
		reach.Tool{Name: "kb_search", Retry: &reach.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond},
			Breaker: &reach.BreakerPolicy{Failures: 4}, Func: kb.fn,
			Fallback: []reach.Followup{{Tool: "dead_search"}, {Tool: "mirror_search", Args: `{"query": "{args.q}", "limit": 3}`}}},
		reach.Tool{Name: "dead_search", Retry: &reach.RetryPolicy{Attempts: 1}, Breaker: &reach.BreakerPolicy{Failures: 1}, Func: dead.fn},
		reach.Tool{Name: "mirror_search", Func: mirror.fn},
	)
	// Open dead_search's breaker: a fallback whose breaker is open is skipped.
	oneCall(t, rt, "dead_search", `{}`)
	check := func(label string, res *reach.Result, req *reach.Request) {
		t.Helper()
		if res.Status != reach.StatusSuccess || res.Fallback != "mirror_search" || string(res.Data) != `{"hits":["refund policy"]}` {
			t.Fatalf("%s: %s %s from %q (%v), want mirror_search's hits", label, res.Status, res.Data, res.Fallback, res.Error)
		}
		if text := res.ModelText(); !strings.Contains(text, "this result comes from its fallback mirror_search, not from kb_search") {
			t.Errorf("%s: the model reads %q, which does not say it came from the fallback", label, text)
		}
		var orig, fb *reach.Frame
		for _, f := range req.Frames() {
			switch f.Name {
			case "kb_search":
				orig = f
			case "mirror_search":
				fb = f
			}
		}
		if orig == nil || fb == nil || fb.Parent != orig || string(fb.Args) != `{"limit":3,"query":"refunds"}` {
			t.Fatalf("%s: frames %v; want mirror_search under kb_search with the template's arguments", label, names(req.Frames()))
		}
	}
	// Retries exhausted: 2 attempts, then the fallback.
	ctx, req := begin(t, rt, nil)
	res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "kb_search", Arguments: json.RawMessage(`{"q":"refunds"}`)})
	check("after the retries", res, req)
	if kb.runs.Load() != 2 || dead.runs.Load() != 1 {
		t.Errorf("kb_search ran %d times (want 2), dead_search %d (want 1: skipped while open)", kb.runs.Load(), dead.runs.Load())
	}
	// Open: kb_search is not tried.
	oneCall(t, rt, "kb_search", `{"q":"refunds"}`)
	if got := breakerState(rt, "tool", "kb_search"); got.State != reach.BreakerOpen {
		t.Fatalf("kb_search's breaker: %+v, want open", got)
	}
	n := kb.runs.Load()
	ctx, req = begin(t, rt, nil)
	res = rt.Call(ctx, &reach.Call{ID: "c2", Tool: "kb_search", Arguments: json.RawMessage(`{"q":"refunds"}`)})
	check("while open", res, req)
	if kb.runs.Load() != n {
		t.Errorf("kb_search ran while its breaker was open")
	}
	if text := res.ModelText(); !strings.Contains(text, "its circuit breaker is open") {
		t.Errorf("the model reads %q, which does not say why", text)
	}
	// When no fallback answers, the original failure stands, with a note.
	mirror.set(&reach.ToolError{Type: "not_found", Message: "no index"})
	res = oneCall(t, rt, "kb_search", `{"q":"refunds"}`)
	if res.Status != reach.StatusError || res.Error.Type != reach.TypeUnavailable || res.Fallback != "" ||
		!strings.Contains(res.ModelText(), "its fallbacks did not answer either: dead_search (unavailable too), mirror_search (not_found)") {
		t.Errorf("all fallbacks failed: %s %q", res.Status, res.ModelText())
	}
}

// TestFallbackIsForReads: a write may not name a fallback, and a
// fallback's arguments come from the call's arguments only.
func TestFallbackIsForReads(t *testing.T) {
	rt := reach.New(nil)
	for _, tc := range []struct {
		tool reach.Tool
		want string
	}{
		{reach.Tool{Name: "pay", Access: reach.Write, Func: echo, Fallback: []reach.Followup{{Tool: "pay_later"}}}, "fallback is for reads"},
		{reach.Tool{Name: "get", Func: echo, Fallback: []reach.Followup{{Tool: "get"}}}, "is the tool itself"},
		{reach.Tool{Name: "get", Func: echo, Fallback: []reach.Followup{{Tool: "other", Args: `{"x": "{result.x}"}`}}}, "it has no result"},
		{reach.Tool{Name: "get", Func: echo, Fallback: []reach.Followup{{Tool: "other", Args: `{"x": `}}}, "not JSON"},
		{reach.Tool{Name: "get", Func: echo, Breaker: &reach.BreakerPolicy{Rate: 2}}, "rate is a fraction"},
	} {
		err := rt.Register(tc.tool)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%s): %v, want an error saying %q", tc.tool.Name, err, tc.want)
		}
	}
}

// TestOpenBreakerFailsAWriteIntoTheSaga: a write that an open breaker
// fails is a failure like the one it stands for: it is not retried, falls
// back to nothing, and the request's saga compensates its earlier writes.
func TestOpenBreakerFailsAWriteIntoTheSaga(t *testing.T) {
	rt := reach.New(&reach.Options{UpstreamBreakers: map[string]*reach.BreakerPolicy{"pay": {Failures: 1}}})
	var undone atomic.Int32
	pay := &switchable{}
	rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Func: echo, Undo: &reach.Followup{Tool: "release", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			undone.Add(1)
			return json.RawMessage(`{}`), nil
		}},
		reach.Tool{Name: "charge", Access: reach.Write, Upstream: "pay", Func: pay.fn},
	)
	pay.set(errDown)
	oneCall(t, rt, "charge", `{"id":"0"}`) // opens the upstream's breaker
	ctx, _ := begin(t, rt, nil)
	if res := rt.Call(ctx, &reach.Call{ID: "r", Tool: "reserve", Arguments: json.RawMessage(`{"id":"7"}`)}); res.IsError() {
		t.Fatal(res.Error)
	}
	n := pay.runs.Load()
	res := rt.Call(ctx, &reach.Call{ID: "c", Tool: "charge", Arguments: json.RawMessage(`{"id":"7"}`)})
	if res.Status != reach.StatusError || res.Error.Code != "breaker_open" || pay.runs.Load() != n {
		t.Fatalf("charge while pay is open: %s %+v", res.Status, res.Error)
	}
	if undone.Load() != 1 || !strings.Contains(res.ModelText(), "release") {
		t.Errorf("compensations run: %d, the model reads %q; want the reservation released", undone.Load(), res.ModelText())
	}
}

// TestBreakerOutlivesReregistration: an upstream that re-lists its tools
// (Replace) keeps the state of their breakers.
func TestBreakerOutlivesReregistration(t *testing.T) {
	rt := reach.New(nil)
	kb := &switchable{}
	kb.set(errDown)
	tool := reach.Tool{Name: "kb_search", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 1}, Breaker: &reach.BreakerPolicy{Failures: 1}, Func: kb.fn}
	rt.MustRegister(tool)
	oneCall(t, rt, "kb_search", `{}`)
	if err := rt.Replace(tool); err != nil {
		t.Fatal(err)
	}
	if res := oneCall(t, rt, "kb_search", `{}`); res.Error == nil || res.Error.Code != "breaker_open" {
		t.Errorf("after Replace: %+v, want the breaker still open", res.Error)
	}
}

// TestBreakerForOtherParts: a breaker made with Runtime.Breaker (the
// gateway's model endpoints) opens, fails at once and recovers the same
// way, and is listed with the others.
func TestBreakerForOtherParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		b := rt.Breaker("model", "gpt-x", &reach.BreakerPolicy{Failures: 2, OpenFor: 5 * time.Second})
		ctx := t.Context()
		for range 2 {
			p, e := b.Admit(ctx)
			if e != nil {
				t.Fatal(e)
			}
			p.Failed(fmt.Errorf("HTTP 503"))
		}
		_, e := b.Admit(ctx)
		if e == nil || e.Type != reach.TypeUnavailable || !strings.Contains(e.Message, "model gpt-x is unavailable") {
			t.Fatalf("Admit while open: %v", e)
		}
		if got := breakerState(rt, "model", "gpt-x"); got.State != reach.BreakerOpen || got.LastError != "HTTP 503" || got.Opened != 1 {
			t.Errorf("listed: %+v", got)
		}
		time.Sleep(5 * time.Second)
		p, e := b.Admit(ctx)
		if e != nil {
			t.Fatalf("after the interval: %v", e)
		}
		p.Succeeded()
		if b.State() != reach.BreakerClosed {
			t.Errorf("after the probe: %s", b.State())
		}
	})
}

// TestBreakerFailFastIsNotARetry: calls that an open breaker fails ran
// nothing: in one request the model may ask again and again, and each
// gets the breaker's error (with when to try again and what to use), not
// the loop guard's retry budget, which counts the failures that ran.
func TestBreakerFailFastIsNotARetry(t *testing.T) {
	rt := reach.New(nil)
	kb := &switchable{}
	kb.set(errDown)
	rt.MustRegister(reach.Tool{Name: "kb_search", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 1}, Func: kb.fn})
	ctx, _ := begin(t, rt, nil)
	var res *reach.Result
	for i := range 12 {
		turn(t, rt, ctx, func(ctx context.Context) {
			res = rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: "kb_search", Arguments: json.RawMessage(fmt.Sprintf(`{"q":"refunds %d"}`, i))})
		})
		if i >= 5 && (res.Error == nil || res.Error.Code != "breaker_open") {
			t.Fatalf("call %d: %+v, want the breaker's error", i+1, res.Error)
		}
	}
	if kb.runs.Load() != 5 {
		t.Errorf("the tool ran %d times, want 5 (the default breaker opens after 5)", kb.runs.Load())
	}
}
