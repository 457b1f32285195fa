package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A nested model call is the child span of the tool call that made it, a
// sub-agent's frames belong to the same trace, and the GenAI attributes are
// set.
func TestSpanParents(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, &TracerOptions{Sync: true})
	m := NewMetrics().WithSpanDrops(tr)
	rt := reach.New(&reach.Options{Recorder: reach.Recorders(tr, m)})
	rt.MustRegister(reach.Tool{Name: "format_answer", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		mctx, mf, err := rt.BeginModel(ctx, "inner")
		if err != nil {
			return nil, err
		}
		defer mf.EndModel(reach.TokenUsage{Input: 7})
		rt.Call(mctx, &reach.Call{ID: "c2", Tool: "format_answer", Arguments: args}) // refused: re-entry
		return json.RawMessage(`"ok"`), nil
	}})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1"})
	mctx, turn, _ := rt.BeginModel(ctx, "outer")
	rt.Call(mctx, &reach.Call{ID: "c1", Tool: "format_answer", Arguments: json.RawMessage(`{}`)})
	turn.EndModel(reach.TokenUsage{Input: 100, Output: 20})
	sctx, sub, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "t"})
	_, sm, _ := rt.BeginModel(sctx, "sub-model")
	sm.EndModel(reach.TokenUsage{Input: 5})
	sub.End()
	req.End()
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		if s.SpanContext.TraceID() != trace.TraceID(req.Trace()) {
			t.Errorf("span %s is in trace %s, want the root request's", s.Name, s.SpanContext.TraceID())
		}
	}
	for _, f := range req.Frames() {
		s, ok := byID[f.ID.String()]
		if !ok {
			t.Errorf("no span for frame %s %s", f.Kind, f.Name)
			continue
		}
		want := RequestSpanID(trace.TraceID(req.Trace()), "r1").String() // a top frame hangs from its request's span
		if f.Parent != nil {
			want = f.Parent.ID.String()
		}
		if got := s.Parent.SpanID().String(); got != want {
			t.Errorf("span %s parent = %s, want %s", s.Name, got, want)
		}
	}
	attrs := map[string]string{}
	for _, s := range spans {
		if s.Name == "execute_tool format_answer" {
			for _, a := range s.Attributes {
				attrs[string(a.Key)] = a.Value.String()
			}
		}
	}
	if attrs["gen_ai.operation.name"] != "execute_tool" || attrs["gen_ai.tool.name"] != "format_answer" || attrs["mcp.method.name"] != "tools/call" {
		t.Errorf("attributes = %v", attrs)
	}
	if len(byID) != 7 { // the request, outer, tool, inner, refused tool, delegate, sub-model
		t.Errorf("%d spans, want 7", len(byID))
	}
	if r, ok := byID[RequestSpanID(trace.TraceID(req.Trace()), "r1").String()]; !ok || r.Name != "invoke_agent main" || r.Parent.IsValid() {
		t.Errorf("the request's span = %+v, want a root invoke_agent main", r)
	}
}

