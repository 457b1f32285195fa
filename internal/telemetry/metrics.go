package telemetry

import (
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/buildinfo"
	"github.com/agentreach/reach/internal/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// Metrics is a reach.Recorder that counts what the runtime did, and an
// http.Handler serving the counts in the Prometheus exposition formats at
// /metrics, with the Go runtime's and the process's collectors and
// reach_build_info. Safe for concurrent use.
//
// The families: reach_tool_calls_total{tool,state},
// reach_tool_call_duration_seconds{tool} (calls that ran to an answer,
// completed or failed),
// reach_refusals_total{guard,code} (guards that refused a call),
// reach_cancellations_total{guard,code} (calls cancelled: a stop, a client
// gone; not refusals), reach_budgets_exhausted_total{budget},
// reach_stops_total{mode}, reach_model_tokens_total{model,direction},
// reach_model_cost_total{model}, reach_model_call_duration_seconds{model},
// and with their sources set: reach_upstream_up{upstream},
// reach_upstream_call_duration_seconds{upstream},
// reach_upstream_errors_total{upstream,code},
// reach_requests_active{state}, reach_approvals_pending,
// reach_spans_dropped_total{reason}, reach_store_commits_total,
// reach_store_writes_total, reach_store_commit_duration_seconds,
// reach_store_queued_writes_failed_total, reach_store_retained_rows_total{kind},
// reach_audit_events_total{outcome},
// reach_audit_queue_length, reach_policy_reloads_total{outcome}, and with
// the breakers given,
// reach_breaker_state{kind,name} and reach_breaker_opened_total{kind,name}.
type Metrics struct {
	mu           sync.Mutex
	calls        map[[2]string]int64 // tool, state
	refusals     map[[2]string]int64 // guard, code
	cancels      map[[2]string]int64 // guard, code
	budgets      map[string]int64    // budget
	stops        map[string]int64    // mode
	tokens       map[[2]string]int64 // model, direction
	cost         map[string]float64  // model
	latency      map[string]*histogram
	modelLatency map[string]*histogram
	upLatency    map[string]*histogram
	upErrors     map[[2]string]int64 // upstream, code
	tools        map[string]bool     // the tool labels in use (toolLabel)
	models       map[string]bool     // the model labels in use
	known        func(string) bool   // whether a tool of that name is registered, if known
	pending      func() int          // approvals pending, if known
	spanDrops    func() (int64, int64)
	upstreams    func() map[string]bool // upstream -> connected
	upstreamOf   func(tool string) string
	active       func() map[string]int         // live state -> requests
	breakers     func() []reach.BreakerStatus  // the circuit breakers, if known
	writer       func() store.WriterStats      // the store's writer, if known
	retained     func() store.Retained         // what the store's retention removed, if known
	audit        func() audit.Stats            // the audit log's, if known
	repeats      func() map[string]int64       // errors counted as repeats, by message, if known
	policy       func() (loaded, failed int64) // policy reloads, if a policy file is watched
	reg          *prometheus.Registry
	handler      http.Handler
}

var buckets = []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30}

// modelBuckets are for model calls, seconds to minutes.
var modelBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

type histogram struct {
	bounds []float64
	counts []uint64 // cumulative
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(s float64) {
	for i, b := range h.bounds {
		if s <= b {
			h.counts[i]++
		}
	}
	h.sum += s
	h.n++
}

func observe(m map[string]*histogram, key string, bounds []float64, s float64) {
	h := m[key]
	if h == nil {
		h = newHistogram(bounds)
		m[key] = h
	}
	h.observe(s)
}

// NewMetrics returns an empty Metrics with the Go and process collectors
// and reach_build_info of the running binary.
func NewMetrics() *Metrics {
	m := &Metrics{calls: map[[2]string]int64{}, refusals: map[[2]string]int64{}, cancels: map[[2]string]int64{},
		budgets: map[string]int64{}, stops: map[string]int64{}, tokens: map[[2]string]int64{}, cost: map[string]float64{},
		latency: map[string]*histogram{}, modelLatency: map[string]*histogram{}, upLatency: map[string]*histogram{},
		upErrors: map[[2]string]int64{}, tools: map[string]bool{}, models: map[string]bool{}}
	m.reg = prometheus.NewRegistry()
	info := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "reach_build_info", Help: "The running build of reach: always 1.",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion}})
	build.Set(1)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), build, m)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

