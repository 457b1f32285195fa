package gateway

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/a2a"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/redact"
)

// newAgents builds the A2A gateway of the configured agents (nil without
// any): the runtime delegates, the gateway's linking places each message
// in its caller's request, and task events go to the audit log.
func (g *Gateway) newAgents() (*a2a.Gateway, error) {
	if len(g.cfg.Agents) == 0 {
		return nil, nil
	}
	agents := make([]a2a.Agent, 0, len(g.cfg.Agents))
	for _, ac := range g.cfg.Agents {
		a := a2a.Agent{Name: ac.Name, URL: ac.URL, Reentrancy: ac.Reentrancy, Key: ac.Key, OnViolation: ac.OnViolation}
		if ac.Budget != "" {
			b := g.cfg.Budgets[ac.Budget].Budget // checked to exist
			a.Budget = &b
		}
		agents = append(agents, a)
	}
	o := &a2a.Options{Agents: agents, Runtime: g.rt, Link: a2aLinker{g.owned}, Identity: a2aIdentity{}, Redactor: g.redactor,
		MaxBodyBytes: g.cfg.BodyLimit(), MaxLiveTasks: g.cfg.SessionsCap(), InputWait: g.cfg.IdleAfter(), Offline: g.opts.Offline, Logger: g.log.With("component", "a2a")}
	o.MaxTaskBytes, o.MaxTotalBytes = g.cfg.A2ALimits()
	o.MaxReadBytes = g.cfg.A2AReadBytes()
	o.PublicURL, o.Hosts = g.cfg.A2APublic()
	if g.audit != nil {
		o.Audit = a2aAudit{g.audit, g.redactor, g.log}
	}
	if g.store != nil {
		o.Tasks = g.store // tasks survive a restart; instances on one store answer for each other's
		cluster := g.cluster != nil
		o.Over = func(id string) bool {
			r, ok := g.rt.Lookup(id)
			if !ok {
				return false
			}
			if !cluster {
				// One gateway: a task it does not follow (Over is asked of
				// no other) whose hand-off is over, stopped and ended as
				// well as interrupted, has nothing left to bring its end.
				// A soft stop lets a task run on, and a kill after it left
				// the request stopped, the task working for ever.
				return r.State() != reach.RequestRunning
			}
			// Interrupted: a request is so once every gateway that held
			// it is dead; a stopped one may still be followed by another
			// instance, whose stream brings the task's end, unless a
			// recovery here found it stopped (every instance that held it
			// is dead).
			if r.State() == reach.RequestInterrupted {
				return true
			}
			_, recovered := g.recoveredStopped.Load(id)
			return recovered && r.State().Stopped()
		}
	}
	if c := g.cluster; c != nil {
		o.Stop = func(ctx context.Context, request, reason string) error {
			// The task's owner was checked against the stored task.
			_, _, err := c.Stop(ctx, request, reach.Cancel, "a2a", reason, func(string, string) bool { return true })
			if c.Ended(err) {
				// Its hand-off ended (the task's final record not read
				// yet): nothing to cancel; the answer is the task as it
				// ends.
				return nil
			}
			return err
		}
	}
	return a2a.New(g.ctx, o)
}

// a2aLinker places an A2A message as the gateway places any call: the
// request and frame its metadata or headers name (reach/request beats
// baggage), or a new request of the caller's.
type a2aLinker struct{ owned *link.Owned }

func (k a2aLinker) Place(ctx context.Context, in *a2a.Link) (context.Context, func(), error) {
	t, err := link.FromHeaders(in.Header)
	if err != nil {
		return nil, nil, err
	}
	if in.Request != "" {
		t.Request = in.Request
	}
	if in.Parent != "" {
		id, err := link.ParseFrameID(in.Parent)
		if err != nil {
			return nil, nil, link.KindBadParent.New("reach/parent: "+err.Error()+".",
				"Pass on the reach/parent reach gave you, or leave it out.")
		}
		t.Parent = id
	}
	if in.Budget != nil { // metadata reach/budget beats Reach-Budget and baggage
		b, err := link.ParseBudgetSpec(in.Budget)
		if err != nil {
			return nil, nil, link.KindBadBudget.New(err.Error()+".",
				"Send a budget's name (\"reach/budget\": \"small\") or amounts ({\"tool_calls\": 20}), or leave it out for the default.")
		}
		t.Budget = b
	}
	if in.Priority != nil { // metadata reach/priority beats Reach-Priority, read and checked as _meta's
		m, err := link.FromMeta(map[string]any{link.MetaPriority: in.Priority})
		if err != nil {
			return nil, nil, err
		}
		t.Priority = m.Priority
	}
	t.Agent = in.Agent
	ctx, _, done, err := k.owned.CallContext(ctx, t, nil)
	return ctx, done, err
}

// EndStoppedHandoff is link.Owned's: an A2A client's root request ends
// with its only hand-off's stop.
func (k a2aLinker) EndStoppedHandoff(ctx context.Context, caller *reach.Request, c reach.Cause) bool {
	return k.owned.EndStoppedHandoff(ctx, caller, c)
}

// a2aIdentity is the caller as the gateway authenticated it; without auth,
// the local user.
type a2aIdentity struct{}

func (a2aIdentity) Caller(ctx context.Context) a2a.Owner {
	if id, ok := auth.IdentityFrom(ctx); ok && id != nil {
		return a2a.Owner{Principal: id.Principal, Tenant: id.Tenant}
	}
	return a2a.Owner{Principal: link.LocalPrincipal}
}

// a2aAudit writes task events to the audit log, kind "task": the state
// (decision), what happened (reason: state, late, cancel, isolate,
// refused), the task id (call_id).
type a2aAudit struct {
	log *audit.Log
	// red masks the message, which is what an agent said (its status
	// message): the log stores what it is given (docs/AUDIT.md).
	red    *redact.Redactor
	logger *slog.Logger
}

func (a a2aAudit) AuditTask(ctx context.Context, e *a2a.TaskEvent) {
	ev := &audit.Event{Request: e.Request, Kind: "task", Name: e.Agent, Agent: e.Agent, CallID: e.Task, Principal: e.Owner.Principal,
		Tenant: e.Owner.Tenant, Decision: strings.ToLower(strings.TrimPrefix(e.State, "TASK_STATE_")), Reason: e.Kind, Message: a.red.RedactString(e.Message)}
	if e.Frame != 0 {
		ev.Frame = e.Frame.String()
	}
	if e.Root != e.Request {
		ev.Root = e.Root
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := a.log.Append(ctx, ev); err != nil {
		a.logger.Error("task event not audited", "agent", e.Agent, "task", e.Task, "kind", e.Kind, "err", err)
	}
}

// CheckAgents fetches the agents' cards and checks them, for `reach
// validate`: an unusable card is an error, an agent that does not answer
// a warning.
func (g *Gateway) CheckAgents(ctx context.Context) (warnings []string, err error) {
	if g.agents == nil {
		return nil, nil
	}
	return g.agents.Check(ctx)
}
