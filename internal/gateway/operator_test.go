package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/front"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOperatorSurfaces: the UI, /metrics and the approvals API are served,
// and the UI and metrics see the calls made.
func TestOperatorSurfaces(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"ops","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`, nil)
	if code, body := get(t, srv.URL+"/ui/"); code != 200 || !strings.Contains(body, "ops") {
		t.Errorf("GET /ui/ = %d, want 200 listing request ops:\n%.300s", code, body)
	}
	if code, body := get(t, srv.URL+"/ui/requests/ops"); code != 200 || !strings.Contains(body, "search_kb") {
		t.Errorf("GET /ui/requests/ops = %d:\n%.300s", code, body)
	}
	if code, body := get(t, srv.URL+"/ui/tools"); code != 200 || !strings.Contains(body, "search_kb") {
		t.Errorf("GET /ui/tools = %d:\n%.300s", code, body)
	}
	if code, body := get(t, srv.URL+"/metrics"); code != 200 || !strings.Contains(body, "search_kb") {
		t.Errorf("GET /metrics = %d:\n%.500s", code, body)
	}
	if code, body := get(t, srv.URL+"/v1/approvals"); code != 200 || !strings.Contains(body, "approvals") {
		t.Errorf("GET /v1/approvals = %d: %s", code, body)
	}
}

