package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/traceparent"
)

// maxFeed bounds the events a task keeps for its listeners; one that falls
// further behind gets the task as it stands and goes on from there.
const maxFeed = 512

// task is the gateway's record of one task: who owns it, the hand-off it
// runs in, its state at reach (final once terminal), the latest view of it,
// and the events its listeners follow.
type task struct {
	g       *Gateway
	a       *agent
	owner   Owner
	req     *reach.Request // the hand-off's sub-request; nil for a refusal
	frame   *reach.Frame   // the hand-off's delegate frame; nil for a refusal
	caller  *reach.Request // a refusal's: the request the hand-off was refused in, if known
	created time.Time
	release func() // the caller's hold on its request, until the task ends
	unhook  func() // stops the parent's cancel reaching the hand-off's context

	pctx    context.Context // the upstream stream's lifetime
	pcancel context.CancelFunc
	final   atomic.Bool // state is terminal: read without t.mu (the registry's lock comes after it)

	mu       sync.Mutex
	id       a2a.TaskID
	ctxID    string        // the caller's context id
	upCtx    string        // the agent's for it (upContext), "" for a task reach answered itself
	state    a2a.TaskState // at reach: once terminal, final
	upFinal  bool          // the agent reported a terminal state
	ended    bool          // the hand-off is over (its sub-request ended)
	snap     *a2a.Task     // the latest view, reach's state in it
	msg      *a2a.Message  // the agent answered with a message, not a task
	feed     []a2a.Event
	base     int            // the feed index of feed[0]
	wake     chan struct{}  // closed and replaced when the feed grows
	pumps    int            // upstream streams being read
	failed   error          // the stream broke before a task came
	history  []*a2a.Message // the first message, for a task reach makes itself
	late     map[a2a.TaskState]bool
	wantStop string // a cancel came before the task's id: its reason
	wantNow  bool   // and one of those stops isolated: not waiting for the agent
	stopSent bool   // CancelTask was sent to the agent
	updated  time.Time
	chunks   map[a2a.ArtifactID]*redact.Stream // artifacts streamed in chunks: the end of their text held back (joinChunks)
	arts     artIndex                          // snap's artifacts by id (addArtifact)
	held     int64                             // the bytes of snap's artifacts and messages (sizeOf), bounded by Options.MaxTaskBytes
	fed      int64                             // the bytes of the feed's events, bounded likewise
	overgrew bool                              // failed at reach for its size (overflow): GetTask answers from reach's record
	// round, set while a further message's round runs (resume), tells
	// the loop guard what the round came back with (answer): called once
	// the task stops again, before the caller can see it (apply), so that
	// the caller's next message is judged with it.
	round func(answer string, failed bool)
	// rounds counts the messages sent to the task (resume): a stream of
	// an earlier round that ends after a later round began has not lost
	// the task (pump).
	rounds int
	// waits is rounds+1 once the round's wait for the caller is bounded
	// (awaitCaller), so that it is bounded once a round.
	waits int
	asked time.Time // when the agent last said the task waits for its caller
	// counted is held+fed as the registry's total has it (account); -1
	// before the task is registered, -2 once it is forgotten: not counted.
	counted atomic.Int64
	// With a store (Options.Tasks), a state change is shown to no one
	// before a view that holds it is stored (persist): a caller that
	// learned a task's id, or its state, finds it after a kill -9.
	// changes counts the state changes settle made, kept those a
	// stored view holds; the listeners read the feed up to shown, the
	// events after it wait for the store.
	changes, kept, shown int

	persistMu sync.Mutex // one write of the task to the store at a time, the latest view each

	inboxes  []*inbox      // the events each upstream stream read and not yet applied (pump)
	stopDone chan struct{} // made when a stop of the task begins, closed once it settled it (cancel)
}

func newTask(g *Gateway, a *agent, owner Owner) *task {
	t := &task{g: g, a: a, owner: owner, created: time.Now(), wake: make(chan struct{}), updated: time.Now()}
	t.pctx, t.pcancel = context.WithCancel(g.base)
	t.counted.Store(-1)
	return t
}

// events is the feed from index from: it yields what has been appended and
// waits for more, until the feed ends (the task is final, or interrupted
// and no stream is read) or ctx ends.
func (t *task) events(ctx context.Context, from int) iter.Seq[a2a.Event] {
	return func(yield func(a2a.Event) bool) {
		for {
			t.mu.Lock()
			if from < t.base && t.kept < t.changes {
				// Fell behind a state not stored yet: wait for it.
				wake := t.wake
				t.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-wake:
				}
				continue
			}
			if from < t.base { // fell behind: the task as it stands
				from = t.base + len(t.feed)
				if t.snap != nil {
					snap := t.view()
					t.mu.Unlock()
					if !yield(snap) {
						return
					}
					continue
				}
			}
			end := max(t.shown, from) // what is stored, or needs not be
			batch := slices.Clone(t.feed[from-t.base : end-t.base])
			from = end
			over := t.over() && end == t.base+len(t.feed)
			wake := t.wake
			t.mu.Unlock()
			for _, ev := range batch {
				if !yield(ev) {
					return
				}
				if final(ev) {
					return
				}
			}
			if over {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
		}
	}
}