// maxToolLabels bounds the tool names that get series of their own: a tool
// frame's name is what the caller asked for, registered or not.
const maxToolLabels = 1000

// maxModelLabels bounds the model names that get series of their own: a
// client of the model proxy names any model it likes.
const maxModelLabels = 100

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
	return bounded(e.Name, inUse, maxToolLabels)
}

// bounded returns name as a label (invalid UTF-8 replaced), or "(other)"
// once most names are in use.
func bounded(name string, inUse map[string]bool, most int) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if !inUse[name] {
		if len(inUse) >= most {
			return otherTool
		}
		inUse[name] = true
	}
	return name
}

// WithTools makes the metrics count calls to names no tool has, as
// known(name) says, under the tool label "(unknown)".
func (m *Metrics) WithTools(known func(name string) bool) *Metrics { m.known = known; return m }

// WithSpanDrops reports a Tracer's lost spans with the metrics.
func (m *Metrics) WithSpanDrops(t *Tracer) *Metrics { m.spanDrops = t.Drops; return m }

// WithPendingApprovals reports a gauge of approvals pending.
func (m *Metrics) WithPendingApprovals(f func() int) *Metrics { m.pending = f; return m }

// WithUpstreams reports reach_upstream_up from up (each upstream's name
// and whether it is connected), and the duration and errors of the calls
// to the tools that upstreamOf says an upstream serves ("" for none).
func (m *Metrics) WithUpstreams(up func() map[string]bool, upstreamOf func(tool string) string) *Metrics {
	m.upstreams, m.upstreamOf = up, upstreamOf
	return m
}

// WithBreakers reports the state of the circuit breakers f lists
// (reach.Runtime.Breakers) as the gauge reach_breaker_state, and how often
// each opened as reach_breaker_opened_total.
func (m *Metrics) WithBreakers(f func() []reach.BreakerStatus) *Metrics { m.breakers = f; return m }

// WithStore reports the store's group commits from f: how many
// transactions and writes committed, how long each transaction took from
// its beginning to its commit, and the queued writes that failed.
func (m *Metrics) WithStore(f func() store.WriterStats) *Metrics { m.writer = f; return m }

// WithRetention reports the rows the store's retention sweep removed
// (reach_store_retained_rows_total{kind}).
func (m *Metrics) WithRetention(f func() store.Retained) *Metrics { m.retained = f; return m }

// WithAudit reports the audit log's events from f: appended, dropped (its
// queue was full) and lost to a failed commit, and how many wait.
func (m *Metrics) WithAudit(f func() audit.Stats) *Metrics { m.audit = f; return m }

// WithLogRepeats sets the source of the errors counted, not logged, as
// repeats, by message (the gateway's Repeats).
func (m *Metrics) WithLogRepeats(f func() map[string]int64) *Metrics { m.repeats = f; return m }

// WithRequests reports reach_requests_active from f: the requests not
// ended, by live state (RequestActivity).
// WithPolicyReloads adds reach_policy_reloads_total{outcome}: the changes
// of the policy files put in force ("loaded") and those that did not load
// ("failed": the previous policies stayed), as f counts them.
func (m *Metrics) WithPolicyReloads(f func() (loaded, failed int64)) *Metrics { m.policy = f; return m }

func (m *Metrics) WithRequests(f func() map[string]int) *Metrics { m.active = f; return m }

