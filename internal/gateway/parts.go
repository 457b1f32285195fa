package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/cluster"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/agentreach/reach/internal/telemetry"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// The parts the runtime is built with, from the configuration: the
// authenticator, the policy engine, the recorders (statistics, metrics,
// traces, the audit log), the approval queue and the store.
//
// Permissions (P1-P3, P5). With auth configured, every endpoint but
// /healthz needs an API key (keys.json in the data folder) or a bearer JWT;
// the requests a client works in carry its principal, roles, tenant and
// department, and nobody may join another principal's request. The Cedar
// policies (policy.path, or the shipped defaults when auth is on) decide
// every call, and a principal is shown only the tools it could call, at
// most 50 (tools/list and GET /v1/tools).
//
// Operators' surfaces: the web UI at /ui/, Prometheus metrics at /metrics,
// OTLP traces when telemetry.otlp_endpoint is set, and the approvals API at
// /v1/approvals. Every frame's event goes to the per-tool statistics, the
// metrics, the tracer and Options.Recorder, in that order.

// authenticator builds the authenticator the configuration asks for, or
// nil.
func (g *Gateway) authenticator() (*auth.Authenticator, error) {
	a := g.cfg.Auth
	if !g.cfg.Authenticates() {
		return nil, nil
	}
	// Open without credentials: health and the probes (the UI, and the
	// redirect of a browser's GET / to it, are served before: httpapi).
	opts := &auth.Options{Logger: g.log.With("component", "auth"), Open: []string{"/healthz", "/livez", "/readyz"}}
	if a.Keys {
		dir, err := g.cfg.EnsureDataDir()
		if err != nil {
			return nil, err
		}
		keys, err := auth.OpenKeys(auth.KeysPath(dir))
		if err != nil {
			// Not "auth: ..." nor "auth.keys: ...": the redactor takes
			// what follows a credential's name and a colon for its value
			// and masks it ("auth.keys: [REDACTED] keys from ...").
			return nil, g.cfg.Errorf([]any{"auth", "keys"}, "the API keys of auth.keys could not be read, %v", err)
		}
		opts.Keys = keys
		g.keys = keys
	}
	if j := a.JWT; j != nil {
		jwks := j.JWKS
		remote := strings.HasPrefix(jwks, "http://") || strings.HasPrefix(jwks, "https://")
		if !remote {
			jwks = g.cfg.Path(jwks)
		}
		aud := j.Audience
		if aud == config.AnyAudience {
			aud = "" // every audience: the configuration says so
		}
		v, err := auth.NewVerifier(&auth.JWTOptions{JWKS: jwks, Issuer: j.Issuer, Audience: aud,
			PrincipalClaim: j.Claims.Principal, RolesClaim: j.Claims.Roles, TenantClaim: j.Claims.Tenant, DepartmentClaim: j.Claims.Department})
		if err != nil {
			return nil, g.cfg.Errorf([]any{"auth", "jwt"}, "auth.jwt: %s", strings.TrimPrefix(err.Error(), "jwt: "))
		}
		// Read the key set now: a missing or broken one fails here, with
		// its line, not as a 401 for every token (offline, a URL is not
		// fetched).
		if !remote || !g.opts.Offline {
			if err := v.Refresh(g.ctx); err != nil {
				return nil, g.cfg.Errorf([]any{"auth", "jwt"}, "auth.jwt: %s; check auth.jwt.jwks", strings.TrimPrefix(err.Error(), "jwt: "))
			}
		}
		opts.JWT = v
	}
	return auth.New(opts), nil
}

// authorizer sets up the policy engine when policies are configured or
// clients authenticate (otherwise the runtime decides by access level).
func (g *Gateway) authorizer(ro *reach.Options) error {
	if g.cfg.Policy == nil && g.authn == nil {
		return nil
	}
	g.policy = policy.New(&policy.Options{Tools: g.catalog.Tools, Logger: g.log.With("component", "policy")})
	if p := g.cfg.Policy; p != nil && p.Path != "" {
		// The watcher logs each reload and each failed one (with what stays
		// in force) itself: once.
		// Each reload, and each change that failed to load, is counted
		// (reach_policy_reloads_total): what shows that an edit is in
		// force, or that the previous policies stay.
		w, err := policy.NewWatcher(g.policy, g.cfg.Path(p.Path), &policy.WatchOptions{Logger: g.log.With("component", "policy"),
			OnReload: func(*policy.Set) { g.reloads[0].Add(1) }, OnError: func(error) { g.reloads[1].Add(1) }})
		if err != nil {
			return g.cfg.Errorf([]any{"policy", "path"}, "policy: %v", err)
		}
		go w.Run(g.ctx)
	}
	ro.Authorizer = g.policy
	return nil
}