// final reports whether ev ends a listener's stream: a message answer, a
// terminal or interrupted state.
func final(ev a2a.Event) bool {
	switch e := ev.(type) {
	case *a2a.Message:
		return true
	case *a2a.Task:
		return stops(e.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		return stops(e.Status.State)
	}
	return false
}

// stops reports whether a state ends a send: terminal, or waiting for the
// caller.
func stops(s a2a.TaskState) bool {
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// over reports whether the feed will not grow for a listener (t.mu held).
func (t *task) over() bool {
	return t.msg != nil || t.state.Terminal() || (t.pumps == 0 && (t.failed != nil || stops(t.state)))
}

// push appends an event to the feed and wakes the listeners (t.mu held).
// The feed is bounded in events and in bytes: the oldest go first.
func (t *task) push(ev a2a.Event) {
	t.feed = append(t.feed, ev)
	t.fed += sizeOf(ev)
	n := 0
	for len(t.feed)-n > maxFeed || t.fed > t.g.opts.MaxTaskBytes && len(t.feed)-n > 1 {
		t.fed -= sizeOf(t.feed[n])
		n++
	}
	if n > 0 {
		clear(t.feed[:n])
		t.feed = t.feed[n:]
		t.base += n
	}
	if t.kept == t.changes {
		t.shown = t.base + len(t.feed)
	}
	t.updated = time.Now()
	close(t.wake)
	t.wake = make(chan struct{})
	t.account()
}

// lockStored locks t.mu once every state change the task has made is
// stored (persist), so that what the caller reads of it survives a kill.
func (t *task) lockStored() {
	t.mu.Lock()
	for t.kept < t.changes {
		wake := t.wake
		t.mu.Unlock()
		<-wake // persist wakes it, stored or not, within its timeout
		t.mu.Lock()
	}
}

// account brings the registry's total of the bytes all tasks hold up to
// date with what t holds (t.mu held), once t is registered.
func (t *task) account() {
	now := t.held + t.fed
	for {
		old := t.counted.Load()
		if old < 0 || old == now {
			return
		}
		if t.counted.CompareAndSwap(old, now) {
			t.g.tasks.grew(now - old)
			return
		}
	}
}

// position is where a new listener starts: the end of the feed.
func (t *task) position() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.base + len(t.feed)
}

// view is a copy of the task as reach shows it (t.mu held).
func (t *task) view() *a2a.Task {
	if t.snap == nil {
		return nil
	}
	c := *t.snap
	c.Status.State = t.state
	c.History = slices.Clone(c.History)
	c.Artifacts = slices.Clone(c.Artifacts)
	return &c
}

// snapshot is view under the lock, once the view's state is stored.
func (t *task) snapshot() *a2a.Task {
	t.lockStored()
	defer t.mu.Unlock()
	return t.view()
}

// wait blocks until the send started at feed index from has an answer:
// the task once it stops (or, with immediate, once it exists), or the
// agent's message.
func (t *task) wait(ctx context.Context, from int, immediate bool) (a2a.SendMessageResult, error) {
	for ev := range t.events(ctx, from) {
		if m, ok := ev.(*a2a.Message); ok {
			return m, nil
		}
		if _, ok := ev.(*a2a.Task); ok && immediate {
			break
		}
	}
	t.lockStored()
	defer t.mu.Unlock()
	if t.msg != nil {
		return t.msg, nil
	}
	if v := t.view(); v != nil {
		return v, nil
	}
	return nil, context.Cause(ctx)
}

// pump reads one upstream stream into the task, that of the message
// round (0 the first, t.rounds as resume counts them). It runs in the
// background, detached from the caller: a task goes on whether or not
// anyone listens, and reach follows it to keep its state and the budgets
// right.
func (t *task) pump(c *a2aclient.Client, streaming bool, req *a2a.SendMessageRequest, out func(context.Context) context.Context, round int) {
	defer func() {
		t.mu.Lock()
		t.pumps--
		t.wakeLocked()
		t.mu.Unlock()
	}()
	ctx := out(t.pctx)
	if !streaming {
		t.poll(ctx, c, req, out)
		return
	}
	// The stream is read on a goroutine of its own into an inbox, and
	// applied here in order: what apply does after an event (the store
	// write, the audit) does not hold the reading back, and a stop finds
	// what the agent sent before it read (cancel, keepSent).
	in := newInbox(t.g.reads)
	t.mu.Lock()
	t.inboxes = append(t.inboxes, in)
	t.mu.Unlock()
	read := make(chan struct{})
	defer func() {
		<-read
		t.mu.Lock()
		t.inboxes = slices.DeleteFunc(t.inboxes, func(x *inbox) bool { return x == in })
		t.mu.Unlock()
	}()
	go func() {
		defer close(read)
		defer in.end()
		for ev, err := range c.SendStreamingMessage(ctx, req) {
			if !in.put(ctx, inboxItem{ev, err}, t.g.opts.MaxTaskBytes, t.g.reads) || err != nil {
				return
			}
		}
	}()
	for {
		it, ok := in.take()
		if !ok {
			break
		}
		if it.err != nil {
			t.mu.Lock()
			stale := t.rounds != round
			t.mu.Unlock()
			in.done()
			if stale {
				// A later round's message was sent: its own stream follows
				// the task, and this one breaking loses nothing. (The A2A
				// JS SDK keeps a stream open at TASK_STATE_AUTH_REQUIRED,
				// for credentials given out of band, and breaks it when
				// the caller's answer, a new message, starts the task
				// again on the same event bus.)
				return
			}
			t.broken(it.err)
			return
		}
		t.apply(it.ev)
		in.done()
	}
	t.streamEnded(round)
}

// streamEnded fails the task when the stream of message round ended with
// the task still working. A later round's message set the task working
// again: its own stream follows it, and this one's end loses nothing (it
// failed the task when it came after the next message was sent).
func (t *task) streamEnded(round int) {
	t.mu.Lock()
	open := t.snap != nil && !t.state.Terminal() && !stops(t.state) && t.rounds == round
	t.mu.Unlock()
	if open {
		t.broken(errors.New("the agent ended its stream while the task was still working"))
	}
}

// poll follows an agent that does not stream: the send returns at once,
// and GetTask until the task stops.
func (t *task) poll(ctx context.Context, c *a2aclient.Client, req *a2a.SendMessageRequest, out func(context.Context) context.Context) {
	r := *req
	cfg := a2a.SendMessageConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	cfg.ReturnImmediately = true
	r.Config = &cfg
	// Each answer is one task (or message), read to the bound of a task.
	res, err := c.SendMessage(t.g.taskCap(ctx), &r)
	if err != nil {
		t.broken(err)
		return
	}
	t.apply(res)
	tk, ok := res.(*a2a.Task)
	if !ok {
		return
	}
	for delay := 100 * time.Millisecond; ; delay = min(delay*2, 2*time.Second) {
		t.mu.Lock()
		done := stops(t.state) && t.upFinal || t.state.Terminal()
		t.mu.Unlock()
		if done || stops(tk.Status.State) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		tk, err = c.GetTask(t.g.taskCap(gctx), &a2a.GetTaskRequest{ID: tk.ID})
		cancel()
		if errors.Is(err, errTaskTooLarge) {
			t.overread()
			return
		}
		if err != nil {
			t.broken(err)
			return
		}
		t.apply(tk)
	}
}

func (t *task) wakeLocked() {
	close(t.wake)
	t.wake = make(chan struct{})
}

// apply folds one upstream event into the task.
func (t *task) apply(ev a2a.Event) {
	tidy(ev)
	t.mu.Lock()
	cx := t.ctxID
	t.mu.Unlock()
	toCaller(ev, cx) // the caller's context id, never the agent's
	var before *a2a.TaskArtifactUpdateEvent
	if e, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
		t.mu.Lock()
		before = t.joinChunks(e)
		t.mu.Unlock()
	}
	t.g.mask(ev)
	var after []func()
	t.mu.Lock()
	pos := t.base + len(t.feed)
	switch e := ev.(type) {
	case *a2a.Message:
		if t.id == "" && t.msg == nil && sizeOf(e) > t.g.opts.MaxTaskBytes {
			// An answer over the bound whole, as a task's (below): the
			// send gets a failed task of reach's, not the message.
			t.upFinal = true // a message is the agent's last word: no task to cancel there
			t.id = newTaskID()
			if t.ctxID = e.ContextID; t.ctxID == "" && len(t.history) > 0 {
				t.ctxID = t.history[0].ContextID
			}
			if t.ctxID == "" {
				t.ctxID = a2a.NewContextID()
			}
			t.snap = &a2a.Task{ID: t.id, ContextID: t.ctxID, Status: a2a.TaskStatus{State: t.state}}
			t.g.tasks.add(t)
			t.overflow(&after, true)
			break
		}
		if t.id == "" && t.msg == nil {
			t.msg = e
			t.push(e)
			after = append(after, t.finish(textOf(e.Parts)))
		}
	case *a2a.Task:
		if t.id == "" {
			if t.g.tasks.taken(t.a.cfg.Name, e.ID) || t.stored(e.ID) {
				t.takenID(e.ID, &after)
				break
			}
			t.id = e.ID
			if t.ctxID == "" {
				t.ctxID = e.ContextID
			}
			t.g.tasks.add(t)
			if t.wantStop != "" {
				// A stop came before the agent gave the task's id: it is
				// told now, and what it sends until its own end of the
				// task was sent before it could know of the stop, so it is
				// kept as for a stop after the id (cancel). Not here: this
				// is the stream's applier, which applies it; on a
				// goroutine of its own, a stop of the task meanwhile
				// waiting for it (stopDone). An isolating one did not
				// wait: the task is settled at once. Before, it was
				// settled as soon as its id came, and what the agent sent
				// after it dropped (TestStopBeforeTaskIDKeepsWhatAgentSent).
				reason, wait := t.wantStop, !t.wantNow
				if !wait {
					after = append(after, func() {
						if t.markCanceledNow(reason) {
							t.cancelUpstream(reason)
						}
					})
				} else {
					done := make(chan struct{})
					t.stopDone = done
					after = append(after, func() {
						t.g.background(func() { t.settleStop(reason, true, done) })
					})
				}
			}
		}
		if e.ID != t.id {
			break
		}
		prev := t.state
		t.upFinal = t.upFinal || e.Status.State.Terminal()
		status := e.Status
		if status.State == a2a.TaskStateUnspecified && t.snap == nil {
			// A task the agent made but gave no state (or
			// TASK_STATE_UNSPECIFIED): it exists, acknowledged, and
			// nothing says it is being worked on, which is
			// TASK_STATE_SUBMITTED in the A2A spec's words. A state of
			// its own is what gets it stored before the caller sees it.
			status.State = a2a.TaskStateSubmitted
		}
		if !t.state.Terminal() && sizeOf(e) > t.g.opts.MaxTaskBytes {
			// Over the bound whole, even the agent's final state: kept
			// not at all.
			first := t.snap == nil
			t.snap = &a2a.Task{ID: e.ID, ContextID: e.ContextID, Status: a2a.TaskStatus{State: t.state}}
			t.overflow(&after, first)
			break
		}
		st, fresh := t.settle(status, &after)
		if !fresh {
			break
		}
		// The task is passed on when it is new or its state changed: the
		// task a further message's stream begins with repeats what the
		// caller knows (input required), and would end its send at once.
		first := t.snap == nil
		c := *e
		c.Status.State = st
		t.snap = &c
		t.held = sizeOf(&c)
		if first || prev != st {
			t.push(t.view())
		}
	case *a2a.TaskStatusUpdateEvent:
		if t.snap == nil || e.TaskID != t.id {
			break
		}
		t.upFinal = t.upFinal || e.Status.State.Terminal()
		if e.Status.Message != t.snap.Status.Message && !t.state.Terminal() &&
			t.held+messageSize(e.Status.Message) > t.g.opts.MaxTaskBytes {
			// Over the bound with its message, even the agent's final
			// state (which the check below, after settle, lets by).
			t.overflow(&after, false)
			break
		}
		st, fresh := t.settle(e.Status, &after)
		if !fresh {
			break
		}
		if m := t.snap.Status.Message; m != nil && e.Status.Message != nil && m != e.Status.Message {
			t.snap.History = append(t.snap.History, m)
		}
		if e.Status.Message != t.snap.Status.Message {
			t.held += messageSize(e.Status.Message)
		}
		t.snap.Status = e.Status
		t.snap.Status.State = st
		c := *e
		c.Status.State = st
		t.push(&c)
	case *a2a.TaskArtifactUpdateEvent:
		if t.snap == nil || e.TaskID != t.id || t.state.Terminal() || e.Artifact == nil {
			break
		}
		if before != nil {
			t.held += addArtifact(t.snap, &t.arts, before)
			t.push(before)
		}
		t.held += addArtifact(t.snap, &t.arts, e)
		t.push(e)
	}
	if t.held > t.g.opts.MaxTaskBytes && t.snap != nil && !t.state.Terminal() {
		t.overflow(&after, false)
	}
	if t.round != nil && t.base+len(t.feed) > pos && stops(t.state) {
		// The round's end is in the feed: the loop guard learns it
		// before the caller can read it (t.mu held) and send again.
		done := t.round
		t.round = nil
		done(t.answerLocked())
	}
	t.account()
	t.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// settle takes a state the agent reports, or reach decides (t.mu held). Before reach's state
// is terminal it becomes reach's state; after, it is only recorded as late
// (once per state), and fresh is false: the event is not passed on.
func (t *task) settle(s a2a.TaskStatus, after *[]func()) (st a2a.TaskState, fresh bool) {
	if t.state.Terminal() {
		if s.State != t.state && s.State.Terminal() && !t.late[s.State] {
			if t.late == nil {
				t.late = map[a2a.TaskState]bool{}
			}
			t.late[s.State] = true
			msg := fmt.Sprintf("the agent reported %s after reach had settled the task as %s; it stays %s", s.State, t.state, t.state)
			*after = append(*after, t.auditFn("late", t.state, msg))
		}
		return t.state, false
	}
	if s.State == a2a.TaskStateUnspecified {
		return t.state, true
	}
	if s.State != t.state {
		if stops(s.State) {
			t.flushChunks()
		}
		t.state = s.State
		t.final.Store(s.State.Terminal())
		if t.g.opts.Tasks != nil {
			t.changes++ // shown once stored
		}
		*after = append(*after, t.persist)
		*after = append(*after, t.auditFn("state", s.State, textOfMessage(s.Message)))
		if s.State.Terminal() {
			v := verdict(s.State, s.Message, t.snap)
			*after = append(*after, t.finish(v))
			t.note(v)
		} else {
			t.note("")
		}
	}
	if t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired {
		// The wait counts from the agent's last word that it waits, and
		// is bounded once a round whether or not the state changed: an
		// agent may answer a message by asking again with no working in
		// between (and an agent continuing a task may first show it as it
		// stood, still waiting, then work, then ask again).
		t.asked = time.Now()
		if t.waits != t.rounds+1 {
			t.waits = t.rounds + 1
			t.awaitCaller()
		}
	} else {
		t.waits = 0 // working again: its next wait is bounded anew
	}
	return t.state, true
}

// rearm bounds the wait of a task that still waits for its caller after
// round, the round a message to it began, ended with no word of the agent
// that it waits (t.mu held): the agent refused the message (its send
// failed, no event) or was not reached. The round let the bound of the
// question it answered go (awaitCaller's check ends on a new round), and
// nothing else would bound the task again.
func (t *task) rearm(round int) {
	if t.rounds != round || t.ended || t.waits == t.rounds+1 ||
		(t.state != a2a.TaskStateInputRequired && t.state != a2a.TaskStateAuthRequired) {
		return
	}
	t.asked = time.Now()
	t.waits = t.rounds + 1
	t.awaitCaller()
}

// awaitCaller bounds the wait of a task that has just begun waiting for
// its caller (t.mu held): if no message to it has come (no round begun)
// and it still waits after Options.InputWait, its hand-off is stopped,
// which cancels the task at reach and at the agent, saying why.
func (t *task) awaitCaller() {
	d := t.g.opts.InputWait
	if d <= 0 || t.req == nil {
		return
	}
	round, sub := t.rounds, t.req
	var check func()
	check = func() {
		t.mu.Lock()
		waiting := t.rounds == round && (t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired) && !t.ended
		left := d - time.Since(t.asked)
		id, state := t.id, t.state
		t.mu.Unlock()
		switch {
		case !waiting:
			return
		case left > 0: // it worked and asked again since
			time.AfterFunc(left, check)
			return
		}
		what := "input"
		if state == a2a.TaskStateAuthRequired {
			what = "authorization"
		}
		sub.Stop(reach.Cancel, "reach", fmt.Sprintf("task %s of agent %s waited %v for %s and no message came "+
			"(a task waiting for its caller holds its request and a slot of the caller's running tasks); "+
			"start a new task, and answer within %v", id, t.a.cfg.Name, d, what, d))
	}
	time.AfterFunc(d, check)
}

// note shows the task and its state on the hand-off's delegate frame, for
// the graph and the UI (t.mu held).
func (t *task) note(verdict string) {
	if t.frame == nil || t.id == "" {
		return
	}
	s := fmt.Sprintf("task %s %s", t.id, strings.ToLower(strings.TrimPrefix(string(t.state), "TASK_STATE_")))
	if verdict != "" {
		s += ": " + verdict
	}
	t.frame.SetSummary(s)
}

// finish ends the hand-off with the agent's verdict (t.mu held), so that
// whoever sees the task final sees its hand-off over; it returns what must
// run after the lock is released.
func (t *task) finish(verdict string) func() {
	if t.ended {
		return func() {}
	}
	t.ended = true
	if t.req != nil {
		t.req.EndWith(verdict)
	}
	if t.unhook != nil {
		t.unhook()
	}
	release, sub := t.release, t.req
	t.release, t.unhook = nil, nil
	return func() {
		if release != nil {
			release()
		}
		if c := stoppedItself(sub); c != nil {
			if e, ok := t.g.opts.Link.(HandoffEnder); ok {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				e.EndStoppedHandoff(ctx, sub.Parent(), *c)
				cancel()
			}
		}
		t.g.live.done(t) // its slot holds it no longer
		// Late states are read for a while, then the stream is let go.
		time.AfterFunc(t.g.opts.Late, t.pcancel)
	}
}

// stoppedItself returns the cause of a hand-off stopped by a stop of its
// own (through the API, its budget), not by its caller's, nor by its
// client's CancelTask (the client may go on in its request); nil
// otherwise.
func stoppedItself(sub *reach.Request) *reach.Cause {
	if sub == nil {
		return nil
	}
	if c := sub.StopCause(); c != nil && c.Request == sub.ID() && c.By != "a2a" && sub.State() != reach.RequestInterrupted {
		return c
	}
	return nil
}

// answer is what a round of the task came back with, for the loop guard:
// the agent's answer once the task stopped (final, or waiting for input
// again: then said as a rejection, "not done, needs input: " and its
// question), or failed when it did not stop, or failed or was canceled.
func (t *task) answer() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answerLocked()
}