// ranTool reports whether a tool call ran to an answer, a success or a
// failure: its latency is the tool's (a refused call's is the guard's, a
// cancelled call's the canceller's).
func ranTool(e *reach.Event) bool { return e.State == reach.Completed || e.State == reach.Failed }

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
	if e.Error != nil {
		switch e.State {
		case reach.Refused:
			m.refusals[[2]string{e.Error.Guard, e.Error.Code}]++
		case reach.Cancelled:
			m.cancels[[2]string{e.Error.Guard, e.Error.Code}]++
		}
		if (e.State == reach.Refused || e.State == reach.Cancelled) && e.Error.Type == reach.TypeBudget {
			m.budgets[strings.TrimPrefix(e.Error.Code, "budget_")]++
		}
	}
	switch e.Kind {
	case reach.ModelFrame:
		model := bounded(e.Name, m.models, maxModelLabels)
		m.tokens[[2]string{model, "input"}] += e.InputTokens
		m.tokens[[2]string{model, "output"}] += e.OutputTokens
		if e.Cost > 0 && !math.IsInf(e.Cost, 0) {
			m.cost[model] += e.Cost
		}
		if e.State == reach.Completed || e.State == reach.Failed {
			observe(m.modelLatency, model, modelBuckets, e.Latency.Seconds())
		}
	case reach.ToolFrame:
		tool := toolLabel(e, m.tools, m.known)
		m.calls[[2]string{tool, e.State.String()}]++
		if !ranTool(e) {
			return
		}
		observe(m.latency, tool, buckets, e.Latency.Seconds())
		if m.upstreamOf == nil || tool == unknownTool {
			return
		}
		if up := m.upstreamOf(e.Name); up != "" {
			observe(m.upLatency, up, buckets, e.Latency.Seconds())
			if e.State == reach.Failed {
				code := "error"
				if e.Error != nil {
					code = e.Error.Code
				}
				m.upErrors[[2]string{up, code}]++
			}
		}
	}
}

// ServeHTTP serves the metrics in the exposition format the scraper asks
// for (Prometheus text, or OpenMetrics).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.handler.ServeHTTP(w, r) }

// WriteTo writes the metrics in the Prometheus text format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	mfs, gerr := m.reg.Gather() // what could be gathered, and why not the rest
	cw := &countingWriter{w: w}
	enc := expfmt.NewEncoder(cw, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return cw.n, err
		}
	}
	return cw.n, gerr
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var (
	descCalls         = prometheus.NewDesc("reach_tool_calls_total", "Tool calls by final state.", []string{"tool", "state"}, nil)
	descRefusals      = prometheus.NewDesc("reach_refusals_total", "Calls a guard refused, by guard and reason code.", []string{"guard", "code"}, nil)
	descCancels       = prometheus.NewDesc("reach_cancellations_total", "Calls cancelled (a stop, a client that went away), by the stage that saw it and code; not refusals.", []string{"guard", "code"}, nil)
	descBudgets       = prometheus.NewDesc("reach_budgets_exhausted_total", "Budgets exhausted, by dimension.", []string{"budget"}, nil)
	descStops         = prometheus.NewDesc("reach_stops_total", "Requests stopped by an operator or the runtime, by mode.", []string{"mode"}, nil)
	descTokens        = prometheus.NewDesc("reach_model_tokens_total", "Model tokens charged to requests, by model and direction (input, output).", []string{"model", "direction"}, nil)
	descCost          = prometheus.NewDesc("reach_model_cost_total", "Model cost charged to requests, in the price table's currency, by model.", []string{"model"}, nil)
	descModelLatency  = prometheus.NewDesc("reach_model_call_duration_seconds", "Duration of model calls, by model.", []string{"model"}, nil)
	descLatency       = prometheus.NewDesc("reach_tool_call_duration_seconds", "Duration of tool calls that ran to an answer (completed or failed).", []string{"tool"}, nil)
	descUp            = prometheus.NewDesc("reach_upstream_up", "Whether an upstream MCP server is connected (1) or not (0).", []string{"upstream"}, nil)
	descUpLatency     = prometheus.NewDesc("reach_upstream_call_duration_seconds", "Duration of calls to an upstream's tools.", []string{"upstream"}, nil)
	descUpErrors      = prometheus.NewDesc("reach_upstream_errors_total", "Calls to an upstream's tools that failed, by error code.", []string{"upstream", "code"}, nil)
	descActive        = prometheus.NewDesc("reach_requests_active", "Requests not ended, by state (running, waiting_for_approval, idle, stopped).", []string{"state"}, nil)
	descPending       = prometheus.NewDesc("reach_approvals_pending", "Approvals waiting for a decision.", nil, nil)
	descSpansDropped  = prometheus.NewDesc("reach_spans_dropped_total", "Spans lost: events beyond a full span queue, and spans the exporter failed to send.", []string{"reason"}, nil)
	descBreakerState  = prometheus.NewDesc("reach_breaker_state", "Circuit breakers by kind (tool, upstream, model) and name: 0 closed, 1 open, 2 half-open.", []string{"kind", "name"}, nil)
	descBreakerOpened = prometheus.NewDesc("reach_breaker_opened_total", "Times each circuit breaker opened.", []string{"kind", "name"}, nil)
	descCommits       = prometheus.NewDesc("reach_store_commits_total", "Transactions the store's writer committed (each a group of writes).", nil, nil)
	descWrites        = prometheus.NewDesc("reach_store_writes_total", "Writes the store's writer committed: checkpoints, idempotency claims and records, requests, approvals, ...", nil, nil)
	descCommitTime    = prometheus.NewDesc("reach_store_commit_duration_seconds", "Duration of the store writer's transactions, from their beginning to their commit: what a durable write waits for once the writer takes it.", nil, nil)
	descQueuedFailed  = prometheus.NewDesc("reach_store_queued_writes_failed_total", "Writes queued to the store (not waited for) that failed; each is logged.", nil, nil)
	descRetained      = prometheus.NewDesc("reach_store_retained_rows_total", "Rows of finished state the store's retention sweep removed, by kind (requests, frames, tasks, approvals).", []string{"kind"}, nil)
	descAuditEvents   = prometheus.NewDesc("reach_audit_events_total", "Audit events by outcome: appended to the log, dropped (its queue was full), or failed (lost to a failed commit).", []string{"outcome"}, nil)
	descAuditQueue    = prometheus.NewDesc("reach_audit_queue_length", "Audit events waiting to be appended.", nil, nil)
	descPolicyReloads = prometheus.NewDesc("reach_policy_reloads_total", "Changes of the policy files: put in force (loaded), or not loaded, the previous policies staying in force (failed).", []string{"outcome"}, nil)
	descLogRepeats    = prometheus.NewDesc("reach_log_repeats_total", "Errors counted, not logged, as repeats of one logged just before (the store down: each call's), by message.", []string{"message"}, nil)
	allDescs          = []*prometheus.Desc{descCalls, descRefusals, descCancels, descBudgets, descStops, descTokens, descCost, descModelLatency,
		descLatency, descUp, descUpLatency, descUpErrors, descActive, descPending, descSpansDropped, descBreakerState, descBreakerOpened,
		descCommits, descWrites, descCommitTime, descQueuedFailed, descRetained, descAuditEvents, descAuditQueue, descLogRepeats, descPolicyReloads}
)

