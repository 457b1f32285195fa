package telemetry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an in-process OTLP/HTTP trace collector: it decodes what the
// exporter sends, as a collector would, or answers status.
type receiver struct {
	mu       sync.Mutex
	spans    []*tracev1.Span
	resource map[string]string
	status   int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.status != 0 {
		w.WriteHeader(rc.status)
		return
	}
	var req coltracev1.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		rc.resource = attrMap(rs.Resource.Attributes)
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	w.WriteHeader(http.StatusOK)
}

func attrMap(kvs []*commonv1.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			b, _ := json.Marshal(v.Value)
			m[kv.Key] = string(b)
			if i, ok := v.Value.(*commonv1.AnyValue_IntValue); ok {
				m[kv.Key] = itoa(i.IntValue)
			}
		}
	}
	return m
}

func itoa(i int64) string { b, _ := json.Marshal(i); return string(b) }

func newReceiverTracer(t *testing.T, o *TracerOptions, retry bool) (*Tracer, *receiver) {
	t.Helper()
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: retry}))
	if err != nil {
		t.Fatal(err)
	}
	return NewTracer(exp, o), rc
}

// TestOTLPConventions: over a real OTLP/HTTP exporter to an in-process
// receiver, a served request's spans follow the semantic conventions:
// service.name reach, one invoke_agent root span, a SERVER span for each
// call that came in, a CLIENT span for each call to an upstream and to the
// model (with the GenAI usage, provider, response model and server
// attributes), INTERNAL spans for tools run in process, each with the
// right parent; and a call waiting for approval is not an error.
func TestOTLPConventions(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	peer := func(e *reach.Event) Peer {
		switch {
		case e.Kind == reach.ModelFrame:
			return Peer{Remote: true, Provider: "openai", Address: "models.internal", Port: 8000}
		case e.Name == "up__search":
			return Peer{Remote: true, Address: "search.internal", Port: 443}
		}
		return Peer{}
	}
	tr, rc := newReceiverTracer(t, &TracerOptions{Served: true, Peer: peer, Version: "v1.2.3"}, true)
	rt := reach.New(&reach.Options{Recorder: tr, Approver: pendingApprover{}})
	rt.MustRegister(
		reach.Tool{Name: "format_answer", Access: reach.Read, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			_, mf, err := rt.BeginModel(ctx, "gpt-4o-mini")
			if err != nil {
				return nil, err
			}
			mf.EndModel(reach.TokenUsage{Input: 120, Output: 30, Model: "gpt-4o-mini-2024-07-18"})
			return json.RawMessage(`"ok"`), nil
		}},
		reach.Tool{Name: "up__search", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`[]`), nil
		}},
		reach.Tool{Name: "refund", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"refunded"`), nil
		}},
	)
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Agent: "support"})
	rt.Call(ctx, &reach.Call{ID: "c1", Tool: "format_answer", Arguments: json.RawMessage(`{}`)})
	rt.Call(ctx, &reach.Call{ID: "c2", Tool: "up__search", Arguments: json.RawMessage(`{}`)})
	_, turn, _ := rt.BeginModel(ctx, "gpt-4o")
	turn.EndModel(reach.TokenUsage{Input: 1000, Output: 50})
	if res := rt.Call(ctx, &reach.Call{ID: "c3", Tool: "refund", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusPending {
		t.Fatalf("the refund is %s, want pending", res.Status)
	}
	req.End()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.resource["service.name"] != "reach" || rc.resource["service.version"] != "v1.2.3" {
		t.Errorf("resource %v, want service.name reach and service.version v1.2.3", rc.resource)
	}
	type got struct {
		kind          tracev1.Span_SpanKind
		parent        string
		attrs         map[string]string
		status        tracev1.Status_StatusCode
		id            string
		parentName    string
		errorTypeSeen bool
	}
	byName := map[string]*got{}
	names := map[string]string{}
	for _, s := range rc.spans {
		names[hex.EncodeToString(s.SpanId)] = s.Name
	}
	for _, s := range rc.spans {
		g := &got{kind: s.Kind, parent: hex.EncodeToString(s.ParentSpanId), attrs: attrMap(s.Attributes), id: hex.EncodeToString(s.SpanId)}
		g.parentName = names[g.parent]
		if s.Status != nil {
			g.status = s.Status.Code
		}
		key := s.Name
		if _, dup := byName[key]; dup {
			key += " (" + g.parentName + ")"
		}
		byName[key] = g
	}
	want := []struct {
		name       string
		kind       tracev1.Span_SpanKind
		parentName string
		attrs      map[string]string
	}{
		{"invoke_agent support", tracev1.Span_SPAN_KIND_INTERNAL, "", map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
			"gen_ai.usage.input_tokens": "1120", "gen_ai.usage.output_tokens": "80"}},
		{"tools/call format_answer", tracev1.Span_SPAN_KIND_SERVER, "invoke_agent support", map[string]string{"gen_ai.tool.name": "format_answer", "mcp.method.name": "tools/call"}},
		{"chat gpt-4o-mini", tracev1.Span_SPAN_KIND_CLIENT, "tools/call format_answer", map[string]string{"gen_ai.operation.name": "chat",
			"gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.provider.name": "openai",
			"gen_ai.usage.input_tokens": "120", "gen_ai.usage.output_tokens": "30", "server.address": "models.internal", "server.port": "8000"}},
		{"tools/call up__search", tracev1.Span_SPAN_KIND_SERVER, "invoke_agent support", map[string]string{"mcp.method.name": "tools/call"}},
		{"tools/call up__search (tools/call up__search)", tracev1.Span_SPAN_KIND_CLIENT, "tools/call up__search", map[string]string{"server.address": "search.internal", "server.port": "443"}},
		{"POST /v1/chat/completions", tracev1.Span_SPAN_KIND_SERVER, "invoke_agent support", map[string]string{"http.request.method": "POST", "http.route": "/v1/chat/completions"}},
		{"chat gpt-4o", tracev1.Span_SPAN_KIND_CLIENT, "POST /v1/chat/completions", map[string]string{"gen_ai.usage.input_tokens": "1000", "gen_ai.usage.output_tokens": "50",
			"gen_ai.response.model": "gpt-4o"}},
		{"tools/call refund", tracev1.Span_SPAN_KIND_SERVER, "invoke_agent support", map[string]string{"reach.approval": "pending"}},
	}
	for _, w := range want {
		g, ok := byName[w.name]
		if !ok {
			t.Errorf("no span %q among %v", w.name, slices.Sorted(func(yield func(string) bool) {
				for k := range byName {
					if !yield(k) {
						return
					}
				}
			}))
			continue
		}
		if g.kind != w.kind || g.parentName != w.parentName {
			t.Errorf("span %q: kind %v under %q, want %v under %q", w.name, g.kind, g.parentName, w.kind, w.parentName)
		}
		for k, v := range w.attrs {
			if g.attrs[k] != v {
				t.Errorf("span %q: %s = %q, want %q", w.name, k, g.attrs[k], v)
			}
		}
		if _, ok := g.attrs["gen_ai.usage.total_tokens"]; ok {
			t.Errorf("span %q has gen_ai.usage.total_tokens, which the conventions do not have", w.name)
		}
	}
	if g := byName["tools/call refund"]; g != nil && (g.status == tracev1.Status_STATUS_CODE_ERROR || g.attrs["error.type"] != "") {
		t.Errorf("a call waiting for approval is an error span: status %v, error.type %q", g.status, g.attrs["error.type"])
	}
	if len(rc.spans) != len(want) {
		t.Errorf("%d spans, want %d", len(rc.spans), len(want))
	}
}

// pendingApprover files every call it is asked about and answers that it
// waits for a human.
type pendingApprover struct{}

func (pendingApprover) Approve(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
	return reach.NeedsApproval, &reach.Error{Code: "approval_pending", Message: "waiting for approval"}
}

// TestServiceNameFromEnv: OTEL_SERVICE_NAME names the service.
func TestServiceNameFromEnv(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "support-gateway")
	name := func() string { v, _ := Resource("", "").Set().Value("service.name"); return v.AsString() }
	if got := name(); got != "support-gateway" {
		t.Errorf("service.name %q, want support-gateway", got)
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	if got := name(); got != "reach" {
		t.Errorf("service.name %q, want reach by default", got)
	}
}

// TestSpanDropsCounted: spans the collector refuses, and events beyond a
// full queue, are counted, not lost silently.
func TestSpanDropsCounted(t *testing.T) {
	tr, rc := newReceiverTracer(t, &TracerOptions{Sync: true}, false)
	rc.mu.Lock()
	rc.status = http.StatusServiceUnavailable
	rc.mu.Unlock()
	rt := reach.New(&reach.Options{Recorder: tr})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	for range 3 {
		_, mf, _ := rt.BeginModel(ctx, "m")
		mf.EndModel(reach.TokenUsage{Input: 1})
	}
	req.End()
	ctx2, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tr.Flush(ctx2)
	if _, failed := tr.Drops(); failed != 4 { // three model calls and the request
		t.Errorf("export failures counted %d, want 4", failed)
	}
	m := NewMetrics().WithSpanDrops(tr)
	var b strings.Builder
	m.WriteTo(&b)
	if !strings.Contains(b.String(), `reach_spans_dropped_total{reason="export_failed"} 4`) {
		t.Errorf("metrics lack the export failures:\n%s", b.String())
	}
	tr.Shutdown(ctx2)
	// A queue of one, behind a loop that cannot keep up: the rest dropped,
	// and counted.
	blocked := &blockingExporter{release: make(chan struct{})}
	tr2 := NewTracer(blocked, &TracerOptions{QueueSize: 1, Sync: true})
	rt2 := reach.New(&reach.Options{Recorder: tr2})
	ctx, req, _ = rt2.Begin(t.Context(), &reach.RequestOptions{ID: "r", Budget: &reach.Budget{}})
	for range 50 {
		_, mf, _ := rt2.BeginModel(ctx, "m")
		mf.EndModel(reach.TokenUsage{Input: 1})
	}
	if full, _ := tr2.Drops(); full == 0 {
		t.Error("a full queue dropped nothing it counted")
	}
	close(blocked.release)
	req.End()
	tr2.Shutdown(ctx2)
}

type blockingExporter struct{ release chan struct{} }

func (b *blockingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	<-b.release
	return nil
}
func (b *blockingExporter) Shutdown(context.Context) error { return nil }