// answerLocked is answer with t.mu held.
func (t *task) answerLocked() (string, bool) {
	if t.snap == nil || !stops(t.state) || t.state == a2a.TaskStateFailed || t.state == a2a.TaskStateCanceled {
		return "", true
	}
	v := verdict(t.state, t.snap.Status.Message, t.snap)
	if t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired {
		// The round did not get the task done: to the loop guard it
		// ended in a rejection, so that answers reworded round after
		// round to the same question are the loop they are.
		v = "not done, needs input: " + v
	}
	return v, false
}

// reject settles the task as rejected at reach, a guard having refused a
// message to it (err, said in text), and cancels it at the agent: the
// hand-off ends with the refusal as its verdict.
func (t *task) reject(err error, text string) {
	var after []func()
	t.mu.Lock()
	if t.state.Terminal() || t.id == "" || t.snap == nil {
		t.mu.Unlock()
		return
	}
	msg := agentText(t.id, t.ctxID, text)
	if re, ok := errors.AsType[*reach.Error](err); ok {
		msg.SetMeta(MetaRefusal, map[string]any{"guard": re.Guard, "type": re.Type, "code": re.Code})
	}
	st, _ := t.settle(a2a.TaskStatus{State: a2a.TaskStateRejected, Message: msg}, &after)
	t.snap.Status = a2a.TaskStatus{State: st, Message: msg, Timestamp: now()}
	t.push(statusEvent(t.id, t.ctxID, st, msg))
	upstream := !t.upFinal && !t.stopSent
	t.mu.Unlock()
	for _, f := range after {
		f()
	}
	if upstream {
		t.g.background(func() { t.cancelUpstream("a message to it was refused") })
	}
}

