package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/link"

	"github.com/agentreach/reach/internal/reachmeta"
)

// endpoint is the A2A request handler of one agent at /a2a/NAME. The SDK's
// JSON-RPC handlers (1.0 and 0.3) decode each call into it.
type endpoint struct {
	g *Gateway
	a *agent
}

var _ a2asrv.RequestHandler = (*endpoint)(nil)

func (e *endpoint) owner(ctx context.Context) Owner {
	if id := e.g.opts.Identity; id != nil {
		return id.Caller(ctx)
	}
	return Owner{}
}

// SendMessage answers once the task stops (terminal, or waiting for
// input), or at once with Config.ReturnImmediately.
func (e *endpoint) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	t, from, err := e.start(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := t.wait(ctx, from, req.Config != nil && req.Config.ReturnImmediately)
	if err != nil {
		return nil, err
	}
	if _, ok := res.(*a2a.Task); ok {
		crashpoint.Reached("task.shown")
	}
	return e.tag(ctx, t, res), nil
}

// SendStreamingMessage passes the task's events on until it stops.
func (e *endpoint) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		t, from, err := e.start(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		n := 0
		for ev := range t.events(ctx, from) {
			tk, ok := ev.(*a2a.Task)
			if ok {
				ev = e.tag(ctx, t, tk)
			}
			n++
			if !yield(ev, nil) {
				return
			}
			if ok {
				crashpoint.Reached("task.shown") // handed to the writer: the caller may have its id
			}
		}
		if n == 0 && ctx.Err() == nil {
			// Nothing came for this send (a continuation that changed
			// nothing): the task as it stands.
			if v := t.snapshot(); v != nil {
				yield(e.tag(ctx, t, v), nil)
			}
		}
	}
}

// tag adds reach's ids to a task for a caller that activated the linking
// extension.
func (e *endpoint) tag(ctx context.Context, t *task, res a2a.SendMessageResult) a2a.SendMessageResult {
	tk, ok := res.(*a2a.Task)
	if !ok || t.req == nil {
		return res
	}
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok || !requestedURI(cc, Extension) {
		return res
	}
	c := *tk
	c.Metadata = maps.Clone(tk.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]any{}
	}
	c.Metadata[MetaRequest] = t.req.ID()
	c.Metadata[MetaFrame] = t.frame.ID.String()
	return &c
}

func requestedURI(cc *a2asrv.CallContext, uri string) bool {
	for _, v := range cc.Extensions().RequestedURIs() {
		for u := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(u) == uri {
				return true
			}
		}
	}
	return false
}