// The metrics after a known sequence of calls.
func TestMetrics(t *testing.T) {
	m := NewMetrics()
	rt := reach.New(&reach.Options{Recorder: m})
	rt.MustRegister(reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"v":1}`), nil
	}})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{Budget: &reach.Budget{ToolCalls: 4}})
	for range 5 {
		rt.Call(ctx, &reach.Call{ID: "x", Tool: "get", Arguments: json.RawMessage(`{"k":1}`)})
	}
	rt.Call(ctx, &reach.Call{ID: "y", Tool: "nope"})
	_, mf, _ := rt.BeginModel(ctx, "m")
	mf.EndModel(reach.TokenUsage{Input: 30, Output: 12})
	req.Stop(reach.Cancel, "ops", "test")
	fams := scrape(t, m)
	for _, w := range []struct {
		name   string
		labels string
		want   float64
	}{
		{"reach_tool_calls_total", `state="completed",tool="get"`, 2},
		{"reach_tool_calls_total", `state="refused",tool="get"`, 3},
		// 3rd and 4th identical calls: loops; 5th, and the unknown tool: the budget of 4.
		{"reach_refusals_total", `code="loop_repeat",guard="loops"`, 2},
		{"reach_refusals_total", `code="budget_tool_calls",guard="admit"`, 2},
		{"reach_tool_calls_total", `state="refused",tool="nope"`, 1},
		{"reach_budgets_exhausted_total", `budget="tool_calls"`, 2},
		{"reach_stops_total", `mode="cancel"`, 1},
		{"reach_model_tokens_total", `direction="input",model="m"`, 30},
		{"reach_model_tokens_total", `direction="output",model="m"`, 12},
		{"reach_tool_call_duration_seconds", `tool="get"`, 2}, // the count
		{"reach_model_call_duration_seconds", `model="m"`, 1},
	} {
		if got, ok := fams[w.name][w.labels]; !ok || got != w.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", w.name, w.labels, got, ok, w.want)
		}
	}
}

// scrape serves m's /metrics, parses it as Prometheus does, and returns
// each family's values by their labels (a histogram's: its count).
func scrape(t *testing.T, m *Metrics) map[string]map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d: %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("Prometheus cannot parse /metrics: %v", err)
	}
	out := map[string]map[string]float64{}
	for name, mf := range fams {
		out[name] = map[string]float64{}
		for _, mt := range mf.GetMetric() {
			var ls []string
			for _, l := range mt.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue() + mt.GetUntyped().GetValue()
			if h := mt.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[name][strings.Join(ls, ",")] = v
		}
	}
	return out
}

// TestBreakerMetrics: the breakers' states are the gauge
// reach_breaker_state (0 closed, 1 open, 2 half-open), with how often each
// opened, and Prometheus parses them; a breaker's change of state is not a
// tool call.
func TestBreakerMetrics(t *testing.T) {
	m := NewMetrics()
	s := NewStats(16)
	rt := reach.New(&reach.Options{Recorder: reach.Recorders(m, s), DisableLoopGuard: true})
	m.WithBreakers(rt.Breakers)
	rt.MustRegister(reach.Tool{Name: "get", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 1}, Breaker: &reach.BreakerPolicy{Failures: 2},
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "unavailable", Message: "kb is not reachable"}
		}})
	ctx, req, _ := rt.Begin(t.Context(), nil)
	defer req.End()
	for range 3 {
		rt.Call(ctx, &reach.Call{ID: "x", Tool: "get", Arguments: json.RawMessage(`{}`)})
	}
	var b strings.Builder
	m.WriteTo(&b)
	out := b.String()
	for _, want := range []string{
		`reach_breaker_state{kind="tool",name="get"} 1`,
		`reach_breaker_state{kind="upstream",name="kb"} 0`,
		`reach_breaker_opened_total{kind="tool",name="get"} 1`,
		`reach_tool_calls_total{state="failed",tool="get"} 3`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %s\n%s", want, out)
		}
	}
	if strings.Contains(out, `tool="tool:get"`) {
		t.Errorf("a breaker's change counted as a tool call:\n%s", out)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := p.TextToMetricFamilies(strings.NewReader(out)); err != nil {
		t.Fatalf("Prometheus cannot parse the exposition: %v\n%s", err, out)
	}
	for _, st := range s.Snapshot() {
		if st.Tool != "get" {
			t.Errorf("stats for %q: a breaker's change counted as a call", st.Tool)
		}
	}
}

func TestStats(t *testing.T) {
	s := NewStats(4)
	ev := func(state reach.State, lat time.Duration, code, guard string) {
		e := &reach.Event{Frame: 1, Kind: reach.ToolFrame, Name: "t", State: state, Latency: lat}
		if code != "" {
			e.Error = &reach.Error{Code: code, Guard: guard}
		}
		s.Record(context.Background(), e)
	}
	for i := 1; i <= 6; i++ {
		ev(reach.Completed, time.Duration(i)*time.Millisecond, "", "")
	}
	ev(reach.Failed, 10*time.Millisecond, "timeout", "execute")
	ev(reach.Refused, 0, "cycle", "graph")
	got := s.Snapshot()[0]
	// The window of 4 keeps the latest latencies: 4, 5, 6 and 10 ms (ring order).
	if got.Calls != 8 || got.Completed != 6 || got.Failed != 1 || got.Refused != 1 || got.Failures["timeout"] != 1 || got.RefusedBy["graph"] != 1 {
		t.Fatalf("stats = %+v", got)
	}
	if got.P50 != 5*time.Millisecond || got.P95 != 6*time.Millisecond || got.SuccessRate != 6.0/7 {
		t.Errorf("p50 %s p95 %s rate %v", got.P50, got.P95, got.SuccessRate)
	}
}

// TestRecordAfterShutdown: a frame that ends after the Tracer was shut
// down (a call outliving its gateway) is dropped and counted, not a panic,
// also while Shutdown runs.
func TestRecordAfterShutdown(t *testing.T) {
	tr := NewTracer(tracetest.NewInMemoryExporter(), nil)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 1000 {
				tr.Record(context.Background(), &reach.Event{Frame: reach.FrameID(i*1000 + j + 1), Root: "r", Kind: reach.ToolFrame, Name: "t"})
			}
		})
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	before := tr.Dropped()
	tr.Record(context.Background(), &reach.Event{Frame: 99999, Root: "r", Kind: reach.ToolFrame, Name: "t"})
	if got := tr.Dropped(); got != before+1 {
		t.Errorf("a frame recorded after Shutdown: dropped %d, want %d", got, before+1)
	}
}

// TestMetricsExposition: whatever names callers choose, /metrics stays
// valid for Prometheus's own parser, and the names make a bounded number
// of series.
func TestMetricsExposition(t *testing.T) {
	m := NewMetrics()
	names := []string{"x\ty", "z\u2028", "bad\xffutf8", `q"b\c`, "new\nline", "get"}
	for i, n := range names {
		m.Record(context.Background(), &reach.Event{Frame: reach.FrameID(i + 1), Kind: reach.ToolFrame, Name: n, State: reach.Completed, Latency: time.Millisecond})
	}
	m.Record(context.Background(), &reach.Event{Frame: 100, Kind: reach.ToolFrame, Name: "ghost\x1b", State: reach.Refused,
		Error: &reach.Error{Guard: "resolve\x00", Code: "unknown_tool"}})
	var b strings.Builder
	m.WriteTo(&b)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("Prometheus cannot parse the exposition: %v\n%s", err, b.String())
	}
	tools := map[string]bool{}
	for _, mf := range fams["reach_tool_calls_total"].GetMetric() {
		for _, l := range mf.GetLabel() {
			if l.GetName() == "tool" {
				tools[l.GetValue()] = true
			}
		}
	}
	for _, want := range []string{"x\ty", `q"b\c`, "new\nline", "bad\uFFFDutf8", unknownTool} {
		if !tools[want] {
			t.Errorf("no series for tool %q; have %v", want, tools)
		}
	}
	if tools["ghost\x1b"] {
		t.Error("a name no tool has got a series of its own")
	}

	m = NewMetrics()
	s := NewStats(4)
	for i := range maxToolLabels + 500 {
		e := &reach.Event{Frame: reach.FrameID(i + 1), Kind: reach.ToolFrame, Name: fmt.Sprintf("t%d", i), State: reach.Refused,
			Error: &reach.Error{Guard: "admit", Code: "budget_tool_calls"}}
		m.Record(context.Background(), e)
		s.Record(context.Background(), e)
	}
	if n := len(m.calls); n > maxToolLabels+1 {
		t.Errorf("%d distinct tool names made %d series, want at most %d", maxToolLabels+500, n, maxToolLabels+1)
	}
	if n := len(s.Snapshot()); n > maxToolLabels+1 {
		t.Errorf("%d distinct tool names made %d stats entries, want at most %d", maxToolLabels+500, n, maxToolLabels+1)
	}
}