// principal is the policies' view of a caller (the local user without auth).
func principalFor(id *auth.Identity) policy.Principal {
	if id == nil {
		return policy.Principal{ID: link.LocalPrincipal}
	}
	return policy.Principal{ID: id.Principal, Roles: id.Roles, Tenant: id.Tenant, Attributes: id.Attributes}
}

// operators builds the recorders and the approval queue into ro.
func (g *Gateway) operators(ctx context.Context, ro *reach.Options) error {
	g.stats = telemetry.NewStats(0).WithTools(g.catalog.Has)
	g.metrics = telemetry.NewMetrics().WithTools(g.catalog.Has).WithUpstreams(g.upstreamsUp, g.upstreamName).WithRequests(g.activeRequests)
	// The store's users log an error each time it fails: while it is
	// down, every call would; each run of one error is logged once, its
	// end once, and its repeats counted.
	g.repeats = NewRepeats(repeatQuiet)
	g.metrics.WithLogRepeats(g.repeats.Counts)
	if p := g.cfg.Policy; p != nil && p.Path != "" {
		g.metrics.WithPolicyReloads(func() (int64, int64) { return g.reloads[0].Load(), g.reloads[1].Load() })
	}
	recs := []reach.Recorder{g.stats, g.metrics}
	if t := g.cfg.Telemetry; t != nil && t.OTLPEndpoint != "" {
		if !strings.HasPrefix(t.OTLPEndpoint, "http://") && !strings.HasPrefix(t.OTLPEndpoint, "https://") {
			return g.cfg.Errorf([]any{"telemetry", "otlp_endpoint"}, "telemetry: otlp_endpoint %q is not an http(s) URL such as http://127.0.0.1:4318", t.OTLPEndpoint)
		}
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(t.OTLPEndpoint, "/")+"/v1/traces"))
		if err != nil {
			return g.cfg.Errorf([]any{"telemetry", "otlp_endpoint"}, "telemetry: %v", err)
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

	ao := &approval.Options{Tool: g.catalog.Tool, Logger: g.log.With("component", "approvals"), Redactor: g.redactor}
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
	ao.Audit, ao.Audited = g.approvalEvent, g.approvalAudited
	if g.store != nil {
		ao.Store = g.store // pending approvals survive a restart
		ao.Shared = g.cluster != nil
		if ao.Shared {
			ao.Instance = g.cfg.InstanceName() // a restart audits again what its killed life stored and did not audit
		}
	}
	g.approvals = approval.New(ao)
	if err := g.approvals.Load(ctx); err != nil {
		return err
	}
	g.metrics.WithPendingApprovals(func() int { return len(g.approvals.List(approval.Pending)) })
	ro.Approver, ro.ApprovalKey = g.approvals.Approver(), g.approvals.ApprovalKey
	return nil
}

// approvalEvent settles the frames that waited for an approval once it is
// decided, expired or used (settleAwaiting), and audits the action.
func (g *Gateway) approvalEvent(ctx context.Context, e approval.Event) {
	g.settleAwaiting(e)
	if g.audit != nil && !e.Elsewhere { // audited by the instance that took it
		g.auditApproval(ctx, e)
	}
}

// settleAwaiting ends the frames of the calls answered pending for the
// approval of e, once it is denied, expired or used: the graph then shows
// what became of each (refused, cancelled, or completed by the repeated
// call, which it names), not a call still waiting. The audit event of the
// action names the first of them (auditApproval), which a restart reads
// back (durable.History).
func (g *Gateway) settleAwaiting(e approval.Event) {
	a := &e.Approval
	s, er, summary, ok := approval.Settled(a, e.Action, e.By)
	if !ok || g.rt == nil {
		return
	}
	// Each frame is in its root request's graph (or a sub-request's): a
	// call repeated with its idempotency key waits in a request of its own.
	roots := map[string]*reach.Request{}
	var order []*reach.Request
	for i, f := range a.Frames {
		id, err := reach.ParseFrameID(f)
		if err != nil || f == a.RanIn {
			continue
		}
		root := a.FrameRoot(i)
		r, seen := roots[root]
		if !seen {
			r, _ = g.rt.Lookup(root)
			roots[root] = r
			if r != nil {
				order = append(order, r)
			}
		}
		if r != nil {
			r.SettleAwaiting(id, s, er, summary)
		}
	}
	// The approval lists the first frames only (approval.Approval.Frames):
	// the others that waited for it in those requests, their pending
	// answer naming it, end with it too.
	for _, r := range order {
		for _, f := range r.Frames() {
			if f.State() == reach.AwaitingApproval && approval.WaitsFor(f.Err()) == a.ID && f.ID.String() != a.RanIn {
				r.SettleAwaiting(f.ID, s, er, summary)
			}
		}
	}
}