// start begins a send: a continuation of a task reach follows, or a new
// hand-off. It returns the task and the feed index the send's events
// begin at. A refusal is a task too, already final.
func (e *endpoint) start(ctx context.Context, req *a2a.SendMessageRequest) (*task, int, error) {
	m := req.Message
	if m == nil || len(m.Parts) == 0 {
		return nil, 0, &a2a.Error{Err: a2a.ErrInvalidParams, Message: "The message is missing or has no parts; send a message with at least one part."}
	}
	if i := slices.Index(m.Parts, nil); i >= 0 {
		// Passed on, the send failed at the agent's client as if reach or
		// the agent had ("try again later"): it never could go.
		return nil, 0, &a2a.Error{Err: a2a.ErrInvalidParams, Message: fmt.Sprintf("Part %d of the message is null; send each part with its content (text, data, raw or url).", i)}
	}
	if n := len(m.ReferenceTasks); n > MaxReferenceTasks {
		// Each one reach does not hold costs a read of the store
		// (foreign): bounded here, not by the body's size alone.
		return nil, 0, &a2a.Error{Err: a2a.ErrInvalidParams, Message: fmt.Sprintf("The message references %d tasks (referenceTaskIds); reach passes on at most %d. Reference only the tasks this message needs, at most %d, and send it again.", n, MaxReferenceTasks, MaxReferenceTasks)}
	}
	owner := e.owner(ctx)
	// Another caller's task is answered not found (resume); a further
	// message of one's own task that references another's is refused.
	if what := e.foreign(ctx, owner, m); what != "" && (m.TaskID == "" || e.g.tasks.get(e.a.cfg.Name, m.TaskID, owner) != nil) {
		text := fmt.Sprintf("reach refused this message to agent %s: it names %s, which is another caller's; a caller's tasks and contexts are its own. "+
			"Send it without that reference, or with a task of yours.", e.a.cfg.Name, what)
		if m.TaskID != "" {
			return nil, 0, &a2a.Error{Err: a2a.ErrInvalidParams, Message: text}
		}
		return e.refuse(owner, req, nil, a2a.TaskStateRejected, nil, text), 0, nil
	}
	if m.TaskID != "" {
		return e.resume(ctx, req, owner)
	}
	if over, _, mine := e.g.tasks.over(owner); over {
		// What all tasks hold is every caller's: less the caller's own, it
		// told what other principals' and tenants' tasks held, and when.
		return e.refuse(owner, req, nil, a2a.TaskStateRejected, nil,
			fmt.Sprintf("reach refused this message to agent %s: the live A2A tasks of all callers are at the bound reach keeps for them together (a2a.max_total_bytes in the configuration), and yours hold %d bytes of artifacts and messages, your share of it or more, so reach begins no new task of yours until some end. Try again later, cancel the tasks you no longer need (CancelTask), or do this step another way.", e.a.cfg.Name, mine)), 0, nil
	}
	client, card, err := e.a.ready(ctx)
	if err != nil {
		return e.refuse(owner, req, nil, a2a.TaskStateFailed, nil,
			fmt.Sprintf("reach could not hand this message to agent %s: %v. Try again later, or do this step another way.", e.a.cfg.Name, err)), 0, nil
	}
	slot, n := e.g.live.reserve(owner, e.g.opts.MaxLiveTasks)
	if slot == nil {
		return e.refuse(owner, req, nil, a2a.TaskStateRejected, nil,
			fmt.Sprintf("reach refused this message to agent %s: you have %d tasks running at reach, the most one principal may have. "+
				"Wait for some of them to end, or cancel those you no longer need (CancelTask), then send it again.", e.a.cfg.Name, n)), 0, nil
	}
	placed := false
	defer func() {
		if !placed {
			e.g.live.unreserve(owner, slot)
		}
	}()
	text := textOf(m.Parts)
	l := e.link(ctx, req, owner)
	pctx, release, err := e.g.opts.Link.Place(ctx, l)
	if le, ok := errors.AsType[*link.Error](err); ok && !le.Model {
		// What the client sent cannot be placed (a malformed or
		// mismatched reach/parent, request or budget), or reach could
		// not answer in time: the client's to mend or retry, a protocol
		// error, no task.
		return nil, 0, linkError(le)
	}
	if err != nil {
		return e.refuse(owner, req, nil, a2a.TaskStateRejected, err, "reach refused this message to agent "+e.a.cfg.Name+": "+errText(err)), 0, nil
	}
	dctx, unhook := detach(pctx)
	cfg := &e.a.cfg
	_, sub, err := e.g.opts.Runtime.Delegate(dctx, &reach.Delegation{Agent: cfg.Name, Endpoint: cfg.URL, Task: text, Budget: cfg.Budget,
		Reentrancy: cfg.Reentrancy, Key: cfg.Key, OnViolation: cfg.OnViolation, Metadata: metadataJSON(m.Metadata)})
	if err != nil {
		unhook()
		defer release()
		caller, _ := reach.RequestFrom(pctx)
		return e.refuse(owner, req, caller, a2a.TaskStateRejected, err, "reach refused to hand this task to agent "+cfg.Name+": "+errText(err)), 0, nil
	}
	t := newTask(e.g, e.a, owner)
	t.req, t.frame, t.release, t.unhook = sub, sub.DelegateFrame(), release, unhook
	e.g.live.fill(slot, t)
	placed = true
	// The task's context is the caller's (a new one if it named none),
	// and the agent gets the owner's own id for it (upContext).
	mc := *m
	if mc.ContextID == "" {
		mc.ContextID = a2a.NewContextID()
	}
	t.ctxID, t.upCtx = mc.ContextID, upContext(owner, mc.ContextID)
	mine := *req
	mine.Message = &mc
	req = &mine
	t.history = []*a2a.Message{&mc}
	t.pumps = 1
	e.g.stops.arm(sub.Context(), t)
	out := e.forward(req, t)
	e.g.background(func() { t.pump(client, card.Capabilities.Streaming, out, t.out, 0) })
	return t, 0, nil
}