// broken records a stream that failed: before the first event the send
// fails; after, the task fails at reach unless it had stopped already.
func (t *task) broken(err error) {
	if red := t.g.opts.Redactor; red != nil && err != nil {
		err = errors.New(red.RedactString(err.Error())) // an agent's error may echo what it was given
	}
	var after []func()
	t.mu.Lock()
	switch {
	case t.pctx.Err() != nil: // let go on purpose
	case t.snap == nil && t.msg == nil:
		// No task came: reach answers with a failed task of its own, so
		// that the caller gets a task it can read, as for a refusal.
		t.failed = err
		t.id = newTaskID()
		if t.ctxID = t.history[0].ContextID; t.ctxID == "" {
			t.ctxID = a2a.NewContextID()
		}
		msg := fmt.Sprintf("reach could not hand this message to agent %s: %v. Try again later, or do this step another way.", t.a.cfg.Name, err)
		st, _ := t.settle(a2a.TaskStatus{State: a2a.TaskStateFailed, Message: agentText(t.id, t.ctxID, msg)}, &after)
		t.snap = &a2a.Task{ID: t.id, ContextID: t.ctxID, History: t.history,
			Status: a2a.TaskStatus{State: st, Message: agentText(t.id, t.ctxID, msg), Timestamp: now()}}
		t.g.tasks.add(t)
		t.push(t.view())
	case !stops(t.state):
		msg := fmt.Sprintf("reach lost agent %s's task: %v. The agent may still be working on it; reach canceled it and counts nothing more of it.", t.a.cfg.Name, err)
		st, _ := t.settle(a2a.TaskStatus{State: a2a.TaskStateFailed, Message: agentText(t.id, t.ctxID, msg)}, &after)
		t.snap.Status = a2a.TaskStatus{State: st, Message: agentText(t.id, t.ctxID, msg), Timestamp: now()}
		t.push(statusEvent(t.id, t.ctxID, st, t.snap.Status.Message))
		id := t.id
		if id != "" && !t.stopSent {
			after = append(after, func() { t.cancelUpstream("reach lost the task's stream") })
		}
	}
	t.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// takenID refuses a new task whose id the agent gave another task reach
// follows (t.mu held), here or, by the store, on another instance or
// before a restart: a hostile agent that answered a caller's message
// with another caller's task id would have taken that task from its
// caller. The first task keeps its id; this one fails at reach under an
// id of reach's, and the agent's stream is let go, with no CancelTask
// (which would cancel the other task).
func (t *task) takenID(id a2a.TaskID, after *[]func()) {
	t.id = newTaskID()
	if t.ctxID = t.history[0].ContextID; t.ctxID == "" {
		t.ctxID = a2a.NewContextID()
	}
	t.stopSent = true
	msg := agentText(t.id, t.ctxID, fmt.Sprintf("agent %s answered this message with task id %s, which it already gave another task that reach follows; reach does not pass on a task that takes another's id, and let this one go. Tell the agent's operator, or do this step another way.", t.a.cfg.Name, id))
	st, _ := t.settle(a2a.TaskStatus{State: a2a.TaskStateFailed, Message: msg}, after)
	t.snap = &a2a.Task{ID: t.id, ContextID: t.ctxID, History: t.history, Status: a2a.TaskStatus{State: st, Message: msg, Timestamp: now()}}
	t.g.tasks.add(t)
	t.push(t.view())
	*after = append(*after, t.pcancel)
}

// stored reports whether the store holds a task of t's agent with id: one
// another instance follows, or one from before a restart (a new task's id
// is new). The store's record would otherwise be overwritten, its owner
// too. A store that cannot tell is taken to hold none.
func (t *task) stored(id a2a.TaskID) bool {
	ts := t.g.opts.Tasks
	if ts == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(t.g.base, 5*time.Second)
	defer cancel()
	rec, err := ts.GetTask(ctx, t.a.cfg.Name, string(id))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.g.log.Warn("a2a: could not tell whether a new task's id is stored already", "agent", t.a.cfg.Name, "task", id, "err", err)
	}
	return err == nil && rec != nil
}

// stopped runs when the hand-off's sub-request ends. A stop (a cancel, a
// stop of a request above it, a spent budget, its wall clock) cancels the
// task at reach and at the agent; an ending reach made itself does nothing.
func (t *task) stopped() {
	cause := context.Cause(t.req.Context())
	if se, ok := errors.AsType[*reach.StopError](cause); ok && se.Cause.Request != t.req.ID() && t.req.State() == reach.RequestRunning {
		// A stop of a request above cancels this one's context before it
		// marks this one stopped (on another instance, after a write to
		// the store): the hand-off ending the task ends meanwhile would
		// end it completed. Marked now, with the stop's cause, as the
		// stop would (it then finds it stopped already). Not a hand-off
		// that ended (End cancels its context with a cause of its own).
		// Its record (and its end's) waits on the stop above being
		// stored, which then makes it: a stop is stored top-down.
		t.req.StopWith(se.Cause)
	}
	reason := causeText(cause)
	se, _ := errors.AsType[*reach.StopError](cause)
	t.cancel(reason, se == nil || se.Cause.Mode != reach.Isolate)
}

// cancel settles the task as canceled at reach and asks the agent to
// cancel it too. It tells the agent at once, and keeps what the agent's
// stream brings until the agent ends the task (keepSent; with wait false,
// an isolating stop, only what was read before it): the events the agent
// sent before it had the cancel, in transit when the stop came, are kept
// and passed on before reach's end. The audit says what was kept (kind
// "kept"). Concurrent stops of one task are one: a later one waits for
// the first.
func (t *task) cancel(reason string, wait bool) {
	t.mu.Lock()
	for t.stopDone != nil {
		ch := t.stopDone
		t.mu.Unlock()
		<-ch
		t.mu.Lock()
		if t.stopDone == ch {
			// Settled by the stop waited for (or one begun when the
			// task's id came, waited for next).
			t.mu.Unlock()
			if t.markCanceledNow(reason) {
				t.cancelUpstream(reason)
			}
			return
		}
	}
	done := make(chan struct{})
	t.stopDone = done
	t.wantNow = t.wantNow || !wait // if the task's id has not come yet (settleCanceled)
	t.mu.Unlock()
	t.settleStop(reason, wait, done)
}

// settleStop is cancel's work once it is the task's stop (done its
// stopDone, closed once it returns).
func (t *task) settleStop(reason string, wait bool, done chan struct{}) {
	defer close(done)
	t.mu.Lock()
	open := t.id != "" && !t.upFinal && t.msg == nil && t.failed == nil && !t.state.Terminal()
	t.mu.Unlock()
	// The streams are marked before the agent is told: its answer to the
	// cancel, however soon it is read, waits for reach's canceled, which
	// carries the stop's reason. Told first, the agent's canceled could be
	// read and applied before the mark, as a loaded machine schedules it:
	// the task ended on the agent's word, and the stop, finding it ended,
	// said nothing (TestStopSaysLastWhenAgentAnswersFirst).
	keep := t.markSent()
	if open && wait {
		t.g.background(func() { t.cancelUpstream(reason) })
		if t.g.stopTold != nil {
			t.g.stopTold(t)
		}
	}
	release, said := keep(open && wait)
	tell, settled := t.settleCanceled(reason)
	release()
	if settled {
		if s := said(); s != "" {
			t.audit("kept", a2a.TaskStateCanceled, s)
		}
	}
	if tell {
		t.cancelUpstream(reason)
	}
}

// markCanceledNow settles the task as canceled at reach, unless it ended
// otherwise, and reports whether the agent must still be told. A task
// whose id has not come yet is told as soon as it comes.
func (t *task) markCanceledNow(reason string) bool {
	tell, _ := t.settleCanceled(reason)
	return tell
}