// TestOTLPTraces: with telemetry.otlp_endpoint, every frame is exported as
// a span over OTLP/HTTP.
func TestOTLPTraces(t *testing.T) {
	var posts atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.Method == "POST" {
			io.Copy(io.Discard, r.Body)
			posts.Add(1)
		}
		w.WriteHeader(200)
	}))
	defer collector.Close()
	cfg, err := config.Parse([]byte("telemetry: {otlp_endpoint: "+collector.URL+"}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, g)
	do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`, nil)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Error("no spans reached the collector")
	}
	if _, err := config.Parse([]byte("telemetry: {otlp_endpoint: 127.0.0.1:4318}\n"), os.LookupEnv); err == nil {
		if _, err := New(context.Background(), &config.Config{Telemetry: &config.TelemetryConfig{OTLPEndpoint: "127.0.0.1:4318"}}, &Options{Offline: true}); err == nil {
			t.Error("an endpoint without a scheme was accepted")
		}
	}
}

// TestApprovalHeldCallCompletes: a high_risk call over MCP waits (approvals
// wait) in the queue; approving it through the API lets the held call
// complete, once.
func TestApprovalHeldCallCompletes(t *testing.T) {
	g, p, srv := upstreamGateway(t, probeConfig+"approvals: {ttl: 5m, wait: 10s}\n")
	cs := connectMCP(t, g, nil)
	type answer struct {
		res  *mcp.CallToolResult
		text string
	}
	done := make(chan answer, 1)
	go func() {
		res, text := callText(t, cs, "up__delete_all", map[string]any{}, nil)
		done <- answer{res, text}
	}()
	var id string
	for deadline := time.Now().Add(time.Minute); id == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, out := do(t, "GET", srv.URL+"/v1/approvals?status=pending", "", nil)
		if s, ok := path(out, "approvals", 0, "id").(string); ok {
			id = s
		}
	}
	if id == "" {
		t.Fatal("no pending approval appeared")
	}
	if len(p.metas) != 0 {
		t.Fatal("the call ran before it was approved")
	}
	status, out := do(t, "POST", srv.URL+"/v1/approvals/"+id+"/approve", `{"reason":"ok"}`, nil)
	if status != 200 {
		t.Fatalf("approve = %d %v", status, out)
	}
	select {
	case a := <-done:
		if a.res.IsError || a.text != "deleted" {
			t.Errorf("held call = %q (error %v), want it to run", a.text, a.res.IsError)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held call did not complete after approval")
	}
	p.mu.Lock()
	n := len(p.metas)
	p.mu.Unlock()
	if n != 1 {
		t.Errorf("the upstream ran the call %d times, want 1", n)
	}
}

// TestApprovalWaitSendsProgress: a client that asked for progress hears
// that its held call waits for approval, until it is approved.
func TestApprovalWaitSendsProgress(t *testing.T) {
	old := front.ApprovalEvery
	front.ApprovalEvery = 20 * time.Millisecond
	t.Cleanup(func() { front.ApprovalEvery = old })
	g, _, srv := upstreamGateway(t, probeConfig+"approvals: {wait: 10s}\n")
	heard := make(chan string, 100)
	cs := connectMCP(t, g, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		heard <- req.Params.Message
	}})
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "up__delete_all", Arguments: map[string]any{}}
		params.SetProgressToken("tok")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case msg := <-heard:
		if !strings.Contains(msg, "approval") {
			t.Errorf("progress message %q does not mention the approval", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress while the call waited")
	}
	_, out := do(t, "GET", srv.URL+"/v1/approvals?status=pending", "", nil)
	id, _ := path(out, "approvals", 0, "id").(string)
	if status, out := do(t, "POST", srv.URL+"/v1/approvals/"+id+"/approve", `{}`, nil); status != 200 {
		t.Fatalf("approve = %d %v", status, out)
	}
	select {
	case res := <-done:
		if res == nil || res.IsError {
			t.Errorf("held call = %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not complete")
	}
}

// TestForwardedTraceparentJoinsTheTrace: the traceparent reach hands an
// upstream names the trace reach exports the call's span in, with the
// call's frame as the parent span, so the upstream's own spans join it.
func TestForwardedTraceparentJoinsTheTrace(t *testing.T) {
	collector, exported := otlpCollector(t)
	g, p, _ := upstreamGateway(t, probeConfig+"telemetry: {otlp_endpoint: "+collector.URL+"}\n")
	cs := connectMCP(t, g, nil)
	res, _ := callText(t, cs, "up__echo", map[string]any{"text": "hi"}, nil)
	tp, _ := p.lastMeta()[link.MetaTraceparent].(string)
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[2] != res.Meta[link.MetaFrame] {
		t.Fatalf("traceparent %q, frame %v", tp, res.Meta[link.MetaFrame])
	}
	if err := g.Close(); err != nil { // flushes the spans
		t.Fatal(err)
	}
	spans := exported()
	for _, sp := range spans {
		if hex.EncodeToString(sp.SpanId) == parts[2] {
			if got := hex.EncodeToString(sp.TraceId); got != parts[1] {
				t.Errorf("the call's span is in trace %s, the upstream was told %s", got, parts[1])
			}
			return
		}
	}
	t.Errorf("no span for frame %s among %d exported", parts[2], len(spans))
}

// TestForeignTraceparentIsContinued: a call whose traceparent is another
// tracer's (its parent span is no frame of ours) begins its request in that
// trace, so the agent's trace goes on through reach to the upstream.
func TestForeignTraceparentIsContinued(t *testing.T) {
	const foreign = "0af7651916cd43dd8448eb211c80319c"
	collector, exported := otlpCollector(t)
	g, p, srv := upstreamGateway(t, probeConfig+"telemetry: {otlp_endpoint: "+collector.URL+"}\n")
	cs := connectMCP(t, g, nil)
	res, _ := callText(t, cs, "up__echo", map[string]any{"text": "hi"}, mcp.Meta{link.MetaTraceparent: "00-" + foreign + "-b7ad6b7169203331-01"})
	tp, _ := p.lastMeta()[link.MetaTraceparent].(string)
	if parts := strings.Split(tp, "-"); len(parts) != 4 || parts[1] != foreign {
		t.Errorf("the upstream was told traceparent %q, want it in trace %s", tp, foreign)
	}
	h := map[string]string{"traceparent": "00-" + foreign + "-b7ad6b7169203332-01"}
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"up__echo","arguments":{"text":"x"}}]}`, h)
	r, ok := g.rt.Lookup(fmt.Sprint(path(out, "request_id")))
	if !ok {
		t.Fatalf("no request in %v", out)
	}
	if got := r.Trace(); hex.EncodeToString(got[:]) != foreign {
		t.Errorf("a request begun for a call with another tracer's traceparent is in trace %x, want %s", got, foreign)
	}
	// Each call's SERVER span is the child of the caller's span that sent
	// it, and the CLIENT span of the call to the upstream (the frame's, whose
	// id the upstream was told) its child.
	want := map[string]string{fmt.Sprint(res.Meta[link.MetaFrame]): "b7ad6b7169203331", fmt.Sprint(path(out, "results", 0, "frame")): "b7ad6b7169203332"}
	if err := g.Close(); err != nil { // flushes the spans
		t.Fatal(err)
	}
	spans := exported()
	byID := map[string]*tracev1.Span{}
	for _, sp := range spans {
		byID[hex.EncodeToString(sp.SpanId)] = sp
	}
	for _, sp := range spans {
		if parent, ok := want[hex.EncodeToString(sp.SpanId)]; ok {
			server := byID[hex.EncodeToString(sp.ParentSpanId)]
			if sp.Kind != tracev1.Span_SPAN_KIND_CLIENT || server == nil || server.Kind != tracev1.Span_SPAN_KIND_SERVER ||
				hex.EncodeToString(server.ParentSpanId) != parent || hex.EncodeToString(sp.TraceId) != foreign {
				t.Errorf("span %s (%v): trace %x, under %v; want a CLIENT span in trace %s under a SERVER span under %s", sp.Name, sp.Kind, sp.TraceId, server, foreign, parent)
			}
			delete(want, hex.EncodeToString(sp.SpanId))
		}
	}
	if len(want) > 0 {
		t.Errorf("no span exported for frames %v", want)
	}
}