// CodeTaskElsewhere is the code (in the error's details) of a message to
// a task of the caller's that another instance sharing the store runs.
const CodeTaskElsewhere = "task_on_another_instance"

// notHere answers a further message of task id that this instance does
// not run, when the shared store keeps the task as owner's: one that ended
// takes no more messages, as here; one still running runs on another
// instance, which alone holds its stream to the agent and passes its
// messages on. Telling the caller to start a new task there would have
// its agent start over and lose the conversation. nil when the store has
// no such task of owner's (the caller is then told as before, and of
// another principal's task nothing is said).
func (e *endpoint) notHere(ctx context.Context, id a2a.TaskID, owner Owner) error {
	rec, v := e.g.storedTask(ctx, e.a.cfg.Name, id, owner)
	if v == nil {
		return nil
	}
	if rec.Final || v.Status.State.Terminal() {
		return &a2a.Error{Err: a2a.ErrUnsupportedOperation, Message: fmt.Sprintf("Task %s is %s at reach and takes no more messages; start a new task.", id, v.Status.State)}
	}
	return &a2a.Error{Err: a2a.ErrServerError,
		Message: fmt.Sprintf("Task %s of agent %s runs on another instance of this gateway (the instances share their store), which alone holds its stream to the agent and passes its messages on; this instance cannot. "+
			"Send this message again, with the same taskId, to the instance that runs the task: the one its first message went to (route a task's messages by taskId or contextId to one instance). "+
			"Do not start a new task for it, which would lose the task's conversation. GetTask on any instance shows the task's state (now %s); should that instance stop, the task ends failed, and only then is a new task the way on.", id, e.a.cfg.Name, v.Status.State),
		Details: map[string]any{"code": CodeTaskElsewhere, "taskId": string(id), "state": string(v.Status.State)}}
}

// MaxReferenceTasks is the most tasks a message may reference
// (referenceTaskIds): past it the message is refused, unread, as each
// reference reach does not hold is read from the store.
const MaxReferenceTasks = 64

// foreign names a task of another principal's at this agent that m
// references (referenceTaskIds), which reach would pass on to the agent as
// it is, and which the agent, that sees every caller as reach, would take
// as the other caller's (the content of its task). "" when none. A task is
// known by those reach holds and the store's. A message's context needs no
// such check: the agent gets the caller's own id for it (upContext).
func (e *endpoint) foreign(ctx context.Context, owner Owner, m *a2a.Message) string {
	for _, id := range m.ReferenceTasks {
		if e.g.tasks.owned(e.a.cfg.Name, id, owner) {
			return "task " + string(id)
		}
		if ts := e.g.opts.Tasks; ts != nil {
			rec, err := ts.GetTask(ctx, e.a.cfg.Name, string(id))
			if err == nil && (rec.Principal != owner.Principal || rec.Tenant != owner.Tenant) {
				return "task " + string(id)
			}
		}
	}
	return ""
}

