package reach

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/loops"
	"github.com/agentreach/reach/internal/records"
)

// ParseStopMode reads "soft", "cancel" or "isolate".
func ParseStopMode(s string) (StopMode, error) { return fault.ParseStopMode(s) }

// Request is one unit of agent work (C1): a principal, a scene, a budget, a
// cancel token, and the frames of every model call, tool call and delegation
// made for it. A sub-agent's work is a child Request whose budget is carved
// from this one's. Methods are safe for concurrent use.
type Request struct {
	id        string
	principal string
	roles     []string
	tenant    string
	attrs     map[string]string
	scene     string
	agent     string
	parent    *Request
	root      *Request
	delegate  *Frame // the delegate frame in the parent request, for a sub-request
	rt        *Runtime
	started   time.Time
	trace     [16]byte // the W3C trace id of the tree's frames (a root's; see Trace)
	fresh     bool     // its id was made for it (see Fresh)
	// undoing marks a request the runtime begins to run undos: a
	// compensation's, or an operator's retry of a dead letter. Its calls
	// register no undos, and one that fails compensates nothing: a failed
	// undo is dead-lettered, and an undo is never undone. Beside fresh,
	// in its padding (TestCallSizeClass).
	undoing bool
	// owed counts the compensations of its undos under way (compensate)
	// and its writes with an undo in flight (owesUndo), and its top bit
	// (endHeld) says that its end, stopped, waits for them
	// to finish before it is recorded (End): a kill before leaves it
	// stored stopped and not ended, which the restart lists and
	// compensates. Under settle, beside fresh and undoing in their padding
	// (TestCallSizeClass).
	owed uint16
	// priority is RequestOptions.Priority, saturated to 32 bits (only its
	// sign counts: above 0 may use the reserved capacity), beside fresh
	// and undoing in their padding (TestCallSizeClass).
	priority int32

	ctx    context.Context
	cancel context.CancelCauseFunc

	// delegateOnce and mode side by side keep a Request in the 704-byte
	// size class (TestCallSizeClass).
	delegateOnce sync.Once
	mode         atomic.Int32 // StopMode
	cause        atomic.Pointer[Cause]
	ended        atomic.Bool
	// settle orders End's mark of the request ended against Stop's look
	// at it and its mark of it stopped: one wins, and a stop that finds
	// it completed does nothing. Held for those two marks only, never
	// across a store write.
	settle sync.Mutex
	// refusedInARow counts the actionable refusals of its agent's tool
	// calls since one was last let through (refusalstreak.go).
	refusedInARow atomic.Int32
	// letThrough says that a call was let through since this runtime last
	// counted a refusal of the request on Options.RefusalCounter: the
	// next refusal counted there starts the count over.
	letThrough atomic.Bool
	// counted says that this runtime counted a refusal of the request on
	// Options.RefusalCounter: the store may hold a count (End).
	counted atomic.Bool

	verdict atomic.Pointer[string] // what the sub-agent answered (EndWith)

	meter budget.Meter // its limit and what it spent; its parent's meter is above it

	auditLost atomic.Int64 // its frames' events the Recorder (a Keeper) did not keep (AuditLost)

	mu       sync.Mutex
	frames   []*Frame
	dropped  int
	letGo    LetGo // the ended tool frames let go from frames (Options.StoredFrames)
	goneIDs  idSet // and their ids: Frame reads back only those
	children []*Request

	loops loops.Lazy   // the loop detector of the tree: used on the root request only
	reads readVersions // entity versions seen; used on the root request only
	saga  effects.Saga // this request's registered undos
	// lockAs, on a compensation's request that runs inside a call of the
	// request it compensates, is the holder its calls take entity locks
	// as, each with its own frame: they write as the root request whose
	// writes they undo, for the call they run for (the failing call still
	// holds the entities while its undos run). See compensate.
	lockAs *holder
	// halt is closed when the request is stopped with cancel or isolate.
	halt chan struct{}
	// interrupted, set on a request restored by RestoreInterrupted, is why
	// a restart cut it off.
	interrupted *Cause
	// past, set on a request of an earlier run (RestorePast), loads its
	// frames and sub-requests when they are first asked for.
	past *past
	// earlier, set on a root request begun by the id of one that had
	// completed (named again, after a restart too), holds that request:
	// its frames and sub-requests come before this one's in the views, so
	// that no call made under the id is dropped from them (track). With a
	// store (Options.StoredFrames, Options.History) the chain is folded:
	// once a request is named again a second time, the one before it keeps
	// of the runs before it only the ids of their sub-requests (looked up
	// again: Runtime.Lookup) and reads their frames back from the store, so
	// that a request named again without end holds no more than one
	// earlier run.
	earlier atomic.Pointer[earlierRuns]
	// order keeps the records of the requests below that its stops stop
	// until those stops are stored (stoporder.go).
	order stopOrder
}

