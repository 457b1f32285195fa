package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/telemetry"
	"github.com/agentreach/reach/internal/ui"
)

// Operators' surfaces: the web UI at /ui/, Prometheus metrics at /metrics,
// OTLP traces when telemetry.otlp_endpoint is set, and the approvals API at
// /v1/approvals. Every frame's event goes to the per-tool statistics, the
// metrics, the tracer and Options.Recorder, in that order.

// localPrincipal is who works with a gateway that authenticates nobody:
// the requests it begins and the approvals given at its API and UI.
const localPrincipal = "local"

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
	g.metrics = telemetry.NewMetrics().WithTools(known).WithUpstreams(g.upstreamsUp, g.upstreamName).WithRequests(g.activeRequests)
	recs := []reach.Recorder{g.stats, g.metrics}
	if t := g.cfg.Telemetry; t != nil && t.OTLPEndpoint != "" {
		if !strings.HasPrefix(t.OTLPEndpoint, "http://") && !strings.HasPrefix(t.OTLPEndpoint, "https://") {
			return g.cfg.errorf([]any{"telemetry", "otlp_endpoint"}, "telemetry: otlp_endpoint %q is not an http(s) URL such as http://127.0.0.1:4318", t.OTLPEndpoint)
		}
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(t.OTLPEndpoint, "/")+"/v1/traces"))
		if err != nil {
			return g.cfg.errorf([]any{"telemetry", "otlp_endpoint"}, "telemetry: %v", err)
		}
		g.tracer = telemetry.NewTracer(exp, &telemetry.TracerOptions{Served: true, Version: g.opts.Version, Peer: g.peer})
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
		Logger: g.log.With("component", "approvals"), Redactor: g.redactor}
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

// mountOperators adds the UI, /metrics and the approvals API to mux.
func (g *Gateway) mountOperators(mux *http.ServeMux) {
	uo := ui.Options{Runtime: g.rt, Stats: g.stats, Approvals: uiApprovals{g.approvals}, Actor: uiActor, Visible: g.sees, Operator: g.isOperator,
		Tools:  func(r *http.Request) []reach.Tool { return g.visibleTools(g.identityOf(r.Context(), nil)) },
		Logger: g.log.With("component", "ui")}
	if g.store != nil {
		g.auditV = newAuditView(g.store)
		uo.Audit = g.auditV
	}
	if g.authn != nil { // the UI signs browsers in itself (newHandler)
		uo.Login = &ui.Login{Header: g.authn.Authenticate, Credential: g.authn.Credential, Valid: g.authn.Valid}
	}
	g.ui = ui.New(uo)
	mux.Handle("/ui/", g.ui)
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) })
	// Operators' routes check who asks before anything else (a body, an
	// id): whoever is not an operator learns nothing but that.
	const dead = "Dead letters are for operators."
	mux.Handle("GET /metrics", g.operatorsOnly("Metrics are for operators: they count every principal's calls.", g.metrics.ServeHTTP))
	ah := g.approvals.Handler(&approval.HandlerOptions{Actor: approvalActor})
	mux.Handle("/v1/approvals", ah)
	mux.Handle("/v1/approvals/", ah)
	mux.Handle("GET /v1/deadletters", g.operatorsOnly(dead, g.listDeadLetters))
	mux.Handle("POST /v1/deadletters/{id}/retry", g.operatorsOnly(dead, g.retryDeadLetter))
	mux.Handle("POST /v1/deadletters/{id}/dismiss", g.operatorsOnly(dead, g.dismissDeadLetter))
	mux.HandleFunc("GET /v1/audit", g.auditEvents)
	mux.HandleFunc("GET /v1/audit/verify", g.auditVerify)
	mux.Handle("GET /v1/stats", g.operatorsOnly("Statistics are for operators: they count every principal's calls.", g.toolStats))
}

// operatorsOnly serves h to operators (everyone when the gateway
// authenticates nobody) and answers anyone else 403 with why, before h
// reads anything of the request.
func (g *Gateway) operatorsOnly(why string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.operatorOnly(w, r, why) {
			h(w, r)
		}
	})
}

// principalOf names who makes an HTTP request: the authenticated principal,
// or the local user when the gateway authenticates nobody.
func principalOf(r *http.Request) string {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return id.Principal
	}
	return localPrincipal
}

// uiActor is who makes an HTTP request to the UI: the authenticated
// principal and its tenant, or the local user.
func uiActor(r *http.Request) ui.Actor {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return ui.Actor{Principal: id.Principal, Tenant: id.Tenant}
	}
	return ui.Actor{Principal: localPrincipal}
}

func approvalActor(r *http.Request) approval.Actor {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return approval.Actor{Principal: id.Principal, Roles: id.Roles, Tenant: id.Tenant}
	}
	return approval.Actor{Principal: localPrincipal}
}

// uiApprovals shows the approval queue in the UI's inbox. It acts as the
// identity that makes each HTTP request (approvalActor), with the roles and
// tenant it authenticated with, as the API does.
type uiApprovals struct{ q *approval.Queue }

var _ ui.Approvals = uiApprovals{}

func (a uiApprovals) List(r *http.Request) []ui.Approval {
	all := a.q.List("")
	actor := approvalActor(r)
	out := make([]ui.Approval, 0, len(all))
	for _, x := range all {
		if !a.q.CanDecide(&x, actor) {
			continue // another principal's (or tenant's): as in GET /v1/approvals
		}
		v := ui.Approval{ID: x.ID, Tool: x.Tool, Args: string(x.Arguments), Impact: x.Impact(),
			AskedBy: x.Principal, Request: x.Request, Needs: x.Requires, Status: string(x.Status), Expires: x.Expires,
			Operation: x.Operation, Why: x.Why, Agent: x.Agent, Scene: x.Scene, Note: x.Note, Created: x.Created}
		for _, vote := range x.Votes {
			v.Votes = append(v.Votes, ui.Vote{By: vote.By, As: vote.As, Reason: vote.Reason, At: vote.At})
		}
		if d := x.Denial; d != nil {
			v.Denial = &ui.Vote{By: d.By, As: d.As, Reason: d.Reason, At: d.At}
		}
		out = append(out, v)
	}
	return out
}

func (a uiApprovals) Approve(r *http.Request, id, reason string) error {
	_, err := a.q.Approve(id, approvalActor(r), reason)
	return err
}

func (a uiApprovals) Deny(r *http.Request, id, reason string) error {
	_, err := a.q.Deny(id, approvalActor(r), reason)
	return err
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