// TestUnregisteredNamesShareOneLabel: with the registry known, calls to
// names no tool has count under "(unknown)" however they were refused, so
// a client cannot use up the tool labels of the real tools.
func TestUnregisteredNamesShareOneLabel(t *testing.T) {
	known := func(name string) bool { return name == "get" }
	m := NewMetrics().WithTools(known)
	s := NewStats(4).WithTools(known)
	rec := func(e *reach.Event) { m.Record(context.Background(), e); s.Record(context.Background(), e) }
	for i := range maxToolLabels + 10 {
		rec(&reach.Event{Frame: reach.FrameID(i + 1), Kind: reach.ToolFrame, Name: fmt.Sprintf("nope_%d", i), State: reach.Refused,
			Error: &reach.Error{Guard: "admit", Code: "stopped_soft"}})
	}
	rec(&reach.Event{Frame: 99999, Kind: reach.ToolFrame, Name: "get", State: reach.Completed, Latency: time.Millisecond})
	fams := scrape(t, m)
	if got := fams["reach_tool_calls_total"][`state="completed",tool="get"`]; got != 1 {
		t.Errorf("get completed = %v, want 1", got)
	}
	if got := fams["reach_tool_calls_total"][`state="refused",tool="(unknown)"`]; got != maxToolLabels+10 {
		t.Errorf("(unknown) refused = %v, want %d", got, maxToolLabels+10)
	}
	if got := s.Snapshot(); len(got) != 2 {
		t.Errorf("stats have %d entries, want get and (unknown)", len(got))
	}
}

