package telemetry

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentreach/reach"
)

// ToolStats are one tool's figures (A4).
type ToolStats struct {
	Tool        string           `json:"tool"`
	Calls       int64            `json:"calls"`
	Completed   int64            `json:"completed"`
	Failed      int64            `json:"failed"`
	Refused     int64            `json:"refused"`
	Cancelled   int64            `json:"cancelled"`
	SuccessRate float64          `json:"success_rate"` // completed / calls that ran
	P50         time.Duration    `json:"p50"`          // of the calls that ran to an answer: completed and failed
	P95         time.Duration    `json:"p95"`
	Failures    map[string]int64 `json:"failures"` // by error code
	RefusedBy   map[string]int64 `json:"refused_by"`
}

// Stats is a reach.Recorder keeping per-tool statistics, with the last
// Window latencies of each tool for its percentiles, of every tenant's
// calls together and of each tenant's apart (the figures a tenant's
// operator sees). Safe for concurrent use.
type Stats struct {
	mu     sync.Mutex
	window int
	tools  map[string]*toolStats
	names  map[string]bool // the tool names in use (toolLabel)
	known  func(string) bool
	// tenants are each tenant's figures (the calls of requests of a
	// tenant), for the maxTenants tenants that called last; byUse orders
	// them, the one whose call is oldest at its back. A tenant's first
	// call past the bound takes the place of that one's figures.
	tenants map[string]*tenantStats
	byUse   list.List // of *tenantStats
	// started is when the figures began; evicted when a tenant's figures
	// were last dropped for another's (zero before). A tenant without
	// figures called no tool since then (it would have them).
	started, evicted time.Time
	now              func() time.Time
}

// tenantStats are one tenant's figures, counted since since.
type tenantStats struct {
	name  string
	tools map[string]*toolStats
	since time.Time
	use   *list.Element
}

// maxTenants bounds the tenants whose figures Stats keeps apart: a tenant
// is whatever an API key or a JWT's tenant claim names, so a party with
// keys or tokens of many tenants may call as all of them; the figures of
// the one that called least recently make room, and each tenant's say
// since when they count (TenantSnapshot). Each keeps at most tenantWindow
// latencies per tool.
const (
	maxTenants   = 1024
	tenantWindow = 256
)

// WithTools makes the statistics count calls to names no tool has, as
// known(name) says, under "(unknown)".
func (s *Stats) WithTools(known func(name string) bool) *Stats { s.known = known; return s }

type toolStats struct {
	ToolStats
	lat  []time.Duration // ring
	next int
}

// NewStats returns Stats keeping window latencies per tool (0 means 1024).
func NewStats(window int) *Stats {
	return newStats(window, time.Now)
}

// newStats is NewStats with the clock now.
func newStats(window int, now func() time.Time) *Stats {
	if window <= 0 {
		window = 1024
	}
	return &Stats{window: window, tools: map[string]*toolStats{}, names: map[string]bool{}, tenants: map[string]*tenantStats{},
		started: now(), now: now}
}

// Record implements reach.Recorder.
func (s *Stats) Record(_ context.Context, e *reach.Event) {
	if e.Kind != reach.ToolFrame || e.Frame == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name := toolLabel(e, s.names, s.known) // bounded, as the metrics are
	s.tools = count(s.tools, name, e, s.window)
	if e.Tenant == "" {
		return
	}
	ts := s.tenants[e.Tenant]
	if ts != nil {
		s.byUse.MoveToFront(ts.use)
	} else {
		// Absent until now, the tenant called nothing since the last
		// eviction (or the start): its figures are whole since then.
		ts = &tenantStats{name: e.Tenant, tools: map[string]*toolStats{}, since: s.since()}
		if len(s.tenants) >= maxTenants {
			last := s.byUse.Remove(s.byUse.Back()).(*tenantStats)
			delete(s.tenants, last.name)
			s.evicted = s.now()
		}
		ts.use = s.byUse.PushFront(ts)
		s.tenants[e.Tenant] = ts
	}
	count(ts.tools, name, e, min(s.window, tenantWindow))
}

// since is when the figures of a tenant that has none begin: the last
// eviction, or the start.
func (s *Stats) since() time.Time {
	if s.evicted.IsZero() {
		return s.started
	}
	return s.evicted
}

// count counts e in tools' figures of tool name, keeping window latencies.
func count(tools map[string]*toolStats, name string, e *reach.Event, window int) map[string]*toolStats {
	t := tools[name]
	if t == nil {
		t = &toolStats{ToolStats: ToolStats{Tool: name, Failures: map[string]int64{}, RefusedBy: map[string]int64{}}}
		tools[name] = t
	}
	t.Calls++
	switch e.State {
	case reach.Completed:
		t.Completed++
	case reach.Failed:
		t.Failed++
		if e.Error != nil {
			t.Failures[e.Error.Code]++
		}
	case reach.Refused:
		t.Refused++
		if e.Error != nil {
			t.RefusedBy[e.Error.Guard]++
		}
	case reach.Cancelled:
		t.Cancelled++
	}
	if ranTool(e) { // failed calls took their time too
		if len(t.lat) < window {
			t.lat = append(t.lat, e.Latency)
		} else {
			t.lat[t.next] = e.Latency
			t.next = (t.next + 1) % window
		}
	}
	return tools
}

// Snapshot returns every tool's figures, of every tenant's calls, sorted
// by name.
func (s *Stats) Snapshot() []ToolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return snapshot(s.tools)
}

// Since returns when the figures of Snapshot began.
func (s *Stats) Since() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// TenantSnapshot returns the figures of the calls of tenant's requests,
// sorted by tool name, and since when they count: the start, or, once
// other tenants' calls made room past maxTenants, when the tenant's
// figures were begun again (or, for a tenant without figures, the last
// time a tenant's were dropped: it called nothing since).
func (s *Stats) TenantSnapshot(tenant string) (out []ToolStats, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.tenants[tenant]
	if ts == nil {
		return []ToolStats{}, s.since()
	}
	return snapshot(ts.tools), ts.since
}

func snapshot(tools map[string]*toolStats) []ToolStats {
	out := make([]ToolStats, 0, len(tools))
	for _, t := range tools {
		ts := t.ToolStats
		ts.Failures, ts.RefusedBy = cloneMap(t.Failures), cloneMap(t.RefusedBy)
		if ran := t.Completed + t.Failed; ran > 0 {
			ts.SuccessRate = float64(t.Completed) / float64(ran)
		}
		if len(t.lat) > 0 {
			l := slices.Clone(t.lat)
			slices.Sort(l)
			ts.P50 = l[(len(l)-1)*50/100]
			ts.P95 = l[(len(l)-1)*95/100]
		}
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b ToolStats) int {
		if a.Tool < b.Tool {
			return -1
		}
		if a.Tool > b.Tool {
			return 1
		}
		return 0
	})
	return out
}

func cloneMap(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
