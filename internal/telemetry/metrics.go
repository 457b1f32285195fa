package telemetry

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/agentreach/reach"
)

// Metrics is a reach.Recorder that counts what the runtime did, and an
// http.Handler serving the counts in the Prometheus text format at /metrics.
// Safe for concurrent use.
type Metrics struct {
	mu        sync.Mutex
	calls     map[[2]string]int64 // tool, state
	refusals  map[[2]string]int64 // guard, code
	budgets   map[string]int64    // budget
	stops     map[string]int64    // mode
	tokens    int64
	latency   map[string]*histogram // tool
	pending   func() int            // approvals pending, if known
	spanDrops func() int64
}

var buckets = []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30}

type histogram struct {
	counts []int64
	sum    float64
	n      int64
}

// NewMetrics returns an empty Metrics.
func NewMetrics() *Metrics {
	return &Metrics{calls: map[[2]string]int64{}, refusals: map[[2]string]int64{}, budgets: map[string]int64{},
		stops: map[string]int64{}, latency: map[string]*histogram{}}
}

// WithSpanDrops reports a Tracer's dropped spans with the metrics.
func (m *Metrics) WithSpanDrops(t *Tracer) *Metrics { m.spanDrops = t.Dropped; return m }

// WithPendingApprovals reports a gauge of approvals pending.
func (m *Metrics) WithPendingApprovals(f func() int) *Metrics { m.pending = f; return m }

// Record implements reach.Recorder.
func (m *Metrics) Record(_ context.Context, e *reach.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Stop != nil {
		if e.Stop.Budget != "" {
			m.budgets[e.Stop.Budget]++
		} else {
			m.stops[e.Stop.Mode.String()]++
		}
		return
	}
	if e.Error != nil && (e.State == reach.Refused || e.State == reach.Cancelled) {
		m.refusals[[2]string{e.Error.Guard, e.Error.Code}]++
		if e.Error.Type == reach.TypeBudget {
			m.budgets[strings.TrimPrefix(e.Error.Code, "budget_")]++
		}
	}
	switch e.Kind {
	case reach.ModelFrame:
		m.tokens += e.Tokens
	case reach.ToolFrame:
		m.calls[[2]string{e.Name, e.State.String()}]++
		if e.State == reach.Completed || e.State == reach.Failed {
			h := m.latency[e.Name]
			if h == nil {
				h = &histogram{counts: make([]int64, len(buckets))}
				m.latency[e.Name] = h
			}
			s := e.Latency.Seconds()
			for i, b := range buckets {
				if s <= b {
					h.counts[i]++
				}
			}
			h.sum += s
			h.n++
		}
	}
}

// ServeHTTP writes the metrics in the Prometheus text format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.WriteTo(w)
}

// WriteTo writes the metrics in the Prometheus text format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	family := func(name, typ, help string) { fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ) }
	family("reach_tool_calls_total", "counter", "Tool calls by final state.")
	for _, k := range sortedKeys2(m.calls) {
		fmt.Fprintf(&b, "reach_tool_calls_total{tool=%q,state=%q} %d\n", k[0], k[1], m.calls[k])
	}
	family("reach_refusals_total", "counter", "Calls refused or cancelled, by guard and reason code.")
	for _, k := range sortedKeys2(m.refusals) {
		fmt.Fprintf(&b, "reach_refusals_total{guard=%q,code=%q} %d\n", k[0], k[1], m.refusals[k])
	}
	family("reach_budgets_exhausted_total", "counter", "Budgets exhausted, by dimension.")
	for _, k := range sortedKeys(m.budgets) {
		fmt.Fprintf(&b, "reach_budgets_exhausted_total{budget=%q} %d\n", k, m.budgets[k])
	}
	family("reach_stops_total", "counter", "Requests stopped by an operator or the runtime, by mode.")
	for _, k := range sortedKeys(m.stops) {
		fmt.Fprintf(&b, "reach_stops_total{mode=%q} %d\n", k, m.stops[k])
	}
	family("reach_model_tokens_total", "counter", "Model tokens charged to requests.")
	fmt.Fprintf(&b, "reach_model_tokens_total %d\n", m.tokens)
	family("reach_tool_call_duration_seconds", "histogram", "Latency of tool calls that ran.")
	for _, tool := range sortedKeys(m.latency) {
		h := m.latency[tool]
		for i, bound := range buckets {
			fmt.Fprintf(&b, "reach_tool_call_duration_seconds_bucket{tool=%q,le=%q} %d\n", tool, formatBound(bound), h.counts[i])
		}
		fmt.Fprintf(&b, "reach_tool_call_duration_seconds_bucket{tool=%q,le=\"+Inf\"} %d\n", tool, h.n)
		fmt.Fprintf(&b, "reach_tool_call_duration_seconds_sum{tool=%q} %g\n", tool, h.sum)
		fmt.Fprintf(&b, "reach_tool_call_duration_seconds_count{tool=%q} %d\n", tool, h.n)
	}
	if m.pending != nil {
		family("reach_approvals_pending", "gauge", "Approvals waiting for a decision.")
		fmt.Fprintf(&b, "reach_approvals_pending %d\n", m.pending())
	}
	if m.spanDrops != nil {
		family("reach_spans_dropped_total", "counter", "Frames not exported as spans because the span queue was full.")
		fmt.Fprintf(&b, "reach_spans_dropped_total %d\n", m.spanDrops())
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func formatBound(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%g", f)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sortedKeys2(m map[[2]string]int64) [][2]string {
	ks := make([][2]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	return ks
}