// resume passes a further message of a task on, in the task's hand-off,
// once it has passed the checks a new message passes (reach.Request.
// Continue: the caller's request running and within its budgets, the loop
// guard). A refused message settles the task as rejected at reach, with
// a status message that says why and what to do, and cancels it at the
// agent: a caller that sends the same answer again and again to an agent
// that asks the same question is going round a loop that another answer
// of the same kind would not end.
func (e *endpoint) resume(ctx context.Context, req *a2a.SendMessageRequest, owner Owner) (*task, int, error) {
	t := e.g.tasks.get(e.a.cfg.Name, req.Message.TaskID, owner)
	if t == nil {
		if err := e.notHere(ctx, req.Message.TaskID, owner); err != nil {
			return nil, 0, err
		}
		return nil, 0, &a2a.Error{Err: a2a.ErrTaskNotFound, Message: fmt.Sprintf("Agent %s has no task %s of yours here; send without taskId to start one.", e.a.cfg.Name, req.Message.TaskID)}
	}
	closed := func() error {
		// A hand-off stopped but not over (a soft stop lets a task
		// finish) is Continue's to refuse, with a task state.
		if t.state.Terminal() || t.req == nil || t.ended {
			return &a2a.Error{Err: a2a.ErrUnsupportedOperation, Message: fmt.Sprintf("Task %s is %s at reach and takes no more messages; start a new task.", req.Message.TaskID, t.state)}
		}
		return nil
	}
	t.mu.Lock()
	if err := closed(); err != nil {
		t.mu.Unlock()
		return nil, 0, err
	}
	sub := t.req
	t.mu.Unlock()
	done, err := sub.Continue(ctx, textOf(req.Message.Parts))
	if err != nil {
		from := t.position()
		t.reject(err, fmt.Sprintf("reach refused this message to task %s of agent %s, and ended the task: %s", req.Message.TaskID, e.a.cfg.Name, errText(err)))
		return t, from, nil
	}
	t.mu.Lock()
	if err := closed(); err != nil { // it ended while the message was checked
		t.mu.Unlock()
		done("", true)
		return nil, 0, err
	}
	from := t.base + len(t.feed)
	t.pumps++
	t.rounds++
	round := t.rounds
	if t.round != nil {
		t.round("", true) // a round that never stopped (its stream broke)
	}
	t.round = done
	t.mu.Unlock()
	client, card, err := e.a.ready(ctx)
	if err != nil {
		t.mu.Lock()
		t.pumps--
		t.round = nil
		t.rearm(round)
		t.mu.Unlock()
		done("", true)
		return nil, 0, &a2a.Error{Err: a2a.ErrInternalError, Message: err.Error()}
	}
	out := e.forward(req, t)
	e.g.background(func() {
		t.pump(client, card.Capabilities.Streaming, out, t.out, round)
		t.mu.Lock()
		t.rearm(round)
		t.mu.Unlock()
		done(t.answer())
	})
	return t, from, nil
}

// forward is the request sent to the agent: the caller's, with reach's
// linking metadata in the message (no reach/ key of the caller's goes on),
// without the caller's tenant, and without its push configuration (reach
// does not relay it).
func (e *endpoint) forward(req *a2a.SendMessageRequest, t *task) *a2a.SendMessageRequest {
	out := *req
	out.Tenant = "" // the agent's owner is the configuration's, not the caller's to pick
	m := *req.Message
	// Reach's keys are reach's to set (a caller's reach/refusal or
	// reach/frame is not passed on); reach/budget is spent here.
	m.Metadata = maps.Clone(withoutReachKeys(m.Metadata))
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[MetaRequest] = t.req.ID()
	m.Metadata[MetaParent] = t.frame.ID.String()
	if t.upCtx != "" {
		m.ContextID = t.upCtx // the owner's own context at the agent, whatever the message names
	}
	out.Message = &m
	out.Metadata = withoutReachKeys(req.Metadata)
	if req.Config != nil {
		c := *req.Config
		c.PushConfig = nil
		c.ReturnImmediately = false
		out.Config = &c
	}
	return &out
}

