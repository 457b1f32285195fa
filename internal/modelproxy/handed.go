package modelproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
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
	ClaimHandedTask(ctx context.Context, principal, tenant, digest string, at time.Time) (*store.HandedTask, error)
	SetHandedSub(ctx context.Context, digest, request string, nth int, prev, sub string) (bool, error)
	HandedSubs(ctx context.Context, request, frame string) ([]string, error)
}

// MaxHandedPerPrincipal bounds the handed tasks the store keeps of one
// principal (of one tenant): past it the oldest go. Each is kept
// link.ChoiceWindow, as long as a sub-agent's first turn is linked to
// the turn that handed it its task.
const MaxHandedPerPrincipal = 1000

// maxHandedPerCall bounds the strings of one tool call recorded as tasks.
const maxHandedPerCall = 16

// handedRows returns the records of the string arguments of the tool
// call name that turn f chose (args, masked), as tasks a sub-agent may be
// handed (at most maxHandedPerCall), for putHanded.
func (p *Proxy) handedRows(f *reach.Frame, name string, args []byte) []*store.HandedTask {
	tasks := link.TaskStrings(args)
	if len(tasks) == 0 {
		return nil
	}
	if len(tasks) > maxHandedPerCall {
		tasks = tasks[:maxHandedPerCall]
	}
	root := f.Request.Root()
	stack, err := json.Marshal(f.Ancestry())
	if err != nil {
		p.log.Error("recording the tasks a model turn handed failed: a sub-agent given one is linked on this instance only",
			"request", f.Request.ID(), "err", err)
		return nil
	}
	now := time.Now()
	ts := make([]*store.HandedTask, len(tasks))
	for i, task := range tasks {
		ts[i] = &store.HandedTask{Digest: link.TaskDigest(root.Principal(), root.Tenant(), task), Principal: root.Principal(), Tenant: root.Tenant(),
			Request: f.Request.ID(), Frame: f.ID.String(), Tool: name, Stack: stack, Created: now, Expires: now.Add(link.ChoiceWindow)}
	}
	return ts
}

// maxHandedPerWrite bounds the records one write stores: a turn whose
// calls hand more is written in several.
const maxHandedPerWrite = 256

// putHanded records in the store the tasks turn f's tool calls hand (ts,
// handedRows'), so that a sub-agent given one finds the turn on any
// instance: before the calls reach the agent (the caller waits for it).
// A failure is logged: the sub-agent's turns are then linked on this
// instance only.
func (p *Proxy) putHanded(ctx context.Context, f *reach.Frame, ts []*store.HandedTask) {
	if len(ts) == 0 {
		return
	}
	// One turn's records have one instant (PutHandedTasks).
	for _, t := range ts[1:] {
		t.Created, t.Expires = ts[0].Created, ts[0].Expires
	}
	for len(ts) > 0 {
		n := min(len(ts), maxHandedPerWrite)
		if err := p.opts.Tasks.PutHandedTasks(context.WithoutCancel(ctx), ts[:n], MaxHandedPerPrincipal); err != nil {
			p.log.Error("recording the tasks a model turn handed failed: a sub-agent given one is linked on this instance only",
				"request", f.Request.ID(), "err", err)
			return
		}
		ts = ts[n:]
	}
	p.handing.add(f.ID)
}

// shared is Handed on several instances (handedShared): the hand-off
// to begin the sub-agent's sub-request from, or the running sub-request
// begun from the same choice to join (sub), and the store's record of
// that choice (row: nil when this instance's memory alone linked it).
type shared struct {
	h    *link.Handoff
	held bool // h's turn was adopted here and its request is held: handOff's held
	sub  *reach.Request
	row  *store.HandedTask
	// release lets go of what was joined (the turn's request adopted, or
	// the sub-request); call it once the turn is placed.
	release func()
}