// TestTraceIsPerRootRequest: two requests with the same id, one after the
// other or of two principals, are two traces; a sub-request is in its
// root's.
func TestTraceIsPerRootRequest(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, &TracerOptions{Sync: true})
	rt := reach.New(&reach.Options{Recorder: tr})
	var traces []trace.TraceID
	for _, who := range []string{"alice", "bob"} {
		ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "1", Principal: who})
		_, mf, _ := rt.BeginModel(ctx, "m")
		mf.EndModel(reach.TokenUsage{Input: 1})
		sctx, sub, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "helper", Task: "t"})
		if sub.Trace() != req.Trace() {
			t.Error("a sub-request is not in its root's trace")
		}
		_, sm, _ := rt.BeginModel(sctx, "m")
		sm.EndModel(reach.TokenUsage{Input: 1})
		sub.End()
		req.End()
		traces = append(traces, trace.TraceID(req.Trace()))
	}
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if traces[0] == traces[1] || !traces[0].IsValid() {
		t.Fatalf("two requests named 1 share trace %s", traces[0])
	}
	per := map[trace.TraceID]int{}
	for _, s := range exp.GetSpans() {
		per[s.SpanContext.TraceID()]++
	}
	if per[traces[0]] != 4 || per[traces[1]] != 4 { // the request, its model call, the delegation, the sub-request's model call
		t.Errorf("spans per trace = %v, want 4 in each of %s and %s", per, traces[0], traces[1])
	}
}