// link gathers what the message says of its caller: reach's metadata and
// headers if it passed them on, else a live task reach forwarded that the
// message names by referenceTaskIds or contextId.
func (e *endpoint) link(ctx context.Context, req *a2a.SendMessageRequest, owner Owner) *Link {
	l := &Link{Agent: "a2a-client"}
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		l.Header = headerOf(cc.ServiceParams())
	}
	for _, md := range []map[string]any{req.Metadata, req.Message.Metadata} {
		if s, ok := md[MetaRequest].(string); ok && s != "" {
			l.Request = s
		}
		if s, ok := md[MetaParent].(string); ok && s != "" {
			l.Parent = s
		}
		if v, ok := md[MetaBudget]; ok && v != nil {
			l.Budget = v
		}
		if v, ok := md[MetaPriority]; ok && v != nil {
			l.Priority = v
		}
	}
	if l.Request != "" || l.Parent != "" || linked(l.Header) {
		return l
	}
	if t := e.g.tasks.caller(owner, e.a.cfg.Name, req.Message.ReferenceTasks, req.Message.ContextID); t != nil {
		l.Request, l.Parent = t.req.ID(), ""
	}
	return l
}

// linked reports whether headers carry reach's own context: a baggage
// reach.request, Reach-Request or Reach-Parent. A traceparent alone may be
// another tracer's; it is passed on either way, and names a frame if it
// is one of reach's.
func linked(h map[string][]string) bool {
	for k, vs := range h {
		switch strings.ToLower(k) {
		case "reach-request", "reach-parent":
			return len(vs) > 0
		case "baggage":
			for _, v := range vs {
				if strings.Contains(v, "reach.request=") {
					return true
				}
			}
		}
	}
	return false
}

// headerOf copies the linking headers from the SDK's service parameters.
func headerOf(sp *a2asrv.ServiceParams) map[string][]string {
	h := map[string][]string{}
	if sp == nil {
		return h
	}
	for _, k := range []string{"Traceparent", "Baggage", "Reach-Request", "Reach-Parent", "Reach-Scene", "Reach-Budget", "Reach-Priority"} {
		if v, ok := sp.Get(k); ok {
			h[k] = slices.Clone(v)
		}
	}
	return h
}

// detach is the context a hand-off starts from: the values of the placed
// context (its request and frame), ended by its request's end, not by the
// caller's HTTP call (a task goes on after the call that started it).
func detach(placed context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(placed))
	r, ok := reach.RequestFrom(placed)
	if !ok {
		return ctx, func() { cancel(nil) }
	}
	rc := r.Context()
	stop := context.AfterFunc(rc, func() { cancel(context.Cause(rc)) })
	return ctx, func() { stop(); cancel(nil) }
}

// refuse makes a task reach answers itself: rejected (a guard refused the
// hand-off) or failed (the agent could not be reached), with a status
// message that says what happened and what to do next. With a store
// (Options.Tasks), it is stored before it is returned.
func (e *endpoint) refuse(owner Owner, req *a2a.SendMessageRequest, caller *reach.Request, st a2a.TaskState, err error, text string) *task {
	t := newTask(e.g, e.a, owner)
	t.caller = caller
	t.id = newTaskID()
	t.ctxID = req.Message.ContextID
	if t.ctxID == "" {
		t.ctxID = a2a.NewContextID()
	}
	msg := agentText(t.id, t.ctxID, text)
	if re, ok := errors.AsType[*reach.Error](err); ok {
		msg.SetMeta(MetaRefusal, map[string]any{"guard": re.Guard, "type": re.Type, "code": re.Code})
	} else if le, ok := errors.AsType[*link.Error](err); ok {
		msg.SetMeta(MetaRefusal, map[string]any{"guard": "link", "type": le.Type, "code": le.Code})
	}
	t.state = st
	t.final.Store(true)
	t.ended = true
	if e.g.opts.Tasks != nil {
		t.changes++ // shown once stored, below
	}
	t.snap = &a2a.Task{ID: t.id, ContextID: t.ctxID, History: []*a2a.Message{req.Message},
		Status: a2a.TaskStatus{State: st, Message: msg, Timestamp: now()}}
	t.push(t.view())
	t.pcancel()
	e.g.tasks.add(t)
	t.audit("refused", st, text)
	// Stored in its final state before the caller learns its id, as a
	// task the agent runs is: GetTask and ListTasks find it after a
	// restart, and on the other instances that share the store.
	t.persist()
	return t
}

