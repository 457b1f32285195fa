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
	tools     map[string]bool       // the tool labels in use (toolLabel)
	known     func(string) bool     // whether a tool of that name is registered, if known
	pending   func() int            // approvals pending, if known
	spanDrops func() int64
	breakers  func() []reach.BreakerStatus // the circuit breakers, if known
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
		stops: map[string]int64{}, latency: map[string]*histogram{}, tools: map[string]bool{}}
}

// maxToolLabels bounds the tool names that get series of their own: a tool
// frame's name is what the caller asked for, registered or not.
const maxToolLabels = 1000

// Labels for the tools beyond maxToolLabels, and for names no tool has.
const (
	otherTool   = "(other)"
	unknownTool = "(unknown)"
)

// toolLabel is the label of e's tool: its name, "(unknown)" for a name no
// tool has (known says, when set; a call refused before its tool was looked
// up may name anything), "(other)" once maxToolLabels names are in use.
func toolLabel(e *reach.Event, inUse map[string]bool, known func(string) bool) string {
	if e.Error != nil && e.Error.Code == "unknown_tool" || known != nil && !known(e.Name) {
		return unknownTool
	}
	if !inUse[e.Name] {
		if len(inUse) >= maxToolLabels {
			return otherTool
		}
		inUse[e.Name] = true
	}
	return e.Name
}

// promLabel escapes a label value as the Prometheus text format wants it:
// backslash, double quote and line feed only; invalid UTF-8 becomes U+FFFD.
func promLabel(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if !strings.ContainsAny(v, "\\\"\n") {
		return v
	}
	return labelEscaper.Replace(v)
}

var labelEscaper = strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", "\\n")

// WithTools makes the metrics count calls to names no tool has, as
// known(name) says, under the tool label "(unknown)".
func (m *Metrics) WithTools(known func(name string) bool) *Metrics { m.known = known; return m }

// WithSpanDrops reports a Tracer's dropped spans with the metrics.
func (m *Metrics) WithSpanDrops(t *Tracer) *Metrics { m.spanDrops = t.Dropped; return m }

// WithPendingApprovals reports a gauge of approvals pending.
func (m *Metrics) WithPendingApprovals(f func() int) *Metrics { m.pending = f; return m }

// WithBreakers reports the state of the circuit breakers f lists
// (reach.Runtime.Breakers) as the gauge reach_breaker_state.
func (m *Metrics) WithBreakers(f func() []reach.BreakerStatus) *Metrics { m.breakers = f; return m }

// Record implements reach.Recorder.
func (m *Metrics) Record(_ context.Context, e *reach.Event) {
	if e.Breaker != nil {
		return // a breaker's change: its state is read when the metrics are
	}
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
		tool := toolLabel(e, m.tools, m.known)
		m.calls[[2]string{tool, e.State.String()}]++
		if e.State == reach.Completed || e.State == reach.Failed {
			h := m.latency[tool]
			if h == nil {
				h = &histogram{counts: make([]int64, len(buckets))}
				m.latency[tool] = h
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
		fmt.Fprintf(&b, "reach_tool_calls_total{tool=\"%s\",state=\"%s\"} %d\n", promLabel(k[0]), promLabel(k[1]), m.calls[k])
	}
	family("reach_refusals_total", "counter", "Calls refused or cancelled, by guard and reason code.")
	for _, k := range sortedKeys2(m.refusals) {
		fmt.Fprintf(&b, "reach_refusals_total{guard=\"%s\",code=\"%s\"} %d\n", promLabel(k[0]), promLabel(k[1]), m.refusals[k])
	}
	family("reach_budgets_exhausted_total", "counter", "Budgets exhausted, by dimension.")
	for _, k := range sortedKeys(m.budgets) {
		fmt.Fprintf(&b, "reach_budgets_exhausted_total{budget=\"%s\"} %d\n", promLabel(k), m.budgets[k])
	}
	family("reach_stops_total", "counter", "Requests stopped by an operator or the runtime, by mode.")
	for _, k := range sortedKeys(m.stops) {
		fmt.Fprintf(&b, "reach_stops_total{mode=\"%s\"} %d\n", promLabel(k), m.stops[k])
	}
	family("reach_model_tokens_total", "counter", "Model tokens charged to requests.")
	fmt.Fprintf(&b, "reach_model_tokens_total %d\n", m.tokens)
	family("reach_tool_call_duration_seconds", "histogram", "Latency of tool calls that ran.")
	for _, name := range sortedKeys(m.latency) {
		h, tool := m.latency[name], promLabel(name)
		for i, bound := range buckets {
			fmt.Fprintf(&b, "reach_tool_call_duration_seconds_bucket{tool=\"%s\",le=\"%s\"} %d\n", tool, formatBound(bound), h.counts[i])
		}
		fmt.Fprintf(&b, "reach_tool_call_duration_seconds_bucket{tool=\"%s\",le=\"+Inf\"} %d\n", tool, h.n)
		fmt.Fprintf(&b, "reach_tool_call_duration_seconds_sum{tool=\"%s\"} %g\n", tool, h.sum)
		fmt.Fprintf(&b, "reach_tool_call_duration_seconds_count{tool=\"%s\"} %d\n", tool, h.n)
	}
	if m.pending != nil {
		family("reach_approvals_pending", "gauge", "Approvals waiting for a decision.")
		fmt.Fprintf(&b, "reach_approvals_pending %d\n", m.pending())
	}
	if m.breakers != nil {
		bs := m.breakers()
		family("reach_breaker_state", "gauge", "Circuit breakers by kind (tool, upstream, model) and name: 0 closed, 1 open, 2 half-open.")
		n := 0
		for _, s := range bs {
			if s.Kind == reach.BreakerTool {
				if n++; n > maxToolLabels {
					continue
				}
			}
			fmt.Fprintf(&b, "reach_breaker_state{kind=\"%s\",name=\"%s\"} %d\n", promLabel(s.Kind), promLabel(s.Name), s.State)
		}
		family("reach_breaker_opened_total", "counter", "Times each circuit breaker opened.")
		n = 0
		for _, s := range bs {
			if s.Kind == reach.BreakerTool {
				if n++; n > maxToolLabels {
					continue
				}
			}
			fmt.Fprintf(&b, "reach_breaker_opened_total{kind=\"%s\",name=\"%s\"} %d\n", promLabel(s.Kind), promLabel(s.Name), s.Opened)
		}
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