// handedShared is Handed for a cluster: the store, which keeps the tasks
// every instance's turns handed and whether a sub-agent took each
// (ClaimHandedTask), decides for every instance as one instance's memory
// would: the one request's choice, else the one not taken yet, else none.
// A sub-request begun from the choice and still running, on any instance,
// is joined (as Handoff.Sub reuses one); else the choice's hand-off, from
// this instance's memory if its turn ran here, else its turn adopted
// (its request joined). Tasks no turn recorded in the store (the write
// failed) are linked on this instance's memory alone, as before. An error
// refuses the turn: the store did not answer and no turn here handed it.
func (p *Proxy) handedShared(ctx context.Context, task string, who *auth.Identity) (shared, error) {
	sh := shared{release: func() {}}
	principal, tenant := owner(who)
	digest := link.TaskDigest(principal, tenant, task)
	now := time.Now()
	unanswered := func(err error) (shared, error) {
		if sh.h = p.opts.Choices.Handed(task, who); sh.h != nil {
			return sh, nil // a turn of this instance's: linked here, as without a store
		}
		p.log.Error("looking up the turn that handed a conversation's task failed", "err", err)
		return sh, link.KindStoreUnavailable.New("The turn that handed this conversation's task could not be looked up in the shared store.",
			"Nothing was sent to the model. Try again in a moment.")
	}
	rows, err := p.opts.Tasks.HandedTasks(ctx, principal, tenant, digest, now)
	if err != nil {
		return unanswered(err)
	}
	if len(rows) == 0 {
		// No turn's record holds it (most first turns): no write. A turn
		// of this instance's whose record failed is linked here.
		sh.h = p.opts.Choices.Handed(task, who)
		return sh, nil
	}
	row, err := p.opts.Tasks.ClaimHandedTask(ctx, principal, tenant, digest, now)
	if err != nil {
		return unanswered(err)
	}
	if row == nil {
		return sh, nil // several requests' turns wait for it, or none: no guess
	}
	sh.row = row
	if row.Sub != "" {
		// A sub-agent given this task began a sub-request from this
		// choice, on this instance or another: while it runs, this one
		// joins it (on another instance, as a call placed in a
		// sub-request another instance began is: its budgets and stops
		// above it are the store's).
		_, sub, done, err := p.opts.Owned.CallContext(ctx, link.Target{Request: row.Sub}, nil)
		if err != nil {
			var le *link.Error
			if errors.As(err, &le) && le.Status == http.StatusServiceUnavailable {
				return sh, err
			}
		} else if sub.ID() == row.Sub && sub.State() == reach.RequestRunning && link.CheckCaller(who, sub) == nil {
			sh.sub, sh.release = sub, done
			return sh, nil
		} else {
			done()
		}
	}
	if sh.h = p.opts.Choices.HandedIn(task, who, row.Request, row.Frame, row.Tool, row.Nth); sh.h != nil {
		return sh, nil
	}
	h, done, err := p.adoptHanded(ctx, task, who, row)
	if err != nil || h == nil {
		return shared{release: func() {}}, err
	}
	sh.h, sh.held, sh.release = h, true, done
	return sh, nil
}

// adoptHanded is the hand-off of a task a turn of another instance handed
// (row, the store's record the claim chose): its request joined here and
// the turn adopted (release it once the turn is placed), or none when it
// runs no more or who's credentials may not call into it (CheckCaller).
// An error refuses the turn: the store did not answer.
func (p *Proxy) adoptHanded(ctx context.Context, task string, who *auth.Identity, row *store.HandedTask) (*link.Handoff, func(), error) {
	ad, ok := p.opts.Delegator.(Adopter)
	if !ok {
		return nil, nil, nil
	}
	id, err := reach.ParseFrameID(row.Frame)
	var stack []reach.Ancestor
	if err != nil || json.Unmarshal(row.Stack, &stack) != nil || len(stack) == 0 || stack[0].ID != id || reach.FrameKind(stack[0].Kind) != reach.ModelFrame {
		return nil, nil, nil
	}
	// The turn's request, joined here (its budget, stops and graph are
	// the store's), held until the turn is placed: only a running
	// request of who's that who's credentials may call into.
	_, req, done, err := p.opts.Owned.CallContext(ctx, link.Target{Request: row.Request}, nil)
	if err != nil {
		var le *link.Error
		if errors.As(err, &le) && le.Status == http.StatusServiceUnavailable {
			return nil, nil, err
		}
		p.log.Debug("a first turn's task handed on another instance was not linked", "request", row.Request, "err", err)
		return nil, nil, nil
	}
	if req.ID() != row.Request || req.State() != reach.RequestRunning || link.CheckCaller(who, req) != nil {
		done()
		return nil, nil, nil
	}
	f, err := ad.AdoptAncestry(req, stack)
	if err != nil {
		done()
		return nil, nil, nil
	}
	return p.opts.Choices.Adopt(task, f, row.Tool, row.Nth), done, nil
}

