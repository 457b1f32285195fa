package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store"
)

// readCountingStore counts the reads of a request's whole audit log.
type readCountingStore struct {
	*store.Memory
	reads atomic.Int32
}

func (s *readCountingStore) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	s.reads.Add(1)
	return s.Memory.RequestAudit(ctx, request)
}

// markedDenials stores n denied approvals of request req, each marked
// unaudited (a kill between the change and its audit event), and audits
// the denials of the first done of them (the kill came after their event
// and before their mark's clearing).
func markedDenials(t testing.TB, g *Gateway, st store.Approvals, req string, n, done int) {
	t.Helper()
	now := time.Now()
	for i := range n {
		a := approval.Approval{ID: fmt.Sprintf("apr_%s_%d", req, i), Status: approval.Denied, Requires: approval.User,
			Tool: "refund", Principal: "alice", Request: req, RootRequest: req, Created: now, Expires: now.Add(time.Hour),
			Denial: &approval.Vote{By: "alice", Reason: "no"}}
		data, err := json.Marshal(struct {
			approval.Approval
			Key       string `json:"key"`
			Unaudited bool   `json:"unaudited"`
		}{a, "k" + a.ID, true})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutApproval(t.Context(), &store.ApprovalRecord{ID: a.ID, Key: "k" + a.ID, Status: string(a.Status),
			Created: a.Created, Expires: a.Expires, Data: data}); err != nil {
			t.Fatal(err)
		}
		if i < done {
			g.auditApproval(t.Context(), approval.Event{Action: "denied", By: "alice", Reason: "no", Approval: a})
		}
	}
}

// TestApprovalAuditedReadsEachRequestOnce: a restart audits again 12
// actions of one request and 3 of another (stored, their marks left by a
// kill), 4 of which the audit log holds already: it reads each request's
// log once, not once an action, and audits each action exactly once.
// Before, it read the first request's log 12 times.
func TestApprovalAuditedReadsEachRequestOnce(t *testing.T) {
	st := &readCountingStore{Memory: store.NewMemory()}
	log, err := audit.New(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g := &Gateway{audit: log, log: slog.New(slog.DiscardHandler)}
	markedDenials(t, g, st, "r1", 12, 3)
	markedDenials(t, g, st, "r2", 3, 1)
	st.reads.Store(0)
	q := approval.New(&approval.Options{Store: st, Audit: g.approvalEvent, Audited: g.approvalAudited})
	if err := q.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := st.reads.Load(); n != 2 {
		t.Errorf("the restart read the requests' audit logs %d times; want 2, once a request", n)
	}
	for req, n := range map[string]int{"r1": 12, "r2": 3} {
		evs, err := log.Show(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, ev := range evs {
			if ev.Kind == "approval" && ev.Decision == "denied" {
				head, _, _ := strings.Cut(ev.Message, " (")
				per[head]++
			}
		}
		got := 0
		for _, c := range per {
			if c != 1 {
				t.Errorf("request %s: a denial audited %d times: %v", req, c, per)
			}
			got++
		}
		if got != n {
			t.Errorf("request %s: %d denials audited; want %d", req, got, n)
		}
	}
}

// BenchmarkApprovalRestartAudited: a restart finding 100 actions of one
// request stored and marked unaudited, 50 of which the audit log holds:
// the lookups of Options.Audited and the audit of the 50 others.
func BenchmarkApprovalRestartAudited(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		st := &readCountingStore{Memory: store.NewMemory()}
		log, err := audit.New(b.Context(), st, nil)
		if err != nil {
			b.Fatal(err)
		}
		g := &Gateway{audit: log, log: slog.New(slog.DiscardHandler)}
		markedDenials(b, g, st, "r1", 100, 50)
		st.reads.Store(0)
		q := approval.New(&approval.Options{Store: st, Audit: g.approvalEvent, Audited: g.approvalAudited})
		b.StartTimer()
		if err := q.Load(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(st.reads.Load()), "reads/op")
		log.Close()
		b.StartTimer()
	}
}