// ID returns the request id.
func (r *Request) ID() string { return r.id }

// Principal returns who the request acts for.
func (r *Request) Principal() string { return r.principal }

// Priority returns the request's priority (RequestOptions.Priority,
// saturated to 32 bits): above 0 it may use the capacity the rate limits
// keep for priority requests.
func (r *Request) Priority() int { return int(r.priority) }

// Roles returns the principal's roles.
func (r *Request) Roles() []string { return r.roles }

// Tenant returns the principal's tenant.
func (r *Request) Tenant() string { return r.tenant }

// Attributes returns the principal's attributes (do not modify).
func (r *Request) Attributes() map[string]string { return r.attrs }

// Scene returns the request's scene.
func (r *Request) Scene() string { return r.scene }

// Agent returns the agent of the request.
func (r *Request) Agent() string { return r.agent }

// Parent returns the request this one was delegated from, or nil.
func (r *Request) Parent() *Request { return r.parent }

// DelegateFrame returns the delegate frame in the parent request that
// started r, or nil for a root request.
func (r *Request) DelegateFrame() *Frame { return r.delegate }

// Root returns the request at the top of r's tree (r itself for a root).
func (r *Request) Root() *Request { return r.root }

// Frame finds a frame by id in r or its sub-requests, newest first. The
// frames of a request of an earlier run (RestorePast) are searched once
// they were read (Frames, Children): no frame of theirs is a parent of new
// work. A frame let go from memory (Options.StoredFrames) is read back;
// an id that is none of r's reads nothing.
func (r *Request) Frame(id FrameID) (*Frame, bool) {
	r.mu.Lock()
	for i := len(r.frames) - 1; i >= 0; i-- {
		if f := r.frames[i]; f.ID == id {
			r.mu.Unlock()
			return f, true
		}
	}
	children := append([]*Request(nil), r.children...)
	gone := r.goneIDs.has(id)
	r.mu.Unlock()
	if gone {
		for _, f := range r.Frames() {
			if f.ID == id {
				return f, true
			}
		}
	}
	for _, c := range children {
		if f, ok := c.Frame(id); ok {
			return f, true
		}
	}
	return nil, false
}

// Context returns the request's context: it ends when the request is
// cancelled, isolated, or out of wall clock, with the cause.
func (r *Request) Context() context.Context { return r.ctx }

// Budget returns the request's limits.
func (r *Request) Budget() Budget { return r.meter.Limit }

// Started returns when the request began.
func (r *Request) Started() time.Time { return r.started }

// Usage returns what the request and its sub-requests have spent.
func (r *Request) Usage() Usage {
	if r.past != nil {
		return r.past.usage
	}
	return r.meter.Used(time.Since(r.started))
}

// Remaining returns what is left of each limited dimension (zero fields are
// unlimited, as in Budget).
func (r *Request) Remaining() Budget { return budget.Remaining(r.meter.Limit, r.Usage()) }

// State returns where the request is: running, stopped in a mode,
// completed once ended, or interrupted by a restart.
func (r *Request) State() RequestState {
	if r.interrupted != nil {
		return RequestInterrupted
	}
	if m := StopMode(r.mode.Load()); m != Running {
		return RequestState("stopped_" + m.String())
	}
	if r.ended.Load() {
		return RequestCompleted
	}
	return RequestRunning
}

// Trace returns the W3C trace id the request tree's frames belong to:
// drawn at random for each root request, so that two requests with the same
// id (one after the other, or of two principals) are two traces; a
// sub-request is in its root's.
func (r *Request) Trace() [16]byte { return r.root.trace }

// StopCause returns why the request was stopped (or interrupted), or nil.
func (r *Request) StopCause() *Cause {
	if r.interrupted != nil {
		return r.interrupted
	}
	if StopMode(r.mode.Load()) == Running {
		return nil // a cause being marked: not a stop until its mode is set
	}
	return r.cause.Load()
}