// begunFrom records in the store that the sub-agent's sub-request sub was
// begun from row's choice, for the instances its later first turns reach
// (handedShared) and the one its manager's conversation goes on on
// (endSubsElsewhere). A sub-request another instance recorded meanwhile
// (two first turns at once) stays the one recorded. A failure is logged:
// the sub-request is then found on this instance only.
func (p *Proxy) begunFrom(ctx context.Context, row *store.HandedTask, sub string) {
	if row == nil || sub == row.Sub {
		return
	}
	if _, err := p.opts.Tasks.SetHandedSub(context.WithoutCancel(ctx), row.Digest, row.Request, row.Nth, row.Sub, sub); err != nil {
		p.log.Error("recording the sub-request a sub-agent runs in failed: it is found on this instance only",
			"request", sub, "err", err)
	}
}

// Ender ends a request on every instance that runs a part of it, as its
// client's end does (a *cluster.Cluster).
type Ender interface {
	End(ctx context.Context, id string, may func(principal, tenant string) bool) (found bool, err error)
}

// maxHanding bounds the turns remembered as having handed tasks (handing).
const maxHanding = 10000

// handing remembers the model turns whose handed tasks this instance
// recorded in the store (recordHanded), oldest first: only their
// conversations going on ask the store for sub-requests to end.
type handing struct {
	mu    sync.Mutex
	set   map[reach.FrameID]struct{}
	order []reach.FrameID
}

func (h *handing) add(id reach.FrameID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set == nil {
		h.set = map[reach.FrameID]struct{}{}
	}
	if _, ok := h.set[id]; ok {
		return
	}
	if len(h.order) >= maxHanding {
		delete(h.set, h.order[0])
		h.order = h.order[1:]
	}
	h.set[id] = struct{}{}
	h.order = append(h.order, id)
}

// take reports whether id is remembered, and forgets it.
func (h *handing) take(id reach.FrameID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.set[id]
	delete(h.set, id) // its place in order goes when it comes round
	return ok
}

// endSubsElsewhere ends, on every instance, the sub-requests begun from
// the tasks model turn f handed (the store's records of them): f's
// conversation goes on, with what the tools that ran them returned, as
// link.Owned.EndSubs ends those this instance owns. A sub-agent's first
// turn that reached another instance has its sub-request there, which
// before ran on until its root's end or idle gap. Through the cluster's
// end (Ender: stored, every instance woken); a failure is logged, and
// the sub-request then ends with its root.
func (p *Proxy) endSubsElsewhere(ctx context.Context, f *reach.Frame) {
	if p.opts.Tasks == nil || p.opts.Ends == nil || !p.handing.take(f.ID) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	subs, err := p.opts.Tasks.HandedSubs(ctx, f.Request.ID(), f.ID.String())
	if err != nil {
		p.log.Error("reading the sub-requests a model turn's tasks began failed: they end with their root", "request", f.Request.ID(), "err", err)
		return
	}
	for _, sub := range subs {
		if _, err := p.opts.Ends.End(ctx, sub, nil); err != nil {
			p.log.Error("ending a sub-agent's sub-request on every instance failed: it ends with its root", "request", sub, "err", err)
		}
	}
}

// Adopter makes, in a request, the frames of a stack another instance
// runs (a *reach.Runtime): the Delegator's, when it is one.
type Adopter interface {
	AdoptAncestry(r *reach.Request, stack []reach.Ancestor) (*reach.Frame, error)
}