// TestRemoteParentSpan: in a request that continues another tracer's
// trace, a top frame made with reach.WithRemoteParent is the child span of
// the caller's span; a nested frame stays its parent frame's child; and a
// remote parent from another trace than the request's is ignored (the span
// would hang from a span no trace holds).
func TestRemoteParentSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, &TracerOptions{Sync: true})
	rt := reach.New(&reach.Options{Recorder: tr})
	rt.MustRegister(reach.Tool{Name: "lookup", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		_, mf, err := rt.BeginModel(ctx, "inner")
		if err != nil {
			return nil, err
		}
		mf.EndModel(reach.TokenUsage{Input: 1})
		return args, nil
	}})
	foreign := [16]byte{0x0a, 0xf7, 0x65, 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	other := [16]byte{0xbb, 1}
	callerA, callerB, stranger := [8]byte{0xb7, 1}, [8]byte{0xb7, 2}, [8]byte{0xcc, 3}
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Trace: foreign})
	if err != nil {
		t.Fatal(err)
	}
	rt.Call(reach.WithRemoteParent(ctx, foreign, callerA), &reach.Call{ID: "a", Tool: "lookup", Arguments: json.RawMessage(`{"q":1}`)})
	rt.Call(reach.WithRemoteParent(ctx, foreign, callerB), &reach.Call{ID: "b", Tool: "lookup", Arguments: json.RawMessage(`{"q":2}`)})
	rt.Call(reach.WithRemoteParent(ctx, other, stranger), &reach.Call{ID: "c", Tool: "lookup", Arguments: json.RawMessage(`{"q":3}`)})
	_, turn, _ := rt.BeginModel(reach.WithRemoteParent(ctx, foreign, callerB), "outer")
	turn.EndModel(reach.TokenUsage{Input: 1})
	req.End()
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() != trace.TraceID(foreign) {
			t.Errorf("span %s is in trace %s, want %x", s.Name, s.SpanContext.TraceID(), foreign)
		}
		key := s.Name
		for _, a := range s.Attributes {
			if a.Key == "gen_ai.tool.call.id" {
				key += " " + a.Value.AsString()
			}
		}
		parent := ""
		if s.Parent.IsValid() {
			parent = s.Parent.SpanID().String()
		}
		if s.Name == "invoke_agent main" {
			if parent != trace.SpanID(callerA).String() {
				t.Errorf("the request's span hangs from %q, want the first caller's span", parent)
			}
			continue
		}
		if s.Name == "chat inner" {
			if parent == "" || parent == trace.SpanID(callerA).String() || parent == trace.SpanID(callerB).String() {
				t.Errorf("a nested model call's parent is %q, want its tool call's frame", parent)
			}
			continue
		}
		parents[key] = parent
	}
	want := map[string]string{
		"execute_tool lookup a": trace.SpanID(callerA).String(),
		"execute_tool lookup b": trace.SpanID(callerB).String(),
		"execute_tool lookup c": RequestSpanID(trace.TraceID(foreign), "r1").String(), // its caller's span is in another trace
		"chat outer":            trace.SpanID(callerB).String(),
	}
	for k, w := range want {
		if parents[k] != w {
			t.Errorf("span %q has parent %q, want %q", k, parents[k], w)
		}
	}
}

// TestMetricsFamilies: /metrics has the Go and process collectors and
// reach_build_info; per-upstream up, call duration and errors; model call
// duration, tokens by direction and model, and cost; the live requests by
// state; and cancellations counted apart from refusals.
func TestMetricsFamilies(t *testing.T) {
	m := NewMetrics()
	release := make(chan struct{})
	rt := reach.New(&reach.Options{Recorder: m, Prices: map[string]reach.Price{"gpt": {Input: 2, Output: 8}}})
	m.WithUpstreams(func() map[string]bool { return map[string]bool{"tickets": true, "memory": false} },
		func(tool string) string {
			if strings.HasPrefix(tool, "tickets__") {
				return "tickets"
			}
			return ""
		}).WithRequests(func() map[string]int {
		n := map[string]int{}
		for _, r := range rt.Requests() {
			n[RequestActivity(r, time.Now()).State]++
		}
		return n
	})
	rt.MustRegister(
		reach.Tool{Name: "tickets__get", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}},
		reach.Tool{Name: "tickets__close", Reentrancy: reach.Reentrant, Retry: &reach.RetryPolicy{Attempts: 1}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("upstream said no")
		}},
		reach.Tool{Name: "wait", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, context.Cause(ctx)
		}},
	)
	ctx, _, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "idle"})
	rt.Call(ctx, &reach.Call{ID: "a", Tool: "tickets__get", Arguments: json.RawMessage(`{}`)})
	rt.Call(ctx, &reach.Call{ID: "b", Tool: "tickets__close", Arguments: json.RawMessage(`{}`)})
	_, mf, _ := rt.BeginModel(ctx, "gpt")
	mf.EndModel(reach.TokenUsage{Input: 1_000_000, Output: 500_000})
	wctx, waiting, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "running"})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Call(wctx, &reach.Call{ID: "w", Tool: "wait", Arguments: json.RawMessage(`{}`)})
	}()
	for len(waiting.Frames()) == 0 || waiting.Frames()[0].State() != reach.Executing {
		time.Sleep(time.Millisecond)
	}
	fams := scrape(t, m)
	for _, w := range []struct {
		name, labels string
		want         float64
	}{
		{"reach_upstream_up", `upstream="tickets"`, 1},
		{"reach_upstream_up", `upstream="memory"`, 0},
		{"reach_upstream_call_duration_seconds", `upstream="tickets"`, 2},
		{"reach_upstream_errors_total", `code="tool_error",upstream="tickets"`, 1},
		{"reach_model_tokens_total", `direction="input",model="gpt"`, 1_000_000},
		{"reach_model_tokens_total", `direction="output",model="gpt"`, 500_000},
		{"reach_model_cost_total", `model="gpt"`, 6},
		{"reach_model_call_duration_seconds", `model="gpt"`, 1},
		{"reach_requests_active", `state="running"`, 1},
		{"reach_requests_active", `state="idle"`, 1},
		{"reach_requests_active", `state="waiting_for_approval"`, 0},
	} {
		if got, ok := fams[w.name][w.labels]; !ok || got != w.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", w.name, w.labels, got, ok, w.want)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	if len(fams["reach_build_info"]) != 1 {
		t.Errorf("reach_build_info = %v", fams["reach_build_info"])
	}
	// A stop cancels the running call: a cancellation, not a refusal.
	waiting.Stop(reach.Cancel, "ops", "test")
	<-done
	fams = scrape(t, m)
	var cancels, refusals float64
	for _, v := range fams["reach_cancellations_total"] {
		cancels += v
	}
	for _, v := range fams["reach_refusals_total"] {
		refusals += v
	}
	if cancels != 1 || refusals != 0 {
		t.Errorf("after a stop cancelled a running call: %v cancellations, %v refusals; want 1 and 0", cancels, refusals)
	}
}

