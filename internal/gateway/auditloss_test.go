package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/store"
)

// stallingAudit is the audit log's store with a writer that can be
// stalled (a disk that stops answering): while it is, the first append
// waits until release is closed.
type stallingAudit struct {
	store.AuditLog
	stall   atomic.Bool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (s *stallingAudit) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	if s.stall.Load() {
		s.once.Do(func() { close(s.entered) })
		<-s.release
	}
	return s.AuditLog.AppendAudit(ctx, recs, cps)
}

// Through the gateway on SQLite: while the audit log's writer is stalled
// and its queue full, the tool calls whose events it drops stay in the
// request's views (GET /v1/requests/{id}, its graph, the UI), marked audit_lost,
// with the request's count of lost events; /healthz says degraded with
// the counts, /metrics counts the drops, and the chain verifies with a
// loss note that says how many are missing. Before, those calls were let
// go from memory as if stored and vanished from every view.
func TestAuditDropsStayInViews(t *testing.T) {
	sa := &stallingAudit{entered: make(chan struct{}), release: make(chan struct{})}
	auditTest = func(o *audit.Options, st store.AuditLog) store.AuditLog {
		o.QueueSize, o.Linger = 4, -1
		sa.AuditLog = st
		return sa
	}
	t.Cleanup(func() { auditTest = nil })
	g := newTestGateway(t, &config.Config{})
	srv := serveTest(t, g)
	calls := func(from, n int) string {
		var cs []string
		for i := from; i < from+n; i++ {
			cs = append(cs, fmt.Sprintf(`{"call_id":"c%d","tool":"get_order","arguments":{"order_id":"%d"}}`, i, 1000+i))
		}
		return `{"request_id":"lost1","tool_calls":[` + strings.Join(cs, ",") + `]}`
	}
	sa.stall.Store(true)
	if code, body := do(t, "POST", srv.URL+"/v1/calls", calls(0, 30), nil); code != 200 {
		t.Fatalf("calls: %d %v", code, body)
	}
	<-sa.entered
	dropped := g.audit.Dropped()
	if dropped == 0 {
		t.Fatal("the log dropped nothing: the test shows nothing")
	}
	sa.stall.Store(false)
	close(sa.release)
	for i := 30; i < 40; i++ { // the calls after: the request lets the stored ones go
		if err := g.audit.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if code, body := do(t, "POST", srv.URL+"/v1/calls", calls(i, 1), nil); code != 200 {
			t.Fatalf("calls: %d %v", code, body)
		}
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.audit.Dropped(); got != dropped {
		t.Fatalf("the log dropped %d more events after the stall", got-dropped)
	}
	req, ok := g.rt.Lookup("lost1")
	if !ok {
		t.Fatal("no request lost1")
	}
	if _, gone := req.KeptFrames(); gone.Frames == 0 {
		t.Fatal("no frame was let go: the test shows nothing")
	}

	code, body := do(t, "GET", srv.URL+"/v1/requests/lost1", "", nil)
	frames, _ := body["frames"].([]any)
	if code != 200 || len(frames) != 40 {
		t.Fatalf("GET /v1/requests/lost1: %d, %d frames, want 40 (the calls whose events the log dropped are gone)", code, len(frames))
	}
	marked := 0
	for _, f := range frames {
		if f.(map[string]any)["audit_lost"] == true {
			marked++
		}
	}
	if lost, _ := body["audit_lost"].(float64); int64(lost) != dropped || marked != int(dropped) {
		t.Errorf("GET /v1/requests/lost1: audit_lost %v, %d frames marked, want %d each", body["audit_lost"], marked, dropped)
	}
	if _, graph := do(t, "GET", srv.URL+"/v1/requests/lost1/graph", "", nil); len(graph["frames"].([]any)) != 40 {
		t.Errorf("the graph has %d frames, want 40", len(graph["frames"].([]any)))
	}
	if code, page := get(t, srv.URL+"/ui/requests/lost1"); code != 200 || !strings.Contains(page, fmt.Sprintf("%d events of its calls were lost by the audit log", dropped)) {
		t.Errorf("the UI's request page (%d) does not say that %d events were lost", code, dropped)
	}
	_, health := do(t, "GET", srv.URL+"/healthz", "", nil)
	if health["status"] != "degraded" || path(health, "audit", "dropped") != float64(dropped) {
		t.Errorf("/healthz: status %v, audit %v; want degraded, %d dropped", health["status"], health["audit"], dropped)
	}
	if code, m := get(t, srv.URL+"/metrics"); code != 200 || !strings.Contains(m, fmt.Sprintf(`reach_audit_events_total{outcome="dropped"} %d`, dropped)) {
		t.Errorf("/metrics does not count %d dropped audit events", dropped)
	}
	rep, err := audit.Verify(t.Context(), g.store)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	// One note per batch committed after drops: the drops may come before
	// and after the writer's first (stalled) batch.
	if rep.Lost != dropped || rep.LossNotes < 1 {
		t.Errorf("verify: %d lost in %d notes, want %d", rep.Lost, rep.LossNotes, dropped)
	}
}