var (
	_ prometheus.Collector = (*Metrics)(nil)
	_ http.Handler         = (*Metrics)(nil)

	counter, gaugeVal = prometheus.CounterValue, prometheus.GaugeValue
)

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	// Read the sources before the lock: they may take locks of their own.
	var up map[string]bool
	if m.upstreams != nil {
		up = m.upstreams()
	}
	var active map[string]int
	if m.active != nil {
		active = m.active()
	}
	pending := -1
	if m.pending != nil {
		pending = m.pending()
	}
	var breakers []reach.BreakerStatus
	if m.breakers != nil {
		breakers = m.breakers()
	}
	m.collectStore(ch)
	m.mu.Lock()
	defer m.mu.Unlock()
	pairs := func(d *prometheus.Desc, mp map[[2]string]int64) {
		for _, k := range sortedKeys2(mp) {
			ch <- prometheus.MustNewConstMetric(d, counter, float64(mp[k]), label(k[0]), label(k[1]))
		}
	}
	singles := func(d *prometheus.Desc, mp map[string]int64) {
		for _, k := range sortedKeys(mp) {
			ch <- prometheus.MustNewConstMetric(d, counter, float64(mp[k]), label(k))
		}
	}
	hists := func(d *prometheus.Desc, mp map[string]*histogram) {
		for _, k := range sortedKeys(mp) {
			h := mp[k]
			bs := make(map[float64]uint64, len(h.bounds))
			for i, b := range h.bounds {
				bs[b] = h.counts[i]
			}
			ch <- prometheus.MustNewConstHistogram(d, h.n, h.sum, bs, k)
		}
	}
	pairs(descCalls, m.calls)
	pairs(descRefusals, m.refusals)
	pairs(descCancels, m.cancels)
	singles(descBudgets, m.budgets)
	singles(descStops, m.stops)
	pairs(descTokens, m.tokens)
	for _, k := range sortedKeys(m.cost) {
		ch <- prometheus.MustNewConstMetric(descCost, counter, m.cost[k], k)
	}
	hists(descModelLatency, m.modelLatency)
	hists(descLatency, m.latency)
	for _, k := range sortedKeys(up) {
		v := 0.0
		if up[k] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, gaugeVal, v, k)
	}
	hists(descUpLatency, m.upLatency)
	pairs(descUpErrors, m.upErrors)
	if m.active != nil {
		for _, s := range LiveStates {
			ch <- prometheus.MustNewConstMetric(descActive, gaugeVal, float64(active[s]), s)
		}
	}
	if pending >= 0 {
		ch <- prometheus.MustNewConstMetric(descPending, gaugeVal, float64(pending))
	}
	tools := 0
	for _, b := range breakers {
		if b.Kind == reach.BreakerTool {
			if tools++; tools > maxToolLabels { // as many series as the tool labels, at most
				continue
			}
		}
		ch <- prometheus.MustNewConstMetric(descBreakerState, gaugeVal, float64(b.State), label(b.Kind), label(b.Name))
		ch <- prometheus.MustNewConstMetric(descBreakerOpened, counter, float64(b.Opened), label(b.Kind), label(b.Name))
	}
	if m.spanDrops != nil {
		full, failed := m.spanDrops()
		ch <- prometheus.MustNewConstMetric(descSpansDropped, counter, float64(full), "queue_full")
		ch <- prometheus.MustNewConstMetric(descSpansDropped, counter, float64(failed), "export_failed")
	}
	if m.policy != nil {
		loaded, failed := m.policy()
		ch <- prometheus.MustNewConstMetric(descPolicyReloads, counter, float64(loaded), "loaded")
		ch <- prometheus.MustNewConstMetric(descPolicyReloads, counter, float64(failed), "failed")
	}
}