// approvalHead is how an approval's audit event's message begins: which
// approval, and what it requires. approvalAudited finds the event by it.
func approvalHead(a *approval.Approval) string { return "approval " + a.ID + " (" + a.Requires + ")" }

// auditApproval records an approval's action in the audit log (A1): who
// asked for what, and each vote, denial, expiry and use, with who acted.
func (g *Gateway) auditApproval(ctx context.Context, e approval.Event) {
	a := e.Approval
	msg := approvalHead(&a)
	if e.By != "" {
		msg += " by " + e.By
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	// The event is the request's, as its other events are: its principal
	// is the one the request acts for; who acted is in the message.
	ev := &audit.Event{Request: a.Request, Kind: "approval", Name: a.Tool, Agent: a.Agent, Decision: e.Action,
		Principal: a.Principal, Tenant: a.Tenant, Why: a.Why, Message: msg, Args: a.Arguments,
		Once: e.Once()} // appended once, whoever audits it (a revived instance and its survivor)
	if a.RootRequest != a.Request {
		ev.Root = a.RootRequest
	}
	if _, _, _, ok := approval.Settled(&a, e.Action, e.By); ok && len(a.Frames) > 0 {
		ev.Frame = a.Frames[0] // the waiting frame it settles (durable.History)
		if a.RanIn != "" {
			ev.Result = "ran as frame " + a.RanIn
		}
	}
	if _, err := g.audit.Append(ctx, ev); err != nil {
		g.log.Error("approval not audited", "approval", a.ID, "action", e.Action, "err", err)
	}
}

// shutdownTracer flushes the spans not yet exported.
func (g *Gateway) shutdownTracer() error {
	if g.tracer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.tracer.Shutdown(ctx)
	// Said in the log, as the metrics that counted them go with the
	// process: spans a slow or down collector did not take by the
	// deadline, and those lost while serving.
	var lost *telemetry.LostError
	switch {
	case errors.As(err, &lost):
		g.log.Warn("shutting down: spans not exported within 5s are lost (is the OTLP collector slow or down?)", "spans", lost.Spans)
	case err != nil:
		g.log.Warn("shutting down: flushing the spans failed", "err", err)
	}
	if full, failed := g.tracer.Drops(); full+failed > 0 {
		g.log.Warn("spans were lost while serving (reach_spans_dropped_total)", "queue_full", full, "export_failed", failed)
	}
	if err != nil {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}

// persistence opens the store in the data folder (when the configuration
// names one, or came from a file): the audit log becomes a recorder, every
// write is checkpointed, idempotency records and dead letters are durable.
// It returns the audit log, or nil without a data folder.
func (g *Gateway) persistence(ctx context.Context, ro *reach.Options) (*audit.Log, error) {
	if g.opts.Ephemeral || !g.cfg.HasDataDir() && !g.cfg.Postgres() {
		return nil, nil
	}
	var st store.Store
	where := ""
	// Each tool call's event names its upstream (the tool's upstream: tag),
	// so that a replay places it as the policies did; several instances on
	// one store also name themselves in the stops they record.
	ao := &audit.Options{Upstreams: true}
	if g.cfg.Postgres() {
		pg, err := postgres.Open(ctx, g.cfg.Store.Reveal(), &postgres.Options{Logger: g.repeats.Logger(g.log.With("component", "store"))})
		if err != nil {
			return nil, g.cfg.Errorf([]any{"store"}, "store: %v", err)
		}
		// One name among the instances on the store, held while it runs.
		c, err := cluster.New(ctx, &cluster.Options{Store: pg, Instance: g.cfg.InstanceName(), TTL: time.Duration(g.cfg.InstanceTTL),
			Logger: g.log.With("component", "cluster"), StopsFile: g.stopsPath()})
		if err != nil {
			pg.Close()
			return nil, g.cfg.Errorf([]any{"instance"}, "%v", err)
		}
		st, where, g.cluster = pg, "PostgreSQL at "+pg.Where(), c
		ao.Instance = g.cfg.InstanceName()
	} else {
		dir, err := g.cfg.EnsureDataDir()
		if err != nil {
			return nil, err
		}
		unlock, err := lockDataDir(dir)
		if err != nil {
			return nil, err
		}
		sq, err := sqlite.Open(ctx, dir, &sqlite.Options{Logger: g.repeats.Logger(g.log.With("component", "store"))})
		if err != nil {
			unlock()
			return nil, fmt.Errorf("opening the store in %s: %w", dir, err)
		}
		st, where, g.unlockData = sq, dir, unlock
	}
	var ast store.AuditLog = st
	if auditTest != nil {
		ast = auditTest(ao, st)
	}
	log, err := audit.New(ctx, ast, ao)
	if err != nil {
		g.closeCluster()
		st.Close()
		g.releaseData()
		return nil, fmt.Errorf("opening the audit log in %s: %w", where, err)
	}
	g.metrics.WithAudit(log.Stats)
	if w, ok := st.(interface{ WriterStats() store.WriterStats }); ok {
		g.metrics.WithStore(w.WriterStats)
	}
	if r, ok := st.(store.Retention); ok {
		g.metrics.WithRetention(r.RetainedTotal)
	}
	// A checkpoint keeps the arguments masked, as the audit log does.
	cp := durable.New(st, g.redactor.Redact, g.repeats.Logger(g.log.With("component", "checkpoints")))
	cp.OnStop(g.stoppedRequest)
	ro.Checkpoints, ro.Requests, ro.DeadLetters = cp, cp, cp
	io := &store.IdempotencyOptions{Instance: g.cfg.InstanceName(), Logger: g.log.With("component", "idempotency")}
	if c := g.cluster; c != nil {
		// Requests are joined and left, stopped for every instance; each
		// call is admitted against its request's shared ledger and stop;
		// reads are checkpointed too, with their stacks, so that a call
		// another instance places under one sees its ancestors.
		rec := c.Recorder(cp)
		ro.Checkpoints, ro.Requests, ro.DeadLetters = rec, rec, rec
		ro.CheckpointReads = true
		ro.Middleware = append([]reach.Middleware{c.Admission()}, ro.Middleware...)
		// A write based on a read another instance's write made stale is
		// refused here too: the entities' versions are the store's.
		ro.Entities = st
		// Claims are owned by the life that heartbeats: c.Alive and the
		// recovery of dead lives know no other.
		io.Instance, io.Owner, io.Alive = c.Instance(), c.Owner(), c.Alive
	} else {
		// A write's claim and its "executing" checkpoint: one commit.
		io.Checkpoint = cp.ExecutingFrame
	}
	// Claims carry a lease and an owner of this process's life, so that
	// recover settles the claims a crashed run left (see durable.Recover).
	g.idem = store.NewIdempotency(st, io)
	ro.Idempotency = g.idem
	// An agent's refusals in a row are counted on the store: across the
	// instances that share a request, and across a restart.
	ro.RefusalCounter, ro.RefusalsShared = st, g.cluster != nil
	if cs, ok := st.(reach.CutOffStore); ok {
		ro.CutOffs = cs // a retry through another instance, or after a restart, is caught (reach/cutoff.go)
		ro.CutOffsShared = g.cluster != nil
	}
	// The completions the last stop could not write (the store was down)
	// are written before recovery settles their claims "interrupted".
	if path := g.keptPath(); path != "" {
		_, err := g.idem.RestoreKept(ctx, path)
		switch {
		case errors.Is(err, store.ErrKeptAside):
			// Lines it could not read were moved aside: the rest is
			// written and the file gone, so the journal runs.
			g.log.Error("idempotency: "+err.Error(), "component", "idempotency", "aside", store.KeptAside(path))
			g.idem.KeepFile(path)
		case err != nil:
			g.log.Error("idempotency: "+err.Error()+"; their keys' retries may be answered that the calls may have run; until the file is gone, what is kept is not written to the data folder as it is kept (a kill loses it)", "component", "idempotency")
		default:
			g.idem.KeepFile(path) // what is kept from now on is in the file as it is kept: a kill loses none of it
		}
	}
	cp.KeepEnds(g.idem)
	// The requests of earlier runs come back from the store: listed,
	// looked up, their graphs rebuilt from their audit events.
	g.history = durable.NewHistory(st, g.repeats.Logger(g.log.With("component", "history")))
	// A named id that a call looked up and found nowhere, being begun by
	// it (link.Owned.Unknown), is not read from the store again by the
	// runtime's Begin.
	ro.History = func(id string) (*reach.PastRequest, bool) {
		if q := g.begins.Load(); q != nil && q.Unknown(id) {
			return nil, false
		}
		return g.history.Past(id)
	}
	// A request keeps its newest ended tool frames in memory; the older
	// ones are read back from their audit events when a view asks.
	ro.StoredFrames = func(id string) []reach.PastFrame {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := log.Flush(ctx); err != nil {
			g.log.Error("history: flushing the audit log", "request", id, "err", err)
		}
		return g.history.Frames(id)
	}
	g.store, g.audit = st, log
	return log, nil
}

// recover resolves what a previous run left in flight; call it once the
// tools are registered.
func (g *Gateway) recover(ctx context.Context) error {
	if g.store == nil {
		return nil
	}
	ropts := &durable.RecoverOptions{Idempotency: g.idem, History: g.history}
	if g.cluster != nil {
		ropts.Shared = g.cluster
	}
	if g.cluster != nil {
		if err := durable.MoveEarlierEntities(ctx, g.cluster, g.rt); err != nil {
			return fmt.Errorf("recovering from the previous run: %w", err)
		}
	}
	g.adoptApprovals(ctx) // the unaudited approval actions of instances not alive, dead or forgotten
	rep, err := durable.Recover(ctx, g.store, g.rt, ropts)
	if err != nil {
		return fmt.Errorf("recovering from the previous run: %w", err)
	}
	g.noteStopped(rep)
	g.endApprovals(ctx, rep)
	if g.cluster != nil {
		// Then, while it serves: the stops of the other instances, the
		// approvals they write, and the work of those that die.
		g.cluster.OnEnd(g.owned.End) // a request its client ended through another instance
		err := g.cluster.Start(g.rt, g.approvals.Refresh, func(ctx context.Context) error {
			g.adoptApprovals(ctx)
			rep, err := durable.Recover(ctx, g.store, g.rt, ropts)
			if err == nil {
				g.noteStopped(rep)
				g.endApprovals(ctx, rep)
				g.logRecovery(rep)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	if err := g.history.Restore(ctx, g.rt, pastRequests); err != nil {
		return fmt.Errorf("reading the requests of earlier runs: %w", err)
	}
	g.logRecovery(rep)
	g.startRetention() // once recovery has settled what a crash left running
	return nil
}

// stoppedRequest ends the approvals a stopped root request leaves that
// nothing can use (as endApprovals does for the requests a recovery finds
// stopped): a sub-request's stop leaves them, as its root goes on.
func (g *Gateway) stoppedRequest(ctx context.Context, r *reach.Request) {
	if g.approvals != nil && r.Parent() == nil {
		g.approvals.EndWithRequests(ctx, []string{r.ID()}, "was stopped")
	}
}

// noteStopped remembers the requests a recovery here found stopped: every
// instance that held them is dead, so no stream follows their tasks any
// more (a2a.Options.Over). It forgets those the runtime no longer keeps
// (it keeps the latest ended requests, 1000 by default): Over answers
// false for them whatever the set says, and each recovery (one for each
// instance that dies) would have added its own for ever.
func (g *Gateway) noteStopped(rep *durable.Report) {
	g.recoveredStopped.Range(func(id, _ any) bool {
		if _, ok := g.rt.Lookup(id.(string)); !ok {
			g.recoveredStopped.Delete(id)
		}
		return true
	})
	for _, id := range rep.Stopped {
		g.recoveredStopped.Store(id, struct{}{})
	}
}

// endApprovals expires the approvals that the requests a recovery found
// interrupted or stopped leave without a call that could use them.
func (g *Gateway) endApprovals(ctx context.Context, rep *durable.Report) {
	if g.approvals == nil {
		return
	}
	g.approvals.EndWithRequests(ctx, rep.Interrupted, "was interrupted: the gateway that ran it stopped")
	g.approvals.EndWithRequests(ctx, rep.Stopped, "was stopped")
}

// logRecovery logs what a recovery found and did.
func (g *Gateway) logRecovery(rep *durable.Report) {
	for _, d := range rep.Dead {
		g.log.Warn("an instance on the store died: its work was recovered", "life", d)
	}
	for _, c := range rep.Claims {
		g.log.Warn("an idempotency key was claimed when the gateway stopped: settled", "key", c.Claim.Key, "outcome", c.Outcome)
	}
	for _, f := range rep.MayHaveRun {
		g.log.Warn("a call was running when the gateway stopped: it may have run", "request", f.Request, "tool", f.Name, "idempotency_key", f.IdemKey)
	}
	for _, id := range rep.Interrupted {
		g.log.Warn("request interrupted by a restart", "request", id, "compensations", len(rep.Compensated[id]))
	}
	for _, b := range rep.Unreadable {
		g.log.Warn("a stored row could not be read (a disk error, a hand edit, a partial restore): it is kept in the store as it is; "+
			"inspect the row in its table, then fix or delete it by hand", "table", b.Table, "key", b.Key, "err", b.Err, "reach_did", b.Did)
	}
}

// closeCluster says this instance departs, if it shares a store.
func (g *Gateway) closeCluster() {
	if g.cluster != nil {
		g.cluster.Close()
	}
}

// pastRequests is how many requests of earlier runs the request list
// shows after a restart (any other is found by its id).
const pastRequests = 1000

func (g *Gateway) closeStore() error {
	var errs []error
	if g.idem != nil {
		// The completions kept while the store refused them are written
		// while this life still holds its claims: for up to the grace,
		// then left in the data folder for the next start.
		ctx, cancel := context.WithTimeout(context.Background(), store.KeptGrace)
		left := g.idem.Drain(ctx)
		cancel()
		if path := g.keptPath(); left > 0 && path != "" {
			if n, err := g.idem.SaveKept(path); err != nil {
				g.log.Error("idempotency: the completions the store did not take could not be left for the next start: they are lost, and their keys' retries will be answered that the calls may have run", "kept", left, "err", err)
			} else {
				g.log.Warn("idempotency: the completions the store did not take are left in the data folder; the next start writes them", "kept", n, "file", filepath.Base(path))
			}
		} else if left > 0 {
			g.log.Error("idempotency: the completions the store did not take are lost (no data folder to leave them in): their keys' retries will be answered that the calls may have run", "kept", left)
		}
	}
	g.closeCluster()
	if g.audit != nil {
		errs = append(errs, g.audit.Close())
	}
	if g.store != nil {
		errs = append(errs, g.store.Close())
	}
	g.releaseData()
	return errors.Join(errs...)
}

// keptPath is the file where a stop leaves the completions the store did
// not take (store.SaveKept), or "" without a data folder. On PostgreSQL,
// whose instances may share a data folder, it names the instance.
func (g *Gateway) keptPath() string {
	if g.opts.Ephemeral || !g.cfg.HasDataDir() {
		return ""
	}
	dir, err := g.cfg.EnsureDataDir()
	if err != nil {
		return ""
	}
	if g.cfg.Postgres() {
		return filepath.Join(dir, strings.TrimSuffix(store.KeptFile, ".jsonl")+"-"+url.PathEscape(g.cfg.InstanceName())+".jsonl")
	}
	return filepath.Join(dir, store.KeptFile)
}

// stopsPath is the file in the data folder where this instance keeps the
// stops the shared store refused until it takes them
// (cluster.Options.StopsFile): "" without a data folder.
func (g *Gateway) stopsPath() string {
	if g.opts.Ephemeral || !g.cfg.HasDataDir() {
		return ""
	}
	dir, err := g.cfg.EnsureDataDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, StopsFile+"-"+url.PathEscape(g.cfg.InstanceName())+".jsonl")
}

// StopsFile begins the name of the file in the data folder where an
// instance on a shared store keeps the stops the store refused
// (stopsPath): "stops-kept-INSTANCE.jsonl".
const StopsFile = "stops-kept"

// dataLockFile is the file in the data folder whose lock a gateway holds.
const dataLockFile = "reach.lock"

// releaseData lets go of the data folder, once its store is closed.
func (g *Gateway) releaseData() {
	if g.unlockData != nil {
		g.unlockData()
		g.unlockData = nil
	}
}

// auditTest, set by tests only, changes the audit log's options and wraps
// the store it appends to (to stall its writer).
var auditTest func(*audit.Options, store.AuditLog) store.AuditLog