// TestStoreAndAuditMetrics: the store writer's counts and commit times,
// and the audit log's events by outcome, are exposed as Prometheus has
// them (a histogram's buckets cumulative, a commit longer than the last
// bound counted in +Inf only), and Prometheus parses them.
func TestStoreAndAuditMetrics(t *testing.T) {
	st := store.WriterStats{Batches: 5, Writes: 12, QueuedFailed: 1}
	st.Commit.Buckets[0] = 1 // ≤ 100 µs
	st.Commit.Buckets[2] = 2 // ≤ 500 µs
	st.Commit.Buckets[len(st.Commit.Buckets)-1] = 1
	st.Commit.Count, st.Commit.Sum = 5, 3*time.Second // one of them longer than every bound
	m := NewMetrics().WithStore(func() store.WriterStats { return st }).
		WithAudit(func() audit.Stats { return audit.Stats{Appended: 40, Dropped: 2, Failed: 3, Queued: 7} }).
		WithLogRepeats(func() map[string]int64 { return map[string]int64{"history: reading a request": 4} })
	var b strings.Builder
	m.WriteTo(&b)
	out := b.String()
	for _, want := range []string{
		`reach_store_commits_total 5`,
		`reach_store_writes_total 12`,
		`reach_store_queued_writes_failed_total 1`,
		`reach_store_commit_duration_seconds_bucket{le="0.0001"} 1`,
		`reach_store_commit_duration_seconds_bucket{le="0.00025"} 1`,
		`reach_store_commit_duration_seconds_bucket{le="0.0005"} 3`,
		`reach_store_commit_duration_seconds_bucket{le="0.25"} 3`,
		`reach_store_commit_duration_seconds_bucket{le="1"} 4`,
		`reach_store_commit_duration_seconds_bucket{le="+Inf"} 5`,
		`reach_store_commit_duration_seconds_sum 3`,
		`reach_store_commit_duration_seconds_count 5`,
		`reach_audit_events_total{outcome="appended"} 40`,
		`reach_audit_events_total{outcome="dropped"} 2`,
		`reach_audit_events_total{outcome="failed"} 3`,
		`reach_audit_queue_length 7`,
		`reach_log_repeats_total{message="history: reading a request"} 4`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %s\n%s", want, out)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := p.TextToMetricFamilies(strings.NewReader(out)); err != nil {
		t.Fatalf("Prometheus cannot parse the exposition: %v\n%s", err, out)
	}
	// Without their sources, none of them.
	b.Reset()
	NewMetrics().WriteTo(&b)
	if strings.Contains(b.String(), "reach_store_") || strings.Contains(b.String(), "reach_audit_") {
		t.Errorf("metrics without a store or audit log expose them:\n%s", b.String())
	}
}