// settleCanceled is markCanceledNow, and reports too whether it settled
// the task (it was not final).
func (t *task) settleCanceled(reason string) (tell, settled bool) {
	var after []func()
	defer func() {
		for _, f := range after {
			f()
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.upFinal || t.msg != nil || t.failed != nil {
		return false, false
	}
	if t.id == "" {
		t.wantStop = reason
		return false, false
	}
	if !t.state.Terminal() {
		settled = true
		msg := agentText(t.id, t.ctxID, canceledText(reason))
		st, _ := t.settle(a2a.TaskStatus{State: a2a.TaskStateCanceled, Message: msg}, &after)
		if t.snap != nil {
			t.snap.Status = a2a.TaskStatus{State: st, Message: msg, Timestamp: now()}
			t.push(statusEvent(t.id, t.ctxID, st, msg))
		}
	}
	return !t.stopSent, settled
}

// cancelUpstream sends CancelTask to the agent, once. An agent that does
// not confirm in time, or does not honour it, has the hand-off's subtree
// isolated at reach: every later message, tool call and model turn of it
// is refused, and its stream is let go.
func (t *task) cancelUpstream(reason string) {
	t.mu.Lock()
	if t.stopSent || t.id == "" {
		t.mu.Unlock()
		return
	}
	t.stopSent = true
	id := t.id
	t.mu.Unlock()
	c, _, err := t.a.ready(t.g.base)
	var res *a2a.Task
	if err == nil {
		ctx, cancel := context.WithTimeout(t.g.base, t.g.opts.CancelTimeout)
		res, err = c.CancelTask(t.out(t.g.taskCap(ctx)), &a2a.CancelTaskRequest{ID: id})
		cancel()
	}
	switch {
	case err == nil && res.Status.State == a2a.TaskStateCanceled:
		t.audit("cancel", a2a.TaskStateCanceled, fmt.Sprintf("agent %s confirmed the cancel (%s)", t.a.cfg.Name, reason))
		return
	case err == nil:
		err = fmt.Errorf("it answered %s", res.Status.State)
	case t.g.base.Err() != nil:
		return // the gateway is closing
	}
	msg := fmt.Sprintf("agent %s did not confirm the cancel of task %s (%v); reach isolated its subtree", t.a.cfg.Name, id, err)
	if t.req != nil {
		t.req.Stop(reach.Isolate, "a2a", msg)
	}
	t.audit("isolate", a2a.TaskStateCanceled, msg)
	t.pcancel()
}

// out adds reach's context to an outgoing call: traceparent and baggage.
func (t *task) out(ctx context.Context) context.Context {
	if t.req == nil {
		return ctx
	}
	return a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{
		"traceparent": {handoffTraceparent(t.req, t.frame)},
		"baggage":     {"reach.request=" + t.req.ID()},
	})
}

func (t *task) auditFn(kind string, st a2a.TaskState, msg string) func() {
	return func() { t.audit(kind, st, msg) }
}

func (t *task) audit(kind string, st a2a.TaskState, msg string) {
	if t.g.opts.Audit == nil {
		return
	}
	t.mu.Lock()
	e := &TaskEvent{Time: time.Now(), Kind: kind, Agent: t.a.cfg.Name, Task: string(t.id), Context: t.ctxID,
		Owner: t.owner, State: string(st), Message: msg}
	t.mu.Unlock()
	if r := cmp.Or(t.req, t.caller); r != nil {
		e.Request, e.Root = r.ID(), r.Root().ID()
	}
	if t.frame != nil {
		e.Frame = t.frame.ID
	}
	t.g.record(e)
}

// causeText says why a context ended, for a task's status message.
func causeText(err error) string {
	if se, ok := errors.AsType[*reach.StopError](err); ok {
		c := se.Cause
		if c.Shutdown {
			return fmt.Sprintf(shutdownCause+", which ended request %s while this task ran", c.Request)
		}
		if c.Budget != "" {
			return fmt.Sprintf("the %s budget of request %s is spent (%s)", c.Budget, c.Request, c.Reason)
		}
		return fmt.Sprintf("request %s was stopped (%s) by %s: %s", c.Request, c.Mode, c.By, c.Reason)
	}
	if err == nil {
		return "its request ended"
	}
	return err.Error()
}

// shutdownCause begins the reason of a hand-off ended by the gateway
// shutting down (or restarting): no one stopped it (fault.Cause.Shutdown).
const shutdownCause = "the gateway is shutting down (or restarting)"

// canceledText is the status text of a task reach canceled for reason: what
// happened and what to do. A stop's work is over: the client reports it
// rather than hand it over again. The gateway's shutdown stopped no one's
// work: as the MCP cut_by_shutdown says, the client sends it again once
// the gateway is back, and checks a write first.
func canceledText(reason string) string {
	if strings.HasPrefix(reason, shutdownCause) {
		return "reach canceled this task: " + reason + "; no one stopped the work, and a write it made may have taken effect. " +
			"It takes no more messages: send the work again as a new task in a moment, once the gateway is back (or through another instance of it), " +
			"and before repeating a write, check whether it took effect."
	}
	return "reach canceled this task: " + reason + ". It takes no more messages, and the work it was " +
		"part of is stopped: report what was done so far and that it was stopped, rather than handing it over again."
}

// verdict is what a task came to, for the loop guard: its final message,
// or its last artifact's text, or its state.
func verdict(st a2a.TaskState, m *a2a.Message, snap *a2a.Task) string {
	if s := textOfMessage(m); s != "" {
		return s
	}
	if snap != nil && len(snap.Artifacts) > 0 {
		if s := textOf(snap.Artifacts[len(snap.Artifacts)-1].Parts); s != "" {
			return s
		}
	}
	return string(st)
}

// overread fails the task at reach for its size when a polled agent's
// answer (its whole task) was larger than reach reads of a task: as
// overflow, the agent told to cancel.
func (t *task) overread() {
	var after []func()
	t.mu.Lock()
	if t.snap != nil && !t.state.Terminal() {
		t.overflow(&after, false)
	}
	t.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// tidy drops the null entries of a task an agent sent (its history's and
// artifacts': `[null]` decodes as a nil pointer): reach keeps and relays
// none of them, and reads no field of one. Before, a null artifact left in
// a task's view was read at the next artifact (addArtifact) with the
// task's lock held: the task hung for good, with its caller's send, its
// GetTask and every wait on it. A null part of a message or an artifact,
// in any event, is dropped too: passed on, it reached the caller, whose
// SDK may read each part.
func tidy(ev a2a.Event) {
	unforged(ev) // reach's metadata keys are reach's to write
	switch e := ev.(type) {
	case *a2a.Task:
		if e == nil {
			return
		}
		e.History = slices.DeleteFunc(e.History, func(m *a2a.Message) bool { return m == nil })
		e.Artifacts = slices.DeleteFunc(e.Artifacts, func(a *a2a.Artifact) bool { return a == nil })
		tidyParts(e.Status.Message)
		for _, m := range e.History {
			tidyParts(m)
		}
		for _, a := range e.Artifacts {
			a.Parts = slices.DeleteFunc(a.Parts, func(p *a2a.Part) bool { return p == nil })
		}
	case *a2a.Message:
		tidyParts(e)
	case *a2a.TaskStatusUpdateEvent:
		if e != nil {
			tidyParts(e.Status.Message)
		}
	case *a2a.TaskArtifactUpdateEvent:
		if e != nil && e.Artifact != nil {
			e.Artifact.Parts = slices.DeleteFunc(e.Artifact.Parts, func(p *a2a.Part) bool { return p == nil })
		}
	}
}

// tidyParts drops the null parts of m, if any.
func tidyParts(m *a2a.Message) {
	if m != nil {
		m.Parts = slices.DeleteFunc(m.Parts, func(p *a2a.Part) bool { return p == nil })
	}
}

// overflow fails the task at reach, its artifacts and messages having grown
// past Options.MaxTaskBytes (t.mu held): what it held is let go (the
// artifacts, the history, the feed; the caller gets the failed task), the
// agent's stream is let go and the agent told to cancel.
// A task the caller has not seen yet (first) is passed on whole, failed.
func (t *task) overflow(after *[]func(), first bool) {
	limit := t.g.opts.MaxTaskBytes
	t.overgrew = true
	t.snap.Artifacts, t.snap.History = nil, nil
	t.chunks, t.arts = nil, artIndex{}
	t.held = 0
	clear(t.feed)
	t.base += len(t.feed)
	t.feed, t.fed = nil, 0
	upstream := !t.upFinal && !t.stopSent
	did := "failed the task and let go of what the agent had sent"
	if upstream {
		did = "failed the task, canceled it at the agent and let go of what it had sent"
	}
	text := fmt.Sprintf("agent %s's answer to this task grew over %d bytes (its artifacts and messages), the most reach keeps of a task: reach %s. Ask the agent for a shorter answer, or for a link to a file rather than its content.", t.a.cfg.Name, limit, did)
	msg := agentText(t.id, t.ctxID, text)
	st, _ := t.settle(a2a.TaskStatus{State: a2a.TaskStateFailed, Message: msg}, after)
	t.snap.Status = a2a.TaskStatus{State: st, Message: msg, Timestamp: now()}
	if first {
		t.push(t.view())
	} else {
		t.push(statusEvent(t.id, t.ctxID, st, msg))
	}
	*after = append(*after, func() {
		t.pcancel() // the stream is read no further
		if upstream {
			t.g.background(func() { t.cancelUpstream(fmt.Sprintf("its answer grew over %d bytes", limit)) })
		}
	})
}

// sizeOf is about the bytes an event holds: its parts' content, its
// metadata (the event's, its messages', artifacts' and parts'; an agent may
// put anything there), and a little for each part and message, so that
// many empty ones count too.
func sizeOf(ev a2a.Event) int64 {
	switch e := ev.(type) {
	case *a2a.Message:
		return messageSize(e)
	case *a2a.Task:
		n := messageSize(e.Status.Message) + metaSize(e.Metadata)
		for _, m := range e.History {
			n += messageSize(m)
		}
		for _, a := range e.Artifacts {
			n += artifactSize(a)
		}
		return n
	case *a2a.TaskStatusUpdateEvent:
		return messageSize(e.Status.Message) + metaSize(e.Metadata)
	case *a2a.TaskArtifactUpdateEvent:
		return artifactSize(e.Artifact) + metaSize(e.Metadata)
	}
	return 0
}

const partOverhead = 64

func messageSize(m *a2a.Message) int64 {
	if m == nil {
		return 0
	}
	n := partOverhead + partsSize(m.Parts) + metaSize(m.Metadata)
	for _, x := range m.Extensions {
		n += int64(len(x))
	}
	for _, x := range m.ReferenceTasks {
		n += int64(len(x))
	}
	return n
}

// artifactOverhead is what an artifact counts for itself, about what one
// and the event that brought it take in memory: an agent that streamed
// artifacts with no parts, each of a new id, had each count nothing, and
// reach kept them all (and scanned them all for each new one) for as long
// as it went on.
const artifactOverhead = 256

// artifactSize is what an artifact holds: its id, parts, name,
// description, extensions and metadata, and artifactOverhead.
func artifactSize(a *a2a.Artifact) int64 {
	if a == nil {
		return 0
	}
	n := artifactOverhead + int64(len(a.ID)) + partsSize(a.Parts) + int64(len(a.Name)+len(a.Description)) + metaSize(a.Metadata)
	for _, x := range a.Extensions {
		n += int64(len(x))
	}
	return n
}

func partsSize(parts a2a.ContentParts) int64 {
	var n int64
	for _, p := range parts {
		n += partOverhead
		if p == nil {
			continue
		}
		n += int64(len(p.Filename)+len(p.MediaType)) + metaSize(p.Metadata)
		switch c := p.Content.(type) {
		case a2a.Text:
			n += int64(len(c))
		case a2a.Raw:
			n += int64(len(c))
		case a2a.URL:
			n += int64(len(c))
		case a2a.Data:
			j, _ := json.Marshal(c.Value)
			n += int64(len(j))
		}
	}
	return n
}

// metaSize is the bytes of metadata, as JSON.
func metaSize(m map[string]any) int64 {
	if len(m) == 0 {
		return 0
	}
	j, _ := json.Marshal(m)
	return int64(len(j))
}

// artIndex finds an artifact of a task's view by its id in constant time.
// Each artifact of a new id was looked for among all before it
// (addArtifact): an agent streaming artifacts each of a new id had reach
// scan them all for each, quadratic in their number (some 32,000 at the
// default MaxTaskBytes, as each counts artifactOverhead).
//
// It indexes the first n artifacts of the view of; the view's artifacts
// only grow at their end (addArtifact) or are let go whole (overflow), and
// a new view is another *a2a.Task: a view other than of, or with fewer
// than n artifacts, is indexed anew, and a hit whose id differs (its
// artifacts replaced otherwise) too.
type artIndex struct {
	of *a2a.Task
	n  int
	at map[a2a.ArtifactID]int // an id's index among the first n (the last of that id)
}

// artScan is how many artifacts a view has before it is indexed: a few are
// found as fast by a scan, without a map.
const artScan = 16

// find is the index in t.Artifacts of the last artifact whose id is id, or
// -1. A nil x scans.
func (x *artIndex) find(t *a2a.Task, id a2a.ArtifactID) int {
	if x != nil && (x.of != t || len(t.Artifacts) < x.n) {
		// Another view, or its artifacts let go (each addArtifact finds
		// first: this one, after the view's artifacts were let go, sees
		// fewer than were indexed).
		x.of, x.n = t, 0
		clear(x.at)
	}
	if x == nil || len(t.Artifacts) <= artScan {
		// The newest first: a chunk is most often of the artifact streamed last.
		for i := len(t.Artifacts) - 1; i >= 0; i-- {
			if t.Artifacts[i].ID == id {
				return i
			}
		}
		return -1
	}
	if x.at == nil {
		x.at = make(map[a2a.ArtifactID]int, len(t.Artifacts))
	}
	for ; x.n < len(t.Artifacts); x.n++ {
		x.at[t.Artifacts[x.n].ID] = x.n
	}
	i, ok := x.at[id]
	if !ok {
		return -1
	}
	if t.Artifacts[i].ID != id {
		x.of = nil // replaced otherwise than addArtifact does: indexed anew
		return x.find(t, id)
	}
	return i
}

// addArtifact adds or grows an artifact of t, found by x (which may be
// nil: a scan), and returns by how many bytes (artifactSize; an appended
// chunk adds its parts only) t's artifacts grew (less than zero if a
// replaced one was larger).
func addArtifact(t *a2a.Task, x *artIndex, e *a2a.TaskArtifactUpdateEvent) int64 {
	i := x.find(t, e.Artifact.ID)
	if i < 0 {
		t.Artifacts = append(t.Artifacts, e.Artifact)
		return artifactSize(e.Artifact)
	}
	a := t.Artifacts[i]
	if e.Append {
		grew := partsSize(e.Artifact.Parts) // only the chunk's parts are kept
		// A new artifact, its parts grown in place: a view or an event
		// handed out before holds the parts it had (a slice no longer),
		// and only this artifact's newest parts are appended to. (A copy
		// of them all each chunk was quadratic: an agent streaming 20,000
		// chunks took 5 s.)
		c := *a
		c.Parts = append(a.Parts, e.Artifact.Parts...)
		t.Artifacts[i] = &c
		return grew
	}
	t.Artifacts[i] = e.Artifact
	return artifactSize(e.Artifact) - artifactSize(a)
}

func textOfMessage(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return textOf(m.Parts)
}

// textOf is the text of parts: text as is, data as JSON, files by name.
func textOf(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if p == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			b.WriteString(string(c))
		case a2a.Data:
			j, _ := json.Marshal(c.Value)
			b.Write(j)
		case a2a.URL:
			b.WriteString("[file " + string(c) + "]")
		case a2a.Raw:
			fmt.Fprintf(&b, "[file %s, %d bytes]", p.Filename, len(c))
		}
	}
	return b.String()
}