// earlierRuns is what a request named again has of the runs before it
// under its id: the request of the last of them, or (req nil) the ids of
// their sub-requests, their frames being in the store (track).
type earlierRuns struct {
	req  *Request
	kids []string
}

// earlierKids returns the ids of the sub-requests of r and of the runs
// before it under its id, oldest first, looking up none (track calls it
// with the requests' registry locked).
func (r *Request) earlierKids() []string {
	var ids []string
	if e := r.earlier.Load(); e != nil && e.req != nil {
		ids = e.req.earlierKids()
	} else if e != nil {
		ids = slices.Clone(e.kids)
	}
	r.loadPast()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.children {
		ids = append(ids, c.id)
	}
	return ids
}

// Children returns the sub-requests delegated from this request.
func (r *Request) Children() []*Request {
	var out []*Request
	if e := r.earlier.Load(); e != nil && e.req != nil {
		out = slices.DeleteFunc(e.req.Children(), r.notEarlier)
	} else if e != nil {
		for _, id := range e.kids {
			if c, ok := r.rt.Lookup(id); ok {
				out = append(out, c)
			}
		}
	}
	r.loadPast()
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.earlier.Load(); e != nil && e.req == nil {
		// Read back from the store, the sub-requests of the runs before
		// may name r's own.
		out = slices.DeleteFunc(out, func(c *Request) bool {
			return slices.ContainsFunc(r.children, func(o *Request) bool { return o.id == c.id })
		})
	}
	return append(out, r.children...)
}

// Frames returns a snapshot of the request's frames in creation order
// (without its sub-requests' frames). Those let go from memory
// (Options.StoredFrames) are read back from the store.
func (r *Request) Frames() []*Frame {
	r.loadPast()
	r.mu.Lock()
	fs := append([]*Frame(nil), r.frames...)
	letGo := r.letGo.Frames
	r.mu.Unlock()
	if letGo != 0 {
		fs = r.withStored(fs)
	}
	return append(r.earlierFrames(), fs...)
}

// earlierFrames returns the frames of the runs before r under its id (a
// request named again), oldest first.
func (r *Request) earlierFrames() []*Frame {
	switch e := r.earlier.Load(); {
	case e == nil:
		return nil
	case e.req == nil:
		return r.storedFrames()
	default:
		return slices.DeleteFunc(e.req.Frames(), r.notEarlierFrame())
	}
}

// storedFrames reads back from the store, in one read, the frames of the
// runs before r under its id: those stored under it that are not r's own
// and began before it.
func (r *Request) storedFrames() []*Frame {
	stored := r.rt.opts.StoredFrames(r.id)
	records.SortPast(stored) // a parent before its children: each is linked to the one built before it
	r.mu.Lock()
	own := make(map[FrameID]bool, len(r.frames))
	for _, f := range r.frames {
		own[f.ID] = true
	}
	stored = slices.DeleteFunc(stored, func(pf PastFrame) bool {
		return own[pf.ID] || r.goneIDs.has(pf.ID) || !pf.Started.Before(r.started)
	})
	r.mu.Unlock()
	out := make([]*Frame, 0, len(stored))
	byID := make(map[FrameID]*Frame, len(stored))
	for _, pf := range stored {
		f := &Frame{ID: pf.ID, Kind: pf.Kind, Name: pf.Name, Args: pf.Args, CallID: pf.CallID, Agent: pf.Agent,
			Request: r, Depth: pf.Depth, Started: pf.Started, ended: pf.Ended, err: pf.Error, tokens: pf.Tokens,
			why: pf.Why, summary: pf.Summary}
		f.setState(pf.State)
		f.recorded.Store(true)
		f.Parent = byID[pf.Parent]
		byID[f.ID] = f
		out = append(out, f)
	}
	return out
}

// notEarlierFrame returns whether a frame of r.earlier is r's own: read
// back from the store for an earlier request of an earlier run
// (RestorePast), its frames are every one stored under the id, r's too
// (and, on several instances, those of r's parts elsewhere). Frames carry
// no run of their own: those r keeps or let go go by id, the others (its
// parts on other instances) by when they began (docs/STATE.md).
func (r *Request) notEarlierFrame() func(*Frame) bool {
	r.mu.Lock()
	own := make(map[FrameID]bool, len(r.frames))
	for _, f := range r.frames {
		own[f.ID] = true
	}
	gone := r.goneIDs.has
	r.mu.Unlock()
	return func(f *Frame) bool {
		if own[f.ID] {
			return true
		}
		r.mu.Lock()
		g := gone(f.ID)
		r.mu.Unlock()
		return g || !f.Started.Before(r.started)
	}
}