// linkError is the protocol error of a link.Error that is the client's
// (not Model): invalid params, or a server error when it may pass in a
// moment (429, 5xx); its details carry the code and the HTTP status.
func linkError(le *link.Error) *a2a.Error {
	kind := a2a.ErrInvalidParams
	if le.Status == http.StatusTooManyRequests || le.Status >= 500 {
		kind = a2a.ErrServerError
	}
	return &a2a.Error{Err: kind, Message: strings.TrimSpace(le.Message + " " + le.Suggestion),
		Details: map[string]any{"code": le.Code, "status": le.Status}}
}

func errText(err error) string {
	if le, ok := errors.AsType[*link.Error](err); ok {
		return strings.TrimSpace(le.Message + " " + le.Suggestion)
	}
	if re, ok := errors.AsType[*reach.Error](err); ok {
		return strings.TrimSpace(re.Message + " " + re.Suggestion)
	}
	return err.Error()
}

// newTaskID returns a new task id, "reach-" and 32 hex digits in time
// order (package ids: the store's tasks take a new one at the end of the
// agent's), 80 of its bits random: a client names its task by it.
func newTaskID() a2a.TaskID { return a2a.TaskID(ids.Text("reach-")) }

// metadataJSON is a message's metadata as a JSON object, for keyed
// agents, without reach's own keys.
func metadataJSON(md map[string]any) json.RawMessage {
	if len(md) == 0 {
		return nil
	}
	c := maps.Clone(md)
	for k := range c {
		if reachmeta.IsKey(k) {
			delete(c, k)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	return b
}

// GetTask answers with the agent's view of the task (its history and
// artifacts) and reach's state while the task runs; from reach's record
// once reach's state is final (what the agent sends after, an artifact, a
// status message, does not change the task as its clients read it), and
// when the agent does not answer.
func (e *endpoint) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	t := e.g.tasks.get(e.a.cfg.Name, req.ID, e.owner(ctx))
	if t == nil {
		// Another instance's task, as the store keeps it.
		if _, v := e.g.storedTask(ctx, e.a.cfg.Name, req.ID, e.owner(ctx)); v != nil {
			trimHistory(v, req.HistoryLength)
			return v, nil
		}
		return nil, notFound(e.a.cfg.Name, req.ID)
	}
	t.mu.Lock()
	// A task failed for its size is not asked for again, nor one whose
	// state at reach is final: its record is what the stream had at the
	// end, as the stream, a subscription and the store show it.
	ask := t.req != nil && !t.overgrew && !t.state.Terminal()
	t.mu.Unlock()
	if ask {
		if c, _, err := e.a.ready(ctx); err == nil {
			gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			// The agent's answer is read up to twice MaxTaskBytes (JSON
			// carries files' bytes as base64, and escapes), and what it
			// holds is bounded by MaxTaskBytes, as a stream's events are.
			gctx = e.g.taskCap(gctx)
			up, err := c.GetTask(t.out(gctx), &a2a.GetTaskRequest{ID: req.ID, HistoryLength: req.HistoryLength})
			cancel()
			if errors.Is(err, errTaskTooLarge) || err == nil && up.ID == req.ID && sizeOf(up) > e.g.opts.MaxTaskBytes {
				return nil, &a2a.Error{Err: a2a.ErrInvalidAgentResponse, Message: fmt.Sprintf("Agent %s's answer to GetTask for task %s is over %d bytes (a2a.max_task_bytes), more than reach relays of a task. "+
					"Ask with a smaller historyLength (its artifacts count too), or follow the task with SubscribeToTask, which keeps to the bound.", e.a.cfg.Name, req.ID, e.g.opts.MaxTaskBytes)}
			}
			if err == nil && up.ID == req.ID {
				tidy(up)
				t.mu.Lock()
				toCaller(up, t.ctxID)
				t.mu.Unlock()
				e.g.mask(up)
				// The agent's history and artifacts, with reach's state as
				// stored: the caller sees no state the store does not hold
				// (the stream the gateway reads brings the agent's states).
				// A task whose state became final at reach while the agent
				// answered is answered from reach's record, as above; a
				// different final state the agent reports here is
				// recorded as late.
				var after []func()
				t.lockStored() // its state as stored
				ended := t.state.Terminal()
				if ended {
					t.upFinal = t.upFinal || up.Status.State.Terminal()
					t.settle(up.Status, &after)
				} else {
					if t.snap != nil {
						up.Status = t.snap.Status
					}
					up.Status.State = t.state
				}
				t.mu.Unlock()
				for _, f := range after {
					f()
				}
				if !ended {
					return e.tag(ctx, t, up).(*a2a.Task), nil
				}
			}
		}
	}
	v := t.snapshot()
	if v == nil {
		return nil, notFound(e.a.cfg.Name, req.ID)
	}
	trimHistory(v, req.HistoryLength)
	return e.tag(ctx, t, v).(*a2a.Task), nil
}

func trimHistory(t *a2a.Task, n *int) {
	if n != nil && *n >= 0 && len(t.History) > *n {
		t.History = t.History[len(t.History)-*n:]
	}
}

func notFound(agent string, id a2a.TaskID) error {
	return &a2a.Error{Err: a2a.ErrTaskNotFound, Message: fmt.Sprintf("Agent %s has no task %s of yours here.", agent, id)}
}

// ListTasks lists the caller's tasks at this agent from reach's records:
// the agent would list other callers' tasks, and 0.3 agents cannot list.
func (e *endpoint) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	size := req.PageSize
	if size == 0 {
		size = 50
	}
	if size < 1 || size > 100 {
		return nil, &a2a.Error{Err: a2a.ErrInvalidParams, Message: "pageSize must be between 1 and 100."}
	}
	off := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, &a2a.Error{Err: a2a.ErrInvalidParams, Message: "pageToken is not one reach gave; send the nextPageToken of the previous page."}
		}
		off = n
	}
	var all []*a2a.Task
	views := []*a2a.Task{}
	here := map[a2a.TaskID]bool{}
	for _, t := range e.g.tasks.list(e.a.cfg.Name, e.owner(ctx)) {
		v := t.snapshot()
		if v != nil {
			here[v.ID] = true
		}
		views = append(views, v)
	}
	if ts := e.g.opts.Tasks; ts != nil {
		// The tasks other instances ran, as the store keeps them.
		o := e.owner(ctx)
		recs, err := ts.ListTasks(ctx, e.a.cfg.Name, o.Principal, o.Tenant, 1000)
		if err != nil {
			e.g.log.Warn("a2a: listing the stored tasks", "err", err)
		}
		for _, rec := range recs {
			if here[a2a.TaskID(rec.ID)] {
				continue
			}
			v, err := storedView(rec)
			if err != nil {
				e.g.badTask(rec, err)
				continue
			}
			e.g.cutOff(ctx, rec, v)
			views = append(views, v)
		}
	}
	for _, v := range views {
		if v == nil || (req.ContextID != "" && v.ContextID != req.ContextID) || (req.Status != "" && v.Status.State != req.Status) {
			continue
		}
		if req.StatusTimestampAfter != nil && (v.Status.Timestamp == nil || !v.Status.Timestamp.After(*req.StatusTimestampAfter)) {
			continue
		}
		if !req.IncludeArtifacts {
			v.Artifacts = nil
		}
		trimHistory(v, req.HistoryLength)
		all = append(all, v)
	}
	res := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, TotalSize: len(all), PageSize: size}
	if off < len(all) {
		end := min(off+size, len(all))
		res.Tasks = all[off:end]
		if end < len(all) {
			res.NextPageToken = strconv.Itoa(end)
		}
	}
	return res, nil
}