func agentText(id a2a.TaskID, ctxID, s string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(s))
	m.TaskID, m.ContextID = id, ctxID
	return m
}

func statusEvent(id a2a.TaskID, ctxID string, st a2a.TaskState, m *a2a.Message) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{TaskID: id, ContextID: ctxID, Status: a2a.TaskStatus{State: st, Message: m, Timestamp: now()}}
}

func now() *time.Time {
	t := time.Now().UTC()
	return &t
}

// handoffTraceparent is the W3C traceparent of a hand-off: the tree's trace, the
// delegate frame as the parent span.
func handoffTraceparent(r *reach.Request, f *reach.Frame) string {
	var span reach.FrameID
	if f != nil {
		span = f.ID
	}
	return traceparent.String(r.Trace(), uint64(span))
}

// registry keeps the tasks by agent and id, by context id, and by
// delegate frame.
type registry struct {
	mu  sync.Mutex
	max int
	// maxBytes bounds bytes, what all registered tasks hold together (their
	// artifacts, messages and feeds, each task's as Options.MaxTaskBytes
	// bounds it): past it the oldest ended tasks are let go (trimLocked),
	// and while the live ones alone hold more, no task is begun (over).
	maxBytes int64
	bytes    atomic.Int64
	byID     map[taskKey]*task
	byTask   map[a2a.TaskID][]*task // by id alone, for ids another agent names
	byCtx    map[string][]*task
	byFrame  map[reach.FrameID]*task
	order    []*task
}