// notEarlier is notEarlierFrame for a sub-request of r.earlier.
func (r *Request) notEarlier(c *Request) bool {
	r.mu.Lock()
	own := slices.Contains(r.children, c)
	r.mu.Unlock()
	return own || !c.started.Before(r.started)
}

// AuditLost returns how many events of the request's frames the Recorder
// (a Keeper, such as the audit log) did not keep: it dropped them (its
// queue was full) or failed to store them. Their frames stay in memory
// (Frame.AuditLost); the audit log lacks those events.
func (r *Request) AuditLost() int64 { return r.auditLost.Load() }

// LetGo tallies the ended tool frames a request let go from memory
// (Options.StoredFrames): how many, of them how many failed, were refused
// or cancelled (the rest completed), and when the last of them ended.
type LetGo struct {
	Frames, Failed, Refused, Cancelled int
	Last                               time.Time
}

// KeptFrames returns the frames the request keeps in memory, as Frames
// does without reading back those it let go (Options.StoredFrames), and
// the tally of those: for views that only count frames by state. A
// request named again more than once reads back the frames of the runs
// before the last (they are in the store only; see Request.earlier).
func (r *Request) KeptFrames() ([]*Frame, LetGo) {
	var fs []*Frame
	var gone LetGo
	switch e := r.earlier.Load(); {
	case e == nil:
	case e.req == nil:
		fs = r.storedFrames()
	default:
		fs, gone = e.req.KeptFrames()
		fs = slices.DeleteFunc(fs, r.notEarlierFrame())
	}
	r.loadPast()
	r.mu.Lock()
	defer r.mu.Unlock()
	gone.Frames += r.letGo.Frames
	gone.Failed += r.letGo.Failed
	gone.Refused += r.letGo.Refused
	gone.Cancelled += r.letGo.Cancelled
	if r.letGo.Last.After(gone.Last) {
		gone.Last = r.letGo.Last
	}
	return append(fs, r.frames...), gone
}

// withStored merges into fs, the frames kept in memory in creation
// order, those r let go, read back from the store, by start time.
func (r *Request) withStored(fs []*Frame) []*Frame {
	stored := r.rt.opts.StoredFrames(r.id)
	// Only the frames r let go: not those the store has of the same request
	// from elsewhere (another instance that joined it).
	r.mu.Lock()
	stored = slices.DeleteFunc(stored, func(pf PastFrame) bool { return !r.goneIDs.has(pf.ID) })
	r.mu.Unlock()
	byID := make(map[FrameID]*Frame, len(fs)+len(stored))
	for _, f := range fs {
		byID[f.ID] = f
	}
	records.SortPast(stored) // a parent before its children: each is linked to the one built before it
	var back []*Frame
	for _, pf := range stored {
		if _, ok := byID[pf.ID]; ok {
			continue
		}
		f := &Frame{ID: pf.ID, Kind: pf.Kind, Name: pf.Name, Args: pf.Args, CallID: pf.CallID, Agent: pf.Agent,
			Request: r, Started: pf.Started, ended: pf.Ended, err: pf.Error, tokens: pf.Tokens,
			why: pf.Why, summary: pf.Summary}
		f.setState(pf.State)
		f.recorded.Store(true)
		if pf.Parent != 0 {
			if f.Parent = byID[pf.Parent]; f.Parent == nil && r.parent != nil {
				f.Parent, _ = r.parent.Frame(pf.Parent)
			}
		}
		if f.Parent != nil {
			f.Depth = f.Parent.Depth
		}
		if f.Kind == ToolFrame {
			f.Depth++
		}
		byID[f.ID] = f
		back = append(back, f)
	}
	if len(back) == 0 {
		return fs
	}
	out := make([]*Frame, 0, len(fs)+len(back))
	for _, f := range fs {
		for len(back) > 0 && back[0].Started.Before(f.Started) {
			out, back = append(out, back[0]), back[1:]
		}
		out = append(out, f)
	}
	return append(out, back...)
}

// Fresh reports whether the request's id was made for it when it began
// (RequestOptions.ID and Delegation's ID were empty): no client named it,
// so no earlier request, stored or running, can hold it.
func (r *Request) Fresh() bool { return r.fresh }

