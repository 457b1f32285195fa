package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/telemetry"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// Operators' surfaces: the web UI at /ui/, Prometheus metrics at /metrics,
// OTLP traces when telemetry.otlp_endpoint is set, and the approvals API at
// /v1/approvals. Every frame's event goes to the per-tool statistics, the
// metrics, the tracer and Options.Recorder, in that order.

// operators builds the recorders and the approval queue into ro.
func (g *Gateway) operators(ctx context.Context, ro *reach.Options) error {
	known := func(name string) bool { // read when a frame ends: g.rt exists by then
		if g.rt == nil {
			return false
		}
		_, ok := g.rt.Tool(name)
		return ok
	}
	g.stats = telemetry.NewStats(0).WithTools(known)
	g.metrics = telemetry.NewMetrics().WithTools(known)
	recs := []reach.Recorder{g.stats, g.metrics}
	if t := g.cfg.Telemetry; t != nil && t.OTLPEndpoint != "" {
		if !strings.HasPrefix(t.OTLPEndpoint, "http://") && !strings.HasPrefix(t.OTLPEndpoint, "https://") {
			return g.cfg.Errorf([]any{"telemetry", "otlp_endpoint"}, "telemetry: otlp_endpoint %q is not an http(s) URL such as http://127.0.0.1:4318", t.OTLPEndpoint)
		}
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(t.OTLPEndpoint, "/")+"/v1/traces"))
		if err != nil {
			return g.cfg.Errorf([]any{"telemetry", "otlp_endpoint"}, "telemetry: %v", err)
		}
		g.tracer = telemetry.NewTracer(exp, nil)
		g.metrics.WithSpanDrops(g.tracer)
		recs = append(recs, g.tracer)
	}
	log, err := g.persistence(ctx, ro)
	if err != nil {
		return err
	}
	if log != nil {
		recs = append(recs, log)
	}
	if g.opts.Recorder != nil {
		recs = append(recs, g.opts.Recorder)
	}
	ro.Recorder = reach.Recorders(recs...)

	ao := &approval.Options{Tool: func(name string) (reach.Tool, bool) { return g.rt.Tool(name) },
		Logger: g.log.With("component", "approvals")}
	if g.redactor != nil {
		ao.Redactor = g.redactor
	}
	switch {
	case g.policy != nil:
		ao.Requires = g.policy.Requirement
	case g.authn == nil:
		// One local user and no reviewers: the user approves alone.
		ao.Requires = func(context.Context, *reach.Call) string { return approval.User }
	}
	if a := g.cfg.Approvals; a != nil {
		ao.TTL, ao.Wait = time.Duration(a.TTL), time.Duration(a.Wait)
	}
	if g.audit != nil {
		ao.Audit = g.auditApproval
	}
	g.approvals = approval.New(ao)
	g.metrics.WithPendingApprovals(func() int { return len(g.approvals.List(approval.Pending)) })
	ro.Approver = g.approvals.Approver()
	return nil
}

// auditApproval records an approval's action in the audit log (A1): who
// asked for what, and each vote, denial, expiry and use, with who acted.
func (g *Gateway) auditApproval(ctx context.Context, e approval.Event) {
	a := e.Approval
	msg := "approval " + a.ID + " (" + a.Requires + ")"
	if e.By != "" {
		msg += " by " + e.By
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	// The event is the request's, as its other events are: its principal
	// is the one the request acts for; who acted is in the message.
	ev := &audit.Event{Request: a.Request, Kind: "approval", Name: a.Tool, Agent: a.Agent, Decision: e.Action,
		Principal: a.Principal, Tenant: a.Tenant, Why: a.Why, Message: msg, Args: a.Arguments}
	if a.RootRequest != a.Request {
		ev.Root = a.RootRequest
	}
	if _, err := g.audit.Append(ctx, ev); err != nil {
		g.log.Error("approval not audited", "approval", a.ID, "action", e.Action, "err", err)
	}
}

// Approvals returns the gateway's approval queue.
func (g *Gateway) Approvals() *approval.Queue { return g.approvals }

// Stats returns the per-tool statistics.
func (g *Gateway) Stats() *telemetry.Stats { return g.stats }

// shutdownTracer flushes the spans not yet exported.
func (g *Gateway) shutdownTracer() error {
	if g.tracer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.tracer.Shutdown(ctx); err != nil {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}