// CancelTask cancels the task, and through its sub-request everything it
// delegated, at every agent; the agents are told at once, and one that
// does not confirm is isolated. It answers once the task is canceled at
// reach: after what the agent sent before its own end of the task was
// kept (cancel), within Options.CancelTimeout.
func (e *endpoint) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	owner := e.owner(ctx)
	t := e.g.tasks.get(e.a.cfg.Name, req.ID, owner)
	if t == nil {
		return e.cancelStored(ctx, req.ID, owner)
	}
	t.mu.Lock()
	st := t.state
	t.mu.Unlock()
	switch {
	case st == a2a.TaskStateCanceled:
		return t.snapshot(), nil
	case st.Terminal() || t.req == nil:
		return nil, &a2a.Error{Err: a2a.ErrTaskNotCancelable, Message: fmt.Sprintf("Task %s is already %s at reach.", req.ID, st)}
	}
	who := owner.Principal
	if who == "" {
		who = "the caller"
	}
	reason := "CancelTask from " + who
	t.req.Stop(reach.Cancel, "a2a", reason)
	t.cancel(causeText(&reach.StopError{Cause: reach.Cause{Mode: reach.Cancel, By: "a2a", Reason: reason, Request: t.req.ID()}}), true)
	return t.snapshot(), nil
}

