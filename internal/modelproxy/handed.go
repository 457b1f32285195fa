package modelproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/store"
)

// A sub-agent that a tool runs in the agent's own process is linked to the
// turn that handed it its task by that task (link.ModelChoices.Handed), in
// the memory of the instance that ran the turn. Behind a load balancer its
// first turn may reach another instance, where it would begin a request
// of its own, outside its manager's budget, stops and graph. So on
// several instances each task a turn hands is recorded in the shared
// store as it is answered (Options.Tasks: a digest of the principal, the
// tenant and the task, never the task), and an instance whose memory
// knows no turn for a first turn's task looks it up there and adopts the
// turn's request (as a call placed under a frame of another instance is),
// to begin the sub-agent's carved sub-request under it.

// HandedTasks keeps the tasks model turns handed, for every instance: a
// store.Store.
type HandedTasks interface {
	PutHandedTasks(ctx context.Context, ts []*store.HandedTask, most int) error
	HandedTasks(ctx context.Context, principal, tenant, digest string, at time.Time) ([]*store.HandedTask, error)
}

// MaxHandedPerPrincipal bounds the handed tasks the store keeps of one
// principal (of one tenant): past it the oldest go. Each is kept
// link.ChoiceWindow, as long as a sub-agent's first turn is linked to
// the turn that handed it its task.
const MaxHandedPerPrincipal = 1000

// maxHandedPerCall bounds the strings of one tool call recorded as tasks.
const maxHandedPerCall = 16

// recordHanded records in the store the string arguments of the tool call
// name turn f chose (args, masked), as tasks a sub-agent may be handed:
// before the call passes on to the agent, so that the sub-agent's first
// turn finds it on any instance. A failure is logged: the sub-agent's
// turns are then linked on this instance only.
func (p *Proxy) recordHanded(ctx context.Context, f *reach.Frame, name string, args []byte) {
	tasks := link.TaskStrings(args)
	if len(tasks) == 0 {
		return
	}
	if len(tasks) > maxHandedPerCall {
		tasks = tasks[:maxHandedPerCall]
	}
	root := f.Request.Root()
	stack, err := json.Marshal(f.Ancestry())
	if err != nil {
		p.log.Error("recording the tasks a model turn handed failed: a sub-agent given one is linked on this instance only",
			"request", f.Request.ID(), "err", err)
		return
	}
	now := time.Now()
	ts := make([]*store.HandedTask, len(tasks))
	for i, task := range tasks {
		ts[i] = &store.HandedTask{Digest: link.TaskDigest(root.Principal(), root.Tenant(), task), Principal: root.Principal(), Tenant: root.Tenant(),
			Request: f.Request.ID(), Frame: f.ID.String(), Tool: name, Stack: stack, Created: now, Expires: now.Add(link.ChoiceWindow)}
	}
	if err := p.opts.Tasks.PutHandedTasks(context.WithoutCancel(ctx), ts, MaxHandedPerPrincipal); err != nil {
		p.log.Error("recording the tasks a model turn handed failed: a sub-agent given one is linked on this instance only",
			"request", f.Request.ID(), "err", err)
	}
}

// handedElsewhere is Handed for a task that a turn of another instance
// handed: the hand-off from the turn the store names for who's task, its
// request joined here and the turn adopted (release it once the turn is
// placed), or none when no running request of who's handed it, when
// several did (as Handed, no guess), or when who's credentials may not
// call into it (CheckCaller). An error refuses the turn: the store did not
// answer.
func (p *Proxy) handedElsewhere(ctx context.Context, task string, who *auth.Identity) (*link.Handoff, func(), error) {
	principal, tenant := owner(who)
	rows, err := p.opts.Tasks.HandedTasks(ctx, principal, tenant, link.TaskDigest(principal, tenant, task), time.Now())
	if err != nil {
		p.log.Error("looking up the turn that handed a conversation's task failed", "err", err)
		return nil, nil, link.KindStoreUnavailable.New("The turn that handed this conversation's task could not be looked up in the shared store.",
			"Nothing was sent to the model. Try again in a moment.")
	}
	if len(rows) == 0 {
		return nil, nil, nil
	}
	tool := rows[0].Tool
	for _, r := range rows[1:] {
		if r.Request != rows[0].Request {
			return nil, nil, nil // turns of several running requests handed it
		}
		if r.Tool != tool {
			tool = "" // calls of other names carry it: no model-chosen name is trusted
		}
	}
	ad, ok := p.opts.Delegator.(Adopter)
	if !ok {
		return nil, nil, nil
	}
	id, err := reach.ParseFrameID(rows[0].Frame)
	var stack []reach.Ancestor
	if err != nil || json.Unmarshal(rows[0].Stack, &stack) != nil || len(stack) == 0 || stack[0].ID != id || reach.FrameKind(stack[0].Kind) != reach.ModelFrame {
		return nil, nil, nil
	}
	// The turn's request, joined here (its budget, stops and graph are
	// the store's), held until the turn is placed: only a running
	// request of who's that who's credentials may call into.
	_, req, done, err := p.opts.Owned.CallContext(ctx, link.Target{Request: rows[0].Request}, nil)
	if err != nil {
		var le *link.Error
		if errors.As(err, &le) && le.Status == http.StatusServiceUnavailable {
			return nil, nil, err
		}
		p.log.Debug("a first turn's task handed on another instance was not linked", "request", rows[0].Request, "err", err)
		return nil, nil, nil
	}
	if req.ID() != rows[0].Request || req.State() != reach.RequestRunning || link.CheckCaller(who, req) != nil {
		done()
		return nil, nil, nil
	}
	f, err := ad.AdoptAncestry(req, stack)
	if err != nil {
		done()
		return nil, nil, nil
	}
	return p.opts.Choices.Adopt(task, f, tool), done, nil
}

// Adopter makes, in a request, the frames of a stack another instance
// runs (a *reach.Runtime): the Delegator's, when it is one.
type Adopter interface {
	AdoptAncestry(r *reach.Request, stack []reach.Ancestor) (*reach.Frame, error)
}