// otlpCollector is an OTLP/HTTP trace collector; exported returns the
// spans it received.
func otlpCollector(t *testing.T) (*httptest.Server, func() []*tracev1.Span) {
	var mu sync.Mutex
	var spans []*tracev1.Span
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracev1.ExportTraceServiceRequest
		if proto.Unmarshal(b, &req) == nil {
			mu.Lock()
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					spans = append(spans, ss.Spans...)
				}
			}
			mu.Unlock()
		}
		w.WriteHeader(200)
	}))
	t.Cleanup(collector.Close)
	return collector, func() []*tracev1.Span {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(spans)
	}
}

// TestOperatorRoutesAuthorizeFirst: with auth, every operators' route
// answers whoever is not an operator 403 operators_only before it reads
// the request (a malformed body or id is not reported to them), and
// /metrics, whose per-tool counts are every principal's, is one of them.
func TestOperatorRoutesAuthorizeFirst(t *testing.T) {
	_, url, _, keys := authGateway(t, "")
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	if status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"q"}}]}`, as("alice")); status != 200 {
		t.Fatalf("alice's call = %d %v", status, out)
	}
	for _, c := range []struct {
		method, path, body string
		operator           int // what an operator gets
	}{
		{"POST", "/v1/deadletters/x/dismiss", `{}`, http.StatusBadRequest},
		{"POST", "/v1/deadletters/x/dismiss", `not json`, http.StatusBadRequest},
		{"POST", "/v1/deadletters/x/retry", ``, http.StatusBadRequest},
		{"POST", "/v1/deadletters/dl-999/retry", ``, http.StatusNotFound},
		{"GET", "/v1/deadletters?state=all", ``, http.StatusOK},
		{"GET", "/v1/stats", ``, http.StatusOK},
		{"GET", "/metrics", ``, http.StatusOK},
	} {
		for _, who := range []string{"alice", "bob"} {
			status, body := rawAs(t, keys[who], c.method, url+c.path, c.body)
			var e struct{ Error httpjson.Error }
			if status != http.StatusForbidden || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "operators_only" {
				t.Errorf("%s: %s %s %s = %d %s, want 403 operators_only", who, c.method, c.path, c.body, status, body)
			}
		}
		if status, body := rawAs(t, keys["dave"], c.method, url+c.path, c.body); status != c.operator {
			t.Errorf("operator: %s %s %s = %d %s, want %d", c.method, c.path, c.body, status, body, c.operator)
		}
	}
	if _, body := rawAs(t, keys["dave"], "GET", url+"/metrics", ""); !strings.Contains(body, "search_kb") {
		t.Errorf("an operator's /metrics lacks the calls made:\n%.500s", body)
	}
}

// TestMetricsScrape: the gateway's /metrics, parsed as Prometheus does,
// has the process and Go collectors, reach_build_info, the upstream's up
// gauge and call duration, the requests by state, and with a data folder
// the store's commits and the audit log's events.
func TestMetricsScrape(t *testing.T) {
	g, _, srv := upstreamGateway(t, probeConfig+"data: "+t.TempDir()+"\n")
	cs := connectMCP(t, g, nil)
	callText(t, cs, "up__echo", map[string]any{"text": "hi"}, nil)
	if err := g.audit.Flush(t.Context()); err != nil { // the call's events are in the store
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus cannot parse /metrics: %v", err)
	}
	value := func(name, label, want string) (float64, bool) {
		for _, m := range fams[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == want {
					if h := m.GetHistogram(); h != nil {
						return float64(h.GetSampleCount()), true
					}
					return m.GetGauge().GetValue() + m.GetCounter().GetValue(), true
				}
			}
		}
		return 0, false
	}
	if v, ok := value("reach_upstream_up", "upstream", "up"); !ok || v != 1 {
		t.Errorf("reach_upstream_up{upstream=up} = %v (%v), want 1", v, ok)
	}
	if v, ok := value("reach_upstream_call_duration_seconds", "upstream", "up"); !ok || v != 1 {
		t.Errorf("reach_upstream_call_duration_seconds{upstream=up} count = %v (%v), want 1", v, ok)
	}
	if _, ok := value("reach_requests_active", "state", "idle"); !ok {
		t.Error("no reach_requests_active{state=idle}")
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "reach_build_info", "reach_tool_calls_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// The call's audit events were committed by the store's writer: at
	// least one transaction, each timed.
	if v, ok := value("reach_audit_events_total", "outcome", "appended"); !ok || v < 1 {
		t.Errorf("reach_audit_events_total{outcome=appended} = %v (%v), want at least 1", v, ok)
	}
	if v, ok := value("reach_audit_events_total", "outcome", "dropped"); !ok || v != 0 {
		t.Errorf("reach_audit_events_total{outcome=dropped} = %v (%v), want 0", v, ok)
	}
	one := func(name string) *dto.Metric {
		ms := fams[name].GetMetric()
		if len(ms) != 1 {
			t.Fatalf("/metrics has %d series of %s, want 1", len(ms), name)
		}
		return ms[0]
	}
	commits := one("reach_store_commits_total").GetCounter().GetValue()
	if writes := one("reach_store_writes_total").GetCounter().GetValue(); commits < 1 || writes < commits {
		t.Errorf("reach_store_commits_total %v, reach_store_writes_total %v: want at least one commit, and a write in each", commits, writes)
	}
	if h := one("reach_store_commit_duration_seconds").GetHistogram(); float64(h.GetSampleCount()) != commits || h.GetSampleSum() <= 0 {
		t.Errorf("reach_store_commit_duration_seconds: count %d, sum %v; want the commits' count (%v) and a positive sum", h.GetSampleCount(), h.GetSampleSum(), commits)
	}
	if v := one("reach_store_queued_writes_failed_total").GetCounter().GetValue(); v != 0 {
		t.Errorf("reach_store_queued_writes_failed_total = %v, want 0", v)
	}
}

// TestProbes: /livez is 200 while the gateway serves; /readyz is 503 while
// a required upstream is down and while the gateway shuts down, 200 with
// only an optional one down; /healthz reports degraded with 200; none needs
// credentials.
func TestProbes(t *testing.T) {
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprint("required=", required), func(t *testing.T) {
			p := newUpstreamProbe()
			up := serveUpstream(t, p)
			cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\n    required: %v\n", up.URL, required)), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g := newTestGateway(t, cfg)
			srv := serveTest(t, g)
			for _, path := range []string{"/livez", "/readyz", "/healthz"} {
				if code, body := get(t, srv.URL+path); code != 200 {
					t.Errorf("GET %s = %d %s, want 200", path, code, body)
				}
			}
			// The upstream goes away: a call finds it unreachable.
			up.CloseClientConnections()
			up.Close()
			cs := connectMCP(t, g, nil)
			cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"}})
			if code, body := get(t, srv.URL+"/healthz"); code != 200 || !strings.Contains(body, `"status":"degraded"`) || !strings.Contains(body, fmt.Sprintf(`"ready":%v`, !required)) {
				t.Errorf("/healthz with the upstream down = %d %s, want 200, degraded, ready %v", code, body, !required)
			}
			code, body := get(t, srv.URL+"/readyz")
			if required && (code != http.StatusServiceUnavailable || !strings.Contains(body, "required upstream up is not connected")) {
				t.Errorf("/readyz with a required upstream down = %d %s, want 503 naming it", code, body)
			}
			if !required && code != 200 {
				t.Errorf("/readyz with an optional upstream down = %d %s, want 200", code, body)
			}
			if code, _ := get(t, srv.URL+"/livez"); code != 200 {
				t.Errorf("/livez with the upstream down = %d, want 200", code)
			}
			g.draining.Store(true)
			if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
				t.Errorf("/readyz while shutting down = %d %s", code, body)
			}
		})
	}
	_, url, _, _ := authGateway(t, "")
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		if code, body := get(t, url+p); code != 200 {
			t.Errorf("with auth, GET %s without credentials = %d %s, want 200", p, code, body)
		}
	}
}