type taskKey struct {
	agent string
	id    a2a.TaskID
}

func newRegistry(max int, maxBytes int64) *registry {
	return &registry{max: max, maxBytes: maxBytes, byID: map[taskKey]*task{}, byTask: map[a2a.TaskID][]*task{}, byCtx: map[string][]*task{},
		byFrame: map[reach.FrameID]*task{}}
}

// add registers t once its id is known (t.mu held, or t not shared yet);
// past max tasks, or maxBytes, it forgets the oldest tasks that have
// ended.
func (r *registry) add(t *task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := t.held + t.fed; t.counted.CompareAndSwap(-1, n) {
		r.bytes.Add(n)
	}
	defer r.trimLocked()
	r.byID[taskKey{t.a.cfg.Name, t.id}] = t
	r.byTask[t.id] = append(r.byTask[t.id], t)
	for _, c := range t.contexts() {
		r.byCtx[c] = append(r.byCtx[c], t)
	}
	if t.frame != nil {
		r.byFrame[t.frame.ID] = t
	}
	r.order = append(r.order, t)
	if len(r.order) <= r.max+r.max/4 {
		return
	}
	// Past max, the ended tasks go oldest first from the principals that
	// keep the most of them, down to a level that all those above it
	// share: one principal's many short tasks push out its own, not
	// another's (which GetTask and ListTasks would then lose early).
	ended := map[Owner]int{}
	for _, q := range r.order {
		if q.done() {
			ended[q.owner]++
		}
	}
	drop := fairDrop(ended, len(r.order)-r.max)
	keep := r.order[:0]
	for _, q := range r.order {
		if q.done() && drop[q.owner] > 0 {
			drop[q.owner]--
			r.forget(q)
			continue
		}
		keep = append(keep, q)
	}
	clear(r.order[len(keep):])
	r.order = keep
}