// Undos returns how many undos the request holds: registered by its calls,
// and not run.
func (r *Request) Undos() int { return r.saga.Len() }

// End marks the request completed. Frames already running go on; new ones
// are refused. Ending an ended request does nothing. The end of a request
// stopped by a stop above whose stop is not stored yet is recorded once
// it is (stoporder.go).
func (r *Request) End() {
	r.settle.Lock()
	was := r.ended.Swap(true)
	r.settle.Unlock()
	if was {
		return
	}
	now := time.Now()
	r.meter.End(now.Sub(r.started)) // its wall clock stops: a run of it named again counts from here
	r.endDelegate()
	cause := Cause{Mode: Cancel, By: "runtime", Reason: "request ended", At: now, Request: r.id}
	if r.rt.Draining() {
		// Ended as the gateway shuts down (Drain came first): a call it
		// cuts is told so, and that it may call again in a moment, not
		// that someone stopped its request.
		cause.By, cause.Reason, cause.Shutdown = "gateway", "the gateway is shutting down", true
	}
	r.cancel(&StopError{Cause: cause})
	if root := r.root; root.ended.Load() && root.treeEnded() {
		// No frame of the tree is admitted from now on: its loop
		// detector has nothing left to judge, and the requests are kept
		// for their views without it. (While a sub-request runs on, the
		// tree keeps it: its calls are still judged against the whole
		// tree; the last to end lets it go.)
		root.loops.Release()
	}
	r.rt.settleRefusals(r)
	// Stopped by a stop of a request above that is not stored yet there,
	// its end (which records it stopped) is recorded once that is.
	if c := r.StopCause(); c != nil && r.afterAbove(*c, true, r.recordEndOwed) {
		return
	}
	r.recordEndOwed()
}

// recordEndOwed records the request's end, unless it is stopped and a
// compensation of its undos is under way: then that compensation records
// it once it finished (paid). So a stopped request's end is stored only
// after its undos ran (or were dead-lettered): a kill before leaves it
// stored stopped and not ended, which the restart lists, reads what its
// compensations ran and runs the rest. Before, the end could be stored
// before its compensation's request began, and a kill in between left a
// request stopped and ended that no recovery found, its undos never run
// (TestStoppedEndStoredAfterItsUndos in internal/durable).
func (r *Request) recordEndOwed() {
	r.settle.Lock()
	held := r.owed&^endHeld > 0 && r.StopCause() != nil
	if held {
		r.owed |= endHeld
	}
	r.settle.Unlock()
	if !held {
		r.recordEnd()
		return
	}
	r.boundHeldEnd()
}

// boundHeldEnd bounds the wait of r's end, held (recordEndOwed), for the
// writes of r still running their tools: the stop cancelled them, so a
// tool that honours its cancellation has answered, or answers at once;
// one still running ignores it. Past the longest time of those tools
// (toolspec's Answers) from now, the end is recorded without them
// (endUnheld): a request whose write never answers ends all the same, its
// budget settled. Such a write, if it completes after, is undone live, in
// a compensation of its own; a kill after its end's checkpoint and before
// that compensation's request began is the one thing left unfound
// (docs/STATE.md). The compensations its end waits for need no bound here:
// each of their undos has its own (runUndo). A stop starts no tool (execute
// looks after marking the frame executing), so every write that can still
// run its tool is executing now. A request past MaxFrames runs frames it
// does not keep: one of them may be such a write, so its end is bounded by
// the longest time of any write with an undo (TestStoppedEndBoundedPastMaxFrames).
func (r *Request) boundHeldEnd() {
	var wait time.Duration
	undoable := func(t *tool) bool {
		return t != nil && t.Effects != nil && t.Effects.Undo != nil && t.Access.Writes()
	}
	r.mu.Lock()
	for _, f := range r.frames {
		if f.Kind != ToolFrame || f.State() != Executing {
			continue
		}
		if t := r.rt.lookup(f.Name); undoable(t) {
			wait = max(wait, t.Answers())
		}
	}
	unkept := r.dropped > 0
	r.mu.Unlock()
	if unkept {
		for _, t := range r.rt.tools.All() {
			if undoable(t) {
				wait = max(wait, t.Answers())
			}
		}
	}
	if wait <= 0 {
		return
	}
	t := time.AfterFunc(wait, r.endUnheld)
	// Kept while the end waits, for the last paid to stop (unbound); if
	// that (or the timer) came first, stopped now.
	r.settle.Lock()
	if r.owed&endHeld != 0 {
		r.rt.heldEnds.Store(r, t)
	} else {
		t.Stop()
	}
	r.settle.Unlock()
}