// collectStore sends the store writer's and the audit log's metrics, if
// their sources are set.
func (m *Metrics) collectStore(ch chan<- prometheus.Metric) {
	if m.retained != nil {
		r := m.retained()
		for kind, n := range map[string]int64{"requests": r.Requests, "frames": r.Frames, "tasks": r.Tasks, "approvals": r.Approvals} {
			ch <- prometheus.MustNewConstMetric(descRetained, counter, float64(n), kind)
		}
	}
	if m.writer != nil {
		st := m.writer()
		ch <- prometheus.MustNewConstMetric(descCommits, counter, float64(st.Batches))
		ch <- prometheus.MustNewConstMetric(descWrites, counter, float64(st.Writes))
		ch <- prometheus.MustNewConstMetric(descQueuedFailed, counter, float64(st.QueuedFailed))
		bs := make(map[float64]uint64, len(store.CommitBuckets))
		var n uint64
		for i, b := range store.CommitBuckets {
			n += uint64(st.Commit.Buckets[i])
			bs[b] = n // cumulative, as Prometheus has them
		}
		ch <- prometheus.MustNewConstHistogram(descCommitTime, uint64(st.Commit.Count), st.Commit.Sum.Seconds(), bs)
	}
	if m.repeats != nil {
		for msg, n := range m.repeats() {
			ch <- prometheus.MustNewConstMetric(descLogRepeats, counter, float64(n), msg)
		}
	}
	if m.audit != nil {
		st := m.audit()
		ch <- prometheus.MustNewConstMetric(descAuditEvents, counter, float64(st.Appended), "appended")
		ch <- prometheus.MustNewConstMetric(descAuditEvents, counter, float64(st.Dropped), "dropped")
		ch <- prometheus.MustNewConstMetric(descAuditEvents, counter, float64(st.Failed), "failed")
		ch <- prometheus.MustNewConstMetric(descAuditQueue, gaugeVal, float64(st.Queued))
	}
}

// label makes a label value of what a caller chose (a guard, a code, an
// upstream's name): invalid UTF-8 replaced.
func label(v string) string { return strings.ToValidUTF8(v, "\uFFFD") }

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