// fairDrop returns how many of each owner's ended tasks (ended) to let go
// so that excess go in all (or all of them, if fewer): those over a level
// come down to it, the level as high as lets excess go, and the owners at
// the level give one more each, in turn, for the rest.
func fairDrop[K comparable](ended map[K]int, excess int) map[K]int {
	total, top := 0, 0
	for _, n := range ended {
		total += n
		top = max(top, n)
	}
	drop := make(map[K]int, len(ended))
	if excess >= total {
		maps.Copy(drop, ended)
		return drop
	}
	above := func(level int) int { // what goes when each keeps at most level
		d := 0
		for _, n := range ended {
			d += max(0, n-level)
		}
		return d
	}
	// The highest level at which enough go: above(level) falls as level
	// rises, above(0) = total > excess.
	lo, hi := 0, top
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if above(mid) >= excess {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	level := lo
	rest := excess
	for o, n := range ended {
		if n > level+1 {
			drop[o] = n - (level + 1)
			rest -= drop[o]
		}
	}
	// Those at level+1 give one each until excess have gone.
	for o, n := range ended {
		if rest <= 0 {
			break
		}
		if n > level {
			drop[o]++
			rest--
		}
	}
	return drop
}

// grew takes in a change of what a registered task holds; past maxBytes
// it lets the oldest ended tasks go.
func (r *registry) grew(d int64) {
	if r.bytes.Add(d) > r.maxBytes && d > 0 {
		r.mu.Lock()
		r.trimLocked()
		r.mu.Unlock()
	}
}

// trimLocked forgets the oldest ended tasks until what the tasks hold is
// within maxBytes, or only live tasks are left (r.mu held).
func (r *registry) trimLocked() {
	if r.bytes.Load() <= r.maxBytes {
		return
	}
	keep := r.order[:0]
	for _, q := range r.order {
		if q.done() && r.bytes.Load() > r.maxBytes {
			r.forget(q)
			continue
		}
		keep = append(keep, q)
	}
	clear(r.order[len(keep):])
	r.order = keep
}

// over reports whether owner may begin no task: the live tasks alone hold
// more than maxBytes (the ended ones let go first) and owner's hold at
// least its share of it (maxBytes over the owners whose live tasks hold
// any), so that one principal's tasks refuse that principal, not every
// other (a principal under its share goes on; what the tasks hold then
// passes maxBytes by less than maxBytes). It returns how much the tasks
// hold, and how much owner's do.
func (r *registry) over(owner Owner) (over bool, all, mine int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trimLocked()
	all = r.bytes.Load()
	if all <= r.maxBytes {
		return false, all, 0
	}
	per := map[Owner]int64{}
	for _, q := range r.order {
		if c := q.counted.Load(); c > 0 {
			per[q.owner] += c
		}
	}
	mine = per[owner]
	return len(per) == 0 || mine >= r.maxBytes/int64(len(per)), all, mine
}

// owned tells whether the task reach holds at agent of id is another
// principal's than owner. An agent's ids are its own: another agent's of
// the same name are not looked at. (Contexts need no such check: each
// principal's are its own at the agent, upContext.)
//
// taken reports whether agent gave id to a task the registry holds.
func (r *registry) owned(agent string, id a2a.TaskID, owner Owner) (other bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.byID[taskKey{agent, id}]
	return t != nil && t.owner != owner
}

func (r *registry) taken(agent string, id a2a.TaskID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[taskKey{agent, id}] != nil
}

func (r *registry) forget(t *task) {
	if n := t.counted.Swap(-2); n > 0 {
		r.bytes.Add(-n)
	}
	delete(r.byID, taskKey{t.a.cfg.Name, t.id})
	drop := func(q *task) bool { return q == t }
	if l := slices.DeleteFunc(r.byTask[t.id], drop); len(l) > 0 {
		r.byTask[t.id] = l
	} else {
		delete(r.byTask, t.id)
	}
	for _, c := range t.contexts() {
		if l := slices.DeleteFunc(r.byCtx[c], drop); len(l) > 0 {
			r.byCtx[c] = l
		} else {
			delete(r.byCtx, c)
		}
	}
	if t.frame != nil && r.byFrame[t.frame.ID] == t {
		delete(r.byFrame, t.frame.ID)
	}
}

func (t *task) done() bool { return t.final.Load() }

// contexts are the context ids a message may name t by: the caller's, and
// the agent's (which the agent passes on when it hands work on through
// reach). Both are owner's only: a task is found by them for its owner.
func (t *task) contexts() []string {
	var out []string
	for _, c := range []string{t.ctxID, t.upCtx} {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// get returns agent's task id if owner owns it.
func (r *registry) get(agent string, id a2a.TaskID, owner Owner) *task {
	r.mu.Lock()
	t := r.byID[taskKey{agent, id}]
	r.mu.Unlock()
	if t == nil || t.owner != owner {
		return nil
	}
	return t
}

// list returns agent's tasks that owner owns, newest first.
func (r *registry) list(agent string, owner Owner) []*task {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*task
	for _, t := range slices.Backward(r.order) {
		if t.a.cfg.Name == agent && t.owner == owner {
			out = append(out, t)
		}
	}
	return out
}

// live counts agent's tasks not yet final.
func (r *registry) live(agent string, counted func(Owner) bool) int {
	r.mu.Lock()
	ts := slices.Clone(r.order)
	r.mu.Unlock()
	n := 0
	for _, t := range ts {
		if t.a.cfg.Name == agent && !t.done() && (counted == nil || counted(t.owner)) {
			n++
		}
	}
	return n
}

// caller finds the running hand-off a message comes from, without the
// caller's help: a live task of owner, of another agent than to, named by
// referenceTaskIds (if only one such task matches) or else by the context
// id (if all its matches are one hand-off).
func (r *registry) caller(owner Owner, to string, ids []a2a.TaskID, ctxID string) *task {
	r.mu.Lock()
	defer r.mu.Unlock()
	usable := func(t *task) bool {
		return t.owner == owner && t.a.cfg.Name != to && t.req != nil && t.req.State() == reach.RequestRunning
	}
	one := func(ts []*task) *task {
		var found *task
		for _, t := range ts {
			if !usable(t) {
				continue
			}
			if found != nil && found.req != t.req {
				return nil
			}
			found = t
		}
		return found
	}
	var named []*task
	for _, id := range ids {
		named = append(named, r.byTask[id]...)
	}
	if t := one(named); t != nil {
		return t
	}
	if ctxID == "" {
		return nil
	}
	return one(r.byCtx[ctxID])
}

// byFrame returns the task a delegate frame started.
func (r *registry) frame(id reach.FrameID) *task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byFrame[id]
}

// persist writes the task as it now stands to the store (Options.Tasks),
// if the gateway keeps them there.
func (t *task) persist() {
	ts := t.g.opts.Tasks
	if ts == nil {
		return
	}
	t.persistMu.Lock()
	defer t.persistMu.Unlock()
	t.mu.Lock()
	v, st, id := t.view(), t.state, t.id
	n, upto := t.changes, t.base+len(t.feed)
	t.mu.Unlock()
	if !t.g.writes.enter() {
		// The gateway closed (Close): its owner may have closed the
		// store. A state not stored is shown to no one.
		t.g.log.Warn("a2a: a task's state came after the gateway closed; it is not stored", "task", id, "state", st)
		return
	}
	defer t.g.writes.leave()
	defer t.show(n, upto) // stored or not: a store that fails holds no one for ever
	if v == nil || id == "" {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.g.log.Error("a2a: encoding a task", "task", id, "err", err)
		return
	}
	rec := &store.TaskRecord{Agent: t.a.cfg.Name, ID: string(id), Principal: t.owner.Principal, Tenant: t.owner.Tenant,
		State: string(st), Final: st.Terminal(), Data: data}
	if t.req != nil {
		rec.Request = t.req.ID()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ts.PutTask(ctx, rec); err != nil {
		t.g.log.Error("a2a: a task's state was not stored", "task", id, "state", st, "err", err)
		return
	}
	crashpoint.Reached("task.stored")
}

// show lets the listeners read the feed up to upto, a view with the
// task's first n state changes stored, and all of it once none is left
// to store.
func (t *task) show(n, upto int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kept = max(t.kept, n)
	t.shown = max(t.shown, min(upto, t.base+len(t.feed)))
	if t.kept >= t.changes {
		t.shown = t.base + len(t.feed)
	}
	t.wakeLocked()
}

// storedTask returns agent's task id as the store keeps it, if owner owns
// it (another instance ran it), or nil.
func (g *Gateway) storedTask(ctx context.Context, agent string, id a2a.TaskID, owner Owner) (*store.TaskRecord, *a2a.Task) {
	if g.opts.Tasks == nil {
		return nil, nil
	}
	rec, err := g.opts.Tasks.GetTask(ctx, agent, string(id))
	if err != nil || rec.Principal != owner.Principal || rec.Tenant != owner.Tenant {
		return nil, nil
	}
	v, err := storedView(rec)
	if err != nil {
		g.badTask(rec, err)
		return nil, nil
	}
	g.cutOff(ctx, rec, v)
	return rec, v
}

// storedView decodes a stored task without the reach/ keys an agent wrote
// in it: a row stored before reach dropped them on the way in (unforged)
// still holds them, and a caller would take them for reach's. Reach's own
// refusal, on the status message of a task it rejected, is kept (an
// agent's forged one there, in a row that old, cannot be told from it).
func storedView(rec *store.TaskRecord) (*a2a.Task, error) {
	var v a2a.Task
	if err := json.Unmarshal(rec.Data, &v); err != nil {
		return nil, err
	}
	var refusal any
	if m := v.Status.Message; m != nil && v.Status.State == a2a.TaskStateRejected {
		refusal = m.Metadata[MetaRefusal]
	}
	unforged(&v)
	if refusal != nil {
		v.Status.Message.SetMeta(MetaRefusal, refusal)
	}
	return &v, nil
}

// badTask logs a stored task that could not be read: it is answered as
// not found, and its row is kept as it is.
func (g *Gateway) badTask(rec *store.TaskRecord, err error) {
	g.log.Warn("a stored row could not be read (a disk error, a hand edit, a partial restore): it is kept in the store as it is; "+
		"inspect the row in its table, then fix or delete it by hand", "table", "tasks", "key", rec.Agent+" "+rec.ID,
		"err", err, "reach_did", "the task is answered as not found, and left out of task lists")
}

// cutOff makes the stored task v failed, in v and in the store, if it was
// stored running and its hand-off's sub-request is over (Options.Over): the
// gateway that followed its stream died with the request (a restart
// interrupted it), and nothing else will bring its end. Its caller sees it
// failed, not working for ever. The agent is not told: reach no longer has
// the task's stream, and the agent may have gone on.
func (g *Gateway) cutOff(ctx context.Context, rec *store.TaskRecord, v *a2a.Task) {
	if rec.Final || rec.Request == "" || g.opts.Over == nil || v.Status.State.Terminal() || !g.opts.Over(rec.Request) {
		return
	}
	msg := fmt.Sprintf("reach stopped following this task: its hand-off (request %s) ended without it, as when the gateway restarted while it ran. "+
		"Agent %s may have gone on with it; send the task again, in a new request, if it must still be done.", rec.Request, rec.Agent)
	v.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: agentText(v.ID, v.ContextID, msg), Timestamp: now()}
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	failed := *rec
	failed.State, failed.Final, failed.Data = string(a2a.TaskStateFailed), true, data
	if !g.writes.enter() {
		return // the gateway closed: the next reader, here or elsewhere, cuts it off
	}
	defer g.writes.leave()
	if _, err := g.opts.Tasks.PutTask(ctx, &failed); err != nil {
		g.log.Error("a2a: a cut-off task's state was not stored", "task", rec.ID, "err", err)
		return
	}
	crashpoint.Reached("task.stored")
	*rec = failed
}

// followers counts each principal's open streams of its tasks
// (SubscribeToTask), bounded as its running tasks are (Options.
// MaxLiveTasks). The zero value is ready.
type followers struct {
	mu sync.Mutex
	m  map[Owner]int
}

// take counts one more stream of owner's, or reports how many it holds
// and false when that would pass max (max < 0: no bound).
func (f *followers) take(owner Owner, max int) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.m[owner]
	if max >= 0 && n >= max {
		return n, false
	}
	if f.m == nil {
		f.m = map[Owner]int{}
	}
	f.m[owner] = n + 1
	return n + 1, true
}

// give counts one stream of owner's fewer.
func (f *followers) give(owner Owner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m[owner]--; f.m[owner] <= 0 {
		delete(f.m, owner)
	}
}

// DefaultMaxLiveTasks is how many tasks one principal has running at reach
// unless Options.MaxLiveTasks says otherwise.
const DefaultMaxLiveTasks = 1000

// liveTasks holds each principal's running tasks (and the sends about to
// start one), for Options.MaxLiveTasks. The zero value is ready.
type liveTasks struct {
	mu sync.Mutex
	m  map[Owner][]*liveSlot
}

// liveSlot is one running task of a principal's, or a send about to start
// one (t nil until then).
type liveSlot struct{ t *task }

// over reports whether a slot's task ended: settled at reach, or its
// hand-off over (a paused one's task still runs).
func (s *liveSlot) over() bool {
	t := s.t
	if t == nil {
		return false
	}
	if t.done() || t.req == nil {
		return true
	}
	st := t.req.State()
	return st == reach.RequestCompleted || st == reach.RequestInterrupted
}

// reserve counts one more running task of owner's and returns its slot,
// or nil and how many owner has when that would pass max (max < 0: no
// bound). Slots whose tasks ended are dropped first.
func (l *liveTasks) reserve(owner Owner, max int) (*liveSlot, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mine := slices.DeleteFunc(l.m[owner], (*liveSlot).over)
	if max >= 0 && len(mine) >= max {
		l.set(owner, mine)
		return nil, len(mine)
	}
	s := &liveSlot{}
	l.set(owner, append(mine, s))
	return s, 0
}

// fill gives a reserved slot its task.
func (l *liveTasks) fill(s *liveSlot, t *task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.t = t
}

// done drops the slot of a task that ended, so that it holds the task no
// longer (the registry lets ended tasks go).
func (l *liveTasks) done(t *task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mine, ok := l.m[t.owner]; ok {
		l.set(t.owner, slices.DeleteFunc(mine, func(q *liveSlot) bool { return q.t == t }))
	}
}

// unreserve gives back a slot whose send started no task.
func (l *liveTasks) unreserve(owner Owner, s *liveSlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set(owner, slices.DeleteFunc(l.m[owner], func(q *liveSlot) bool { return q == s }))
}

// set keeps owner's slots (l.mu held).
func (l *liveTasks) set(owner Owner, mine []*liveSlot) {
	if len(mine) == 0 {
		delete(l.m, owner)
		return
	}
	if l.m == nil {
		l.m = map[Owner][]*liveSlot{}
	}
	l.m[owner] = mine
}