// unbound stops the timer that bounds r's end, held (boundHeldEnd), once
// that end is recorded or no longer waits; under r.settle. Before, it was
// left to fire, and kept r (its frames, its trace) for the longest time of
// its tools after it ended: with default settings a couple of minutes for
// each stopped request that had a write in flight
// (TestHeldEndTimerStoppedWithTheEnd).
func (r *Request) unbound() {
	if t, ok := r.rt.heldEnds.LoadAndDelete(r); ok {
		t.(*time.Timer).Stop()
	}
}

// endUnheld records r's end if it still waits (endHeld): what it waited
// for is left to finish after it. Exactly one of it and the last paid
// records the end.
func (r *Request) endUnheld() {
	r.settle.Lock()
	held := r.owed&endHeld != 0
	r.owed &^= endHeld
	left := r.owed
	r.unbound()
	r.settle.Unlock()
	if held {
		r.rt.log.Warn("a stopped request's end is recorded while a write of it still runs: its tool ignored the stop past its time",
			"request", r.id, "owed", left)
		r.recordEnd()
	}
}

// endNotHeld reports whether r has ended and its end does not wait (or no
// longer waits) for what it owes: recorded, or about to be (lateUndo).
func (r *Request) endNotHeld() bool {
	r.settle.Lock()
	defer r.settle.Unlock()
	return r.ended.Load() && r.owed&endHeld == 0
}

// endHeld is the bit of Request.owed that says its end waits for the
// compensations it counts.
const endHeld = 1 << 15

// owe notes a compensation of r's undos under way, before it begins (a
// stop's runs on a goroutine of its own); paid, once it is over, if owe
// reported true. With endHeld-1 (32767) already under way it counts
// nothing and reports false: r's end does not wait for that one, rather
// than the count running into endHeld, which recorded the end at once and,
// once they paid, ran the count under zero and recorded it again
// (TestOwedCountDoesNotWrap).
func (r *Request) owe() bool {
	r.settle.Lock()
	defer r.settle.Unlock()
	if r.owed&^endHeld == endHeld-1 {
		return false
	}
	r.owed++
	return true
}

// paid notes a compensation of r's undos over, and records r's end if it
// waited for the last of them.
func (r *Request) paid() {
	r.settle.Lock()
	r.owed--
	end := r.owed == endHeld
	if end {
		r.owed = 0
		r.unbound()
	}
	r.settle.Unlock()
	if end {
		r.recordEnd()
	}
}

// recordEnd tells the request's end to the store and the observers.
func (r *Request) recordEnd() {
	if rr := r.rt.opts.Requests; rr != nil {
		rr.RequestEnded(context.Background(), r)
	}
	if o, ok := r.rt.opts.Recorder.(RequestObserver); ok {
		o.RequestEnded(context.Background(), r)
	}
}

// treeEnded reports whether every sub-request below r has ended.
func (r *Request) treeEnded() bool {
	r.mu.Lock()
	children := r.children
	r.mu.Unlock()
	for _, c := range children {
		if !c.ended.Load() || !c.treeEnded() {
			return false
		}
	}
	return true
}

// EndWith ends the request as End does; for a sub-request, verdict is what
// the sub-agent answered (an A2A task's final message), which its delegate
// frame records and the loop guard compares between hand-offs of the same
// sub-task. Without it, the delegate frame takes what the sub-request's
// last model turn said.
func (r *Request) EndWith(verdict string) {
	r.verdict.CompareAndSwap(nil, &verdict)
	r.End()
}

// endDelegate closes a sub-request's delegate frame in its parent, once.
func (r *Request) endDelegate() {
	f := r.delegate
	if f == nil {
		return
	}
	r.delegateOnce.Do(func() {
		st := Completed
		var e *Error
		c := r.StopCause()
		// A stop cancels the contexts of the requests below it before it
		// marks them stopped: one that ends in between ended because of an
		// ancestor's stop, and its hand-off is cancelled by that stop.
		for p := r.Parent(); c == nil && p != nil; p = p.Parent() {
			if pc := p.stopCause(); pc != nil && pc.Mode >= Cancel {
				c = pc
			}
		}
		if c != nil {
			st, e = Cancelled, (&StopError{Cause: *c}).Refusal()
		}
		text := lastText(r)
		if v := r.verdict.Load(); v != nil {
			text = *v
		}
		r.rt.loopFrameDone(f, text, e != nil)
		f.finish(st, e, oneLine(r.rt.opts.Redactor.RedactString(text), 120))
		r.rt.record(context.Background(), f)
		if d, ok := r.rt.opts.Requests.(DelegateRecorder); ok {
			d.DelegateEnded(context.Background(), r)
		}
	})
}