// cancelStored cancels a task that another instance runs: its hand-off's
// sub-request is stopped (Options.Stop), which wakes that instance, whose
// gateway cancels the task at reach and at the agent and stores it
// canceled; the answer is the stored task once final, or as it stands
// after the cancel timeout.
func (e *endpoint) cancelStored(ctx context.Context, id a2a.TaskID, owner Owner) (*a2a.Task, error) {
	rec, v := e.g.storedTask(ctx, e.a.cfg.Name, id, owner)
	switch {
	case v == nil:
		return nil, notFound(e.a.cfg.Name, id)
	case v.Status.State == a2a.TaskStateCanceled:
		return v, nil
	case rec.Final || rec.Request == "" || e.g.opts.Stop == nil:
		return nil, &a2a.Error{Err: a2a.ErrTaskNotCancelable, Message: fmt.Sprintf("Task %s is already %s at reach.", id, v.Status.State)}
	}
	who := cmp.Or(owner.Principal, "the caller")
	if err := e.g.opts.Stop(ctx, rec.Request, "CancelTask from "+who); err != nil {
		// The stop's error is the shared store's own text: logged, not told.
		e.g.log.Warn("a2a: task not canceled: its request not stopped", "agent", e.a.cfg.Name, "task", string(id), "request", rec.Request, "err", err)
		return nil, &a2a.Error{Err: a2a.ErrInternalError, Message: fmt.Sprintf("Task %s could not be canceled: the request it works in could not be stopped. Try again in a moment; if it goes on, ask the operator (reach's log has the error).", id)}
	}
	deadline := time.Now().Add(e.g.opts.CancelTimeout)
	for time.Now().Before(deadline) {
		if rec, nv := e.g.storedTask(ctx, e.a.cfg.Name, id, owner); nv != nil {
			v = nv
			if rec.Final {
				break
			}
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	return v, nil
}

// SubscribeToTask passes on the task as it stands, then its events until
// it stops.
func (e *endpoint) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		t := e.g.tasks.get(e.a.cfg.Name, req.ID, e.owner(ctx))
		if t == nil {
			yield(nil, notFound(e.a.cfg.Name, req.ID))
			return
		}
		owner := e.owner(ctx)
		if n, ok := e.g.follow.take(owner, e.g.opts.MaxLiveTasks); !ok {
			yield(nil, &a2a.Error{Err: a2a.ErrInvalidRequest, Message: fmt.Sprintf(
				"reach refused this stream of task %s: you hold %d streams of your tasks open at reach, the most one principal may. "+
					"Close those you no longer read (a client that reconnects should end its old stream first), or ask with GetTask.", req.ID, n)})
			return
		}
		defer e.g.follow.give(owner)
		from := t.position()
		v := t.snapshot()
		if v == nil {
			yield(nil, notFound(e.a.cfg.Name, req.ID))
			return
		}
		if !yield(e.tag(ctx, t, v), nil) || final(v) {
			return
		}
		for ev := range t.events(ctx, from) {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// Push notifications and the extended card are not relayed.

func (e *endpoint) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (e *endpoint) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (e *endpoint) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (e *endpoint) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

func (e *endpoint) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.ErrExtendedCardNotConfigured
}