// Stop stops the request and, through it, every sub-request (C4), with a
// recorded cause. A stronger mode may follow a weaker one (soft, then cancel,
// then isolate); a weaker one after a stronger one changes nothing. Stop
// returns once every context it cancels has been cancelled: handlers see
// ctx.Done() with context.Cause(ctx) a *StopError.
//
// A request that ended with no stop (State RequestCompleted: its agent's
// work done, or ended by its client) is over, and Stop changes nothing
// there: its writes stay done, its state completed (a stop would run its
// undos). A stop of a request above it still undoes it (a stop undoes the
// whole chain below it, a sub-agent's finished work too). Callers tell a
// stop refused so by State after it.
//
// The look at its state and the mark of it stopped are one step against
// End's mark of it ended (Request.settle): a Stop that races End either
// marks it stopped before the end, and the request ends stopped, undone,
// or finds it completed and does nothing. Before, a Stop that saw it
// running while End landed marked it stopped after its end was recorded
// completed, and ran the undos of a request that had completed
// (TestStopRacingEndUndoesOnlyWhatItWon).
func (r *Request) Stop(mode StopMode, by, reason string) {
	c := Cause{Mode: mode, By: by, Reason: r.rt.opts.Redactor.RedactString(reason), At: time.Now(), Request: r.id}
	var old StopMode
	ok := false
	r.settle.Lock()
	if r.State() != RequestCompleted {
		old, ok = r.markLocked(c)
	}
	r.settle.Unlock()
	if ok {
		r.stopMarked(c, old)
	}
}

func (r *Request) stop(c Cause) {
	if old, ok := r.mark(c); ok {
		r.stopMarked(c, old)
	}
}

// mark marks r stopped by c, unless it is over already or stopped as
// strongly, and returns the mode it had; ok says it marked it.
func (r *Request) mark(c Cause) (old StopMode, ok bool) {
	r.settle.Lock()
	defer r.settle.Unlock()
	return r.markLocked(c)
}

// markLocked is mark with r.settle held. The cause is stored before the
// mode, and the two as one step against another mark: whoever sees r
// stopped (State) sees why (StopCause). Before, a mark that had set the
// mode and not yet the cause let a concurrent stop of the same cause
// (an A2A hand-off's task marking its request stopped as its context was
// cancelled) find it stopped already and return, and the request's End
// then saw no cause: its end was recorded at once, before the stop above
// was stored (TestStopStoredAboveFirst failed so under load;
// TestStoppedHasItsCause).
func (r *Request) markLocked(c Cause) (old StopMode, ok bool) {
	if r.interrupted != nil || r.past != nil {
		return 0, false // over already, and kept as it was found
	}
	old = StopMode(r.mode.Load())
	if c.Mode <= old {
		return 0, false
	}
	cc := c
	r.cause.Store(&cc)
	r.mode.Store(int32(c.Mode))
	return old, true
}

// stopMarked does the rest of a stop that mark made: the stop's order,
// the contexts cancelled, its record, and the requests below.
func (r *Request) stopMarked(c Cause, old StopMode) {
	r.rt.awaiting.wake(r) // a wait for an approval ends: nothing it lets through would start
	r.order.begin(c.Mode) // before a request below can see it (stoporder.go)
	if c.Mode >= Cancel {
		r.cancel(&StopError{Cause: c})
		if old < Cancel && r.halt != nil {
			close(r.halt)
		}
	}
	record := func() {
		if r.order.superseded(c.Mode) {
			// Held (a stop above not stored yet), it comes after a
			// stronger stop of r's own stored meanwhile, which started
			// the undos too: made now it would replace that one's record
			// with its weaker mode.
			return
		}
		r.rt.recordStop(r, c)
		if rr := r.rt.opts.Requests; rr != nil {
			rr.RequestStopped(context.Background(), r, c)
		}
		r.order.done(c.Mode)
		// The undos start once the stop is durable: a crash before it
		// leaves the request running, which the restart interrupts and
		// compensates; after it, stopped, which the restart compensates
		// and keeps stopped. Never undos done, or dead-lettered, under a
		// stop the store lost.
		if c.Mode >= Cancel && r.saga.Len() > 0 {
			// Owed from now: an end that comes before the goroutine
			// begins waits for it too (recordEndOwed).
			owed := r.owe()
			go func() {
				if owed {
					defer r.paid()
				}
				r.rt.compensateOwed(context.Background(), r, "stopped: "+c.Reason, nil)
			}()
		}
	}
	// A stop of a request above, not stored yet there, is stored first:
	// this one's record waits on it, and is made by it once it is.
	if !r.afterAbove(c, false, record) {
		record()
	}
	for _, ch := range r.Children() {
		ch.stop(c)
	}
}

// stopCause returns why r itself was stopped, or nil; r may be nil.
func (r *Request) stopCause() *Cause {
	if r == nil || StopMode(r.mode.Load()) == Running {
		return nil
	}
	return r.cause.Load()
}

// stopped returns the first stop in force on r or an ancestor, or nil.
func (r *Request) stopped() *Cause {
	for q := r; q != nil; q = q.parent {
		if StopMode(q.mode.Load()) != Running {
			return q.cause.Load()
		}
	}
	return nil
}

// isolated reports whether r or an ancestor is isolated.
func (r *Request) isolated() bool {
	for q := r; q != nil; q = q.parent {
		if StopMode(q.mode.Load()) == Isolate {
			return true
		}
	}
	return false
}

func (r *Request) addFrame(f *Frame) {
	r.mu.Lock()
	if w := r.rt.opts.FrameWindow; r.rt.opts.StoredFrames != nil && len(r.frames) >= 2*w {
		r.letGoOld(w)
	}
	if len(r.frames)+r.letGo.Frames < r.rt.opts.MaxFrames { // those let go count: their ids are kept
		r.frames = append(r.frames, f)
	} else {
		r.dropped++
	}
	r.mu.Unlock()
}

// letGoOld lets go the ended tool frames whose last event the Recorder
// was given, all but the newest keep of them: the store has them
// (Options.StoredFrames). Running frames, model frames and delegations
// stay. r.mu is held.
func (r *Request) letGoOld(keep int) {
	n := 0
	for _, f := range r.frames {
		if f.recorded.Load() {
			n++
		}
	}
	n -= keep
	if n <= 0 {
		return
	}
	kept := r.frames[:0]
	for _, f := range r.frames {
		if n > 0 && f.recorded.Load() {
			n--
			r.goneIDs.add(f.ID)
			r.letGo.Frames++
			switch f.State() {
			case Failed:
				r.letGo.Failed++
			case Refused:
				r.letGo.Refused++
			case Cancelled:
				r.letGo.Cancelled++
			}
			if e := f.Ended(); e.After(r.letGo.Last) {
				r.letGo.Last = e
			}
			continue
		}
		kept = append(kept, f)
	}
	clear(r.frames[len(kept):])
	r.frames = kept
}

// spend adds model tokens and cost to r and its ancestors, and stops (mode
// cancel) each one whose budget that exhausts.
func (r *Request) spend(tokens int64, costNano int64) {
	for q := r; q != nil; q = q.parent {
		if dim, detail := q.meter.Add(tokens, costNano); dim != "" {
			q.stop(Cause{Mode: Cancel, By: "budget", Budget: dim, At: time.Now(), Request: q.id, Reason: detail})
		}
	}
}

// budgetError is the refusal of a call or frame of r because the budget
// of q (r's or an ancestor's meter) ran out of dim. Of a request named
// again whose earlier runs count in it, it says so, and how to get a
// budget of one's own.
func budgetError(dim string, r *Request, q *budget.Meter, detail string) *Error {
	for r != nil && &r.meter != q {
		r = r.parent
	}
	if r == nil { // not one of r's meters: none of the runtime's requests
		return fault.BudgetSpent(dim, q.Parent != nil, "", detail)
	}
	e := fault.BudgetSpent(dim, r.parent != nil, r.id, detail)
	if q.Carried() {
		e.Message = strings.TrimSuffix(e.Message, ".") + ", its earlier runs under this id counted."
		e.Suggestion = "A request named again keeps what its earlier runs spent. Answer with what you have, " +
			"or ask the user for a larger budget, or for a new request if this is new work."
	}
	return e
}
