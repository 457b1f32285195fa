// Package durable connects the runtime to the store, so that a gateway
// killed at any instant restarts knowing what ran, what may have run and
// what must be undone (C5, S1):
//
//	cp := durable.New(st, redact, log)              // st: store.Store
//	idem := store.NewIdempotency(st, nil)           // claims with a lease and this process's owner
//	rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Idempotency: idem, ...})
//	report, err := durable.Recover(ctx, st, rt, &durable.RecoverOptions{Idempotency: idem}) // at start, after registering the tools
//
// Every write is checkpointed before it runs (with its idempotency key) and
// when it ends (with the undo it registered); requests are recorded when
// they begin and end. Recover settles the idempotency claims the stopped
// process left, by what their checkpoints say (a call that never started
// runs again on retry; one that started answers its retry with an error
// saying what happened), marks what was in flight, and interrupts every
// request that had not ended, for good: it runs their undos, newest first,
// each once under its own idempotency key (an undo that fails is
// dead-lettered), and refuses any later work under their ids. An undo that
// was dead-lettered before the stop is left to the operator: it is not run
// again, nor dead-lettered twice. The requests that ran undos (a
// compensation, a dead letter's retry) are marked, but their undos are
// never undone. docs/STATE.md says what is durable at each point of a
// call, and what a crash there leaves.
//
// Checkpoints is also the runtime's dead letter queue
// (reach.DeadLetterQueue), kept in the store: the undos that failed wait
// there, across restarts, and an operator's Runtime.RetryDeadLetter or
// Runtime.DismissDeadLetter takes and settles the stored dead letter
// itself (retried, or resolved), whichever process asks: the gateway or
// the CLI. Recover puts back in the queue a dead letter that a crash left
// taken.
package durable

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/store"
)

// Store is what the package needs of a store.
type Store interface {
	store.Requests
	store.Frames
	store.DeadLetters
}

// Checkpoints implements reach.Checkpointer, reach.RequestRecorder and
// reach.DeadLetterQueue over a store: give it to the runtime as
// Options.Checkpoints, Requests and DeadLetters. Safe for
// concurrent use.
type Checkpoints struct {
	st     Store
	redact func([]byte) []byte
	log    *slog.Logger
	owner  string // with Share: the life that writes, and each call's stack
	onStop func(context.Context, *reach.Request)
	keeper EndKeeper
}

// EndKeeper keeps the end of a call's checkpoint that the store refused
// (it was down) and writes it once the store answers, only where the
// checkpoint is still "executing" (store.Idempotency's KeepEnded). It
// reports whether it kept it.
type EndKeeper interface {
	KeepEnded(f *store.Frame) bool
}

// KeepEnds has the ends of calls with an undo that the store refuses
// kept by k, so that a request interrupted after the store came back (or
// after a restart that wrote them) runs their undos. Call it before the
// runtime runs.
func (c *Checkpoints) KeepEnds(k EndKeeper) { c.keeper = k }

// OnStop has f told of each request stop once it is durable (see
// Stopped), as a stop's other consequences follow it: the approvals its
// calls left that nothing can use any more. Set it before the runtime runs.
func (c *Checkpoints) OnStop(f func(context.Context, *reach.Request)) { c.onStop = f }

// Stopped tells OnStop's function of r's stop, durable now: a recorder
// that stores a stop its own way (several instances) calls it after.
func (c *Checkpoints) Stopped(ctx context.Context, r *reach.Request) {
	if c.onStop != nil {
		c.onStop(ctx, r)
	}
}

var (
	_ reach.Checkpointer    = (*Checkpoints)(nil)
	_ reach.RequestRecorder = (*Checkpoints)(nil)
	_ reach.DeadLetterQueue = (*Checkpoints)(nil)
)

// New returns Checkpoints over st. redact, if not nil, cleans a call's
// arguments before its checkpoints store them (not an undo's, which a
// restart or a dead letter's retry runs).
func New(st Store, redact func([]byte) []byte, log *slog.Logger) *Checkpoints {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Checkpoints{st: st, redact: redact, log: log}
}

// Share makes every checkpoint name owner, the life of the instance that
// writes it ("<instance>/<life>"), and keep its call's stack
// (reach.Frame.Ancestry): for a store that several instances share, whose
// recovery of a dead instance finds its calls by owner, and whose calls
// placed under a frame of another instance see its ancestors. Call it
// before the runtime runs.
func (c *Checkpoints) Share(owner string) { c.owner = owner }

func (c *Checkpoints) clean(b []byte) []byte {
	if c.redact == nil || b == nil {
		return b
	}
	return c.redact(b)
}

// ids are cp's frame and parent ids as its rows spell them ("" for no
// parent).
func ids(cp *reach.Checkpoint) (id, parent string) {
	if cp.Parent != 0 {
		parent = cp.Parent.String()
	}
	return cp.Frame.String(), parent
}

// setRow sets f to the row of cp, whose frame and parent ids are spelled
// id and parent ("" for none).
func setRow(f *store.Frame, cp *reach.Checkpoint, id, parent string) {
	*f = store.Frame{Request: cp.Request, Frame: id, Parent: parent, Kind: "tool", Name: cp.Tool, CallID: cp.CallID,
		IdemKey: cp.IdempotencyKey, State: cp.State.String(), Args: cp.Args, Undo: cp.Undo, Started: cp.Started, Entities: cp.Entities}
	if cp.Error != nil {
		f.Error, _ = json.Marshal(cp.Error)
	}
}

// rows are the rows of a call's two checkpoints, made in one allocation:
// the "executing" one's (ExecutingFrame), kept in the record
// (reach.Checkpoint.Stored), and its end's, which Ended makes of it.
type rows struct{ executing, ended store.Frame }

// ExecutingFrame is the row of cp, an "executing" checkpoint, as Executing
// writes it. A store that writes it with the call's idempotency claim
// (store.IdempotencyOptions.Checkpoint) writes this. It keeps the row in
// cp.Stored, for the end's row (Ended): its arguments are masked once.
func (c *Checkpoints) ExecutingFrame(cp *reach.Checkpoint) *store.Frame {
	r := new(rows)
	f := &r.executing
	id, parent := ids(cp)
	setRow(f, cp, id, parent)
	f.Args = c.clean(f.Args)
	cp.Stored = r
	if c.owner != "" {
		f.Owner = c.owner
		if node, ok := cp.Node.(*reach.Frame); ok && node != nil {
			f.Stack, _ = json.Marshal(node.Ancestry())
		}
	}
	return f
}

// Executing implements reach.Checkpointer: the record is durable when it returns.
func (c *Checkpoints) Executing(ctx context.Context, cp *reach.Checkpoint) error {
	if err := c.st.PutFrame(context.WithoutCancel(ctx), c.ExecutingFrame(cp)); err != nil {
		return err
	}
	crashpoint.Reached("executing")
	return nil
}

// Ended implements reach.Checkpointer. The end of a call that registered
// an undo is durable when Ended returns: a restart compensates the request
// by it. Any other end is queued (store.Frames.QueueFrame): it is durable
// with the store's next commit, and a crash before that leaves the call
// "executing", which recovery answers as "may have run" (docs/STATE.md).
func (c *Checkpoints) Ended(ctx context.Context, cp *reach.Checkpoint) {
	var f *store.Frame
	if r, ok := cp.Stored.(*rows); ok {
		// The row of the "executing" record this wrote: its ids and its
		// masked arguments. Only its state, undo and error change: the
		// store may write those alone (store.Frame.EndOnly).
		x := &r.executing
		f = &r.ended
		setRow(f, cp, x.Frame, x.Parent)
		f.Args = x.Args
		f.EndOnly = true
	} else {
		f = new(store.Frame)
		id, parent := ids(cp)
		setRow(f, cp, id, parent)
		f.Args = c.clean(cp.Args) // an "executing" record this did not write
	}
	f.Owner = c.owner
	undo := len(f.Undo) == 0 && compensation(cp.Request)
	if len(f.Undo) == 0 && !undo {
		f.Args = bytes.Clone(f.Args) // the runtime's buffer; the store keeps it until it is written
		c.st.QueueFrame(f)           // no crash point: nothing is durable here yet
		return
	}
	if err := c.st.PutFrame(ctx, f); err != nil {
		if c.keeper != nil && c.keeper.KeepEnded(f) {
			c.log.Warn("checkpoint not recorded: kept, and written once the store answers", "request", cp.Request, "frame", f.Frame, "err", err)
			return
		}
		c.log.Error("checkpoint not recorded", "request", cp.Request, "frame", f.Frame, "err", err)
		return
	}
	if undo {
		crashpoint.Reached("undo.ended")
		return
	}
	crashpoint.Reached("ended")
}

// compensation reports whether request is the id of a compensation's
// request ("<request>/compensate/<n>", see undoRequest). The end of each
// of its undos is durable before the next undo runs (and before the end
// of the request it compensates): a kill after it leaves the undo
// completed, which the recovery reads (undosRan) and does not run again.
// Queued, a kill before its commit left it executing: "may have run",
// dead-lettered for an operator though it had run.
func compensation(request string) bool {
	i := strings.LastIndex(request, "/compensate/")
	return i > 0 && !strings.Contains(request[i+len("/compensate/"):], "/")
}

// RequestBegan implements reach.RequestRecorder. It refuses the id of a
// request that a restart interrupted (the store keeps it so) with a
// *reach.InterruptedError that carries the cause recorded then. A request
// that cannot be recorded otherwise runs, and the failure is logged.
func (c *Checkpoints) RequestBegan(ctx context.Context, r *reach.Request) error {
	ctx = context.WithoutCancel(ctx)
	b, _ := json.Marshal(r.Budget())
	rec := withIdentity(&store.Request{ID: r.ID(), Parent: parentID(r), Scene: r.Scene(),
		Agent: r.Agent(), State: "running", Budget: b, Started: r.Started()}, r)
	if r.Fresh() && c.owner == "" {
		// An id made for this request: no earlier one can hold it, so there
		// is nothing to refuse, and its record need not be durable before
		// the request runs. It is queued: durable with the store's next
		// commit, before any checkpoint or claim of its calls (docs/STATE.md).
		// On several instances it is written at once (others may be asked
		// for it).
		c.st.QueueRequest(rec)
		return nil
	}
	err := c.st.PutRequest(ctx, rec)
	switch {
	case err == nil:
		crashpoint.Reached("request.begun")
		c.Delegated(ctx, r)
		return nil
	case errors.Is(err, store.ErrConflict):
		cause := reach.Cause{By: "reach", Reason: "the gateway restarted while it ran"}
		old, gerr := c.st.GetRequest(ctx, r.ID())
		if gerr == nil && len(old.Cause) > 0 {
			cause = DecodeCause(old.Cause)
		}
		cause.Request = r.ID()
		if gerr == nil && old.State == "ended" && old.Parent != "" { // a hand-off that ended, named again
			return HandoffEnded(r.ID(), old.Parent)
		}
		if gerr == nil && old.State == "stopped" {
			if cause.Mode == reach.Running {
				cause.Mode = reach.Cancel
			}
			return &reach.StopError{Cause: cause}
		}
		return &reach.InterruptedError{Cause: cause}
	}
	c.log.Error("request not recorded", "request", r.ID(), "err", err)
	return nil
}

// Delegated writes, on a store that several instances share, the row of
// the delegate frame whose sub-request r is (none for a request that is
// no hand-off's), once r is stored: its stack (reach.Frame.Ancestry), as a
// tool call's checkpoint keeps its call's, so that a hand-off or call that
// another instance places under the delegate frame (an agent passing
// reach/parent on) sees its ancestors: their depth, and the hashes the
// cycle and re-entry checks compare (link.Owned.adopt). The row names r,
// the request whose work the frame holds and that such a call joins, and
// this life as its owner: DelegateEnded ends it with the hand-off, and a
// recovery of a dead life settles the rows it left open (cancelled, as
// the life's calls, but not listed among the calls that may have run:
// Report.MayHaveRun). Views of r do not list it (History.load).
// RequestBegan calls it; a recorder that stores sub-requests itself
// (cluster.Recorder) calls it after. A failure is logged: the hand-offs
// under the frame on other instances then begin at the top of r,
// unchecked against its stack.
func (c *Checkpoints) Delegated(ctx context.Context, r *reach.Request) {
	d := r.DelegateFrame()
	if c.owner == "" || d == nil {
		return
	}
	f := delegateRow(r, d, "executing")
	f.Owner = c.owner
	f.Stack, _ = json.Marshal(d.Ancestry())
	if err := c.st.PutFrame(context.WithoutCancel(ctx), f); err != nil {
		c.log.Warn("delegate frame's stack not recorded: hand-offs under it on other instances are not checked against it", "request", r.ID(), "frame", f.Frame, "err", err)
	}
}

// DelegateEnded implements reach.DelegateRecorder: the row Delegated wrote
// for r's delegate frame takes the frame's end (completed, cancelled,
// failed), with its stack. Queued: durable with the store's next commit;
// a kill before leaves it executing, and the recovery of this life
// settles it (cancelled). Before, it stayed executing, with no owner,
// until retention removed its request: a hand-off long over stood in the
// shared store as one that runs.
func (c *Checkpoints) DelegateEnded(ctx context.Context, r *reach.Request) {
	d := r.DelegateFrame()
	if c.owner == "" || d == nil {
		return
	}
	st := d.State()
	if !st.Done() {
		return
	}
	f := delegateRow(r, d, st.String())
	f.Owner = c.owner
	if e := d.Err(); e != nil {
		f.Error, _ = json.Marshal(e)
	}
	f.Stack, _ = json.Marshal(d.Ancestry()) // as Delegated wrote it, this frame's state final
	c.st.QueueFrame(f)
}

// delegateRow is the row of d, the delegate frame of the hand-off whose
// sub-request r is, in state.
func delegateRow(r *reach.Request, d *reach.Frame, state string) *store.Frame {
	f := &store.Frame{Request: r.ID(), Frame: d.ID.String(), Kind: "delegate", Name: d.Name, State: state, Started: d.Started}
	if d.Parent != nil {
		f.Parent = d.Parent.ID.String()
	}
	return f
}

// HandoffEnded refuses the id of a hand-off's sub-request that ended,
// named by a call as its request: begun again it would be a root of its
// own, outside its parent's budget and stops (409 request_ended).
func HandoffEnded(id, parent string) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeStopped, Code: "request_ended",
		Message:    fmt.Sprintf("Request %s was a hand-off of request %s and has ended; nothing ran.", id, parent),
		Suggestion: fmt.Sprintf("Work in request %s (reach/request, Reach-Request), or leave the request id out to begin a new request.", parent)}
}

// withIdentity sets on rec who r acts for and r's trace.
func withIdentity(rec *store.Request, r *reach.Request) *store.Request {
	rec.Principal, rec.Tenant, rec.Roles, rec.Attrs = r.Principal(), r.Tenant(), r.Roles(), r.Attributes()
	if t := r.Trace(); t != ([16]byte{}) {
		rec.Trace = hex.EncodeToString(t[:])
	}
	return rec
}

// requestOptions describes the stored request rec as it was begun.
func requestOptions(rec *store.Request) *reach.RequestOptions {
	o := &reach.RequestOptions{ID: rec.ID, Principal: rec.Principal, Tenant: rec.Tenant, Roles: rec.Roles, Attributes: rec.Attrs}
	if t, err := hex.DecodeString(rec.Trace); err == nil && len(t) == len(o.Trace) {
		copy(o.Trace[:], t) // else a new trace
	}
	return o
}

// parentID is the id of r's parent request, "" for a root.
func parentID(r *reach.Request) string {
	if p := r.Parent(); p != nil {
		return p.ID()
	}
	return ""
}

// RequestStopped implements reach.RequestRecorder: the stop is durable
// when it returns. The request is stored as stopped, with its cause, and
// stays so: its id starts no new work, after a restart too.
func (c *Checkpoints) RequestStopped(ctx context.Context, r *reach.Request, cause reach.Cause) {
	rec := c.requestRecord(r, "stopped")
	rec.Cause = EncodeCause(cause)
	if err := c.st.PutRequest(context.WithoutCancel(ctx), rec); err != nil && !errors.Is(err, store.ErrConflict) {
		c.log.Error("request stop not recorded", "request", r.ID(), "err", err)
		return
	}
	crashpoint.Reached("request.stopped")
	c.Stopped(ctx, r)
}

// RequestEnded implements reach.RequestRecorder: the end is durable when
// it returns (a restart does not undo the writes of an ended request).
func (c *Checkpoints) RequestEnded(ctx context.Context, r *reach.Request) {
	rec := c.requestRecord(r, "ended")
	rec.Ended = time.Now()
	if cause := r.StopCause(); cause != nil {
		rec.State = "stopped"
		rec.Cause = EncodeCause(*cause)
	} else if r.Fresh() && c.owner == "" && r.Undos() == 0 && len(r.Children()) == 0 {
		// A request reach made that completed with nothing a restart would
		// undo: its end is queued, durable with the store's next commit. A
		// crash before it leaves the request "running", which recovery
		// marks interrupted, and nothing else. Any other end is durable
		// when this returns: a restart never undoes an ended request.
		c.st.QueueRequest(rec)
		return
	}
	if err := c.st.PutRequest(ctx, rec); err != nil {
		c.log.Error("request end not recorded", "request", r.ID(), "err", err)
		return
	}
	crashpoint.Reached("request.ended")
}

// requestRecord is the stored record of r in state.
func (c *Checkpoints) requestRecord(r *reach.Request, state string) *store.Request {
	b, _ := json.Marshal(r.Budget())
	u, _ := json.Marshal(r.Usage())
	return withIdentity(&store.Request{ID: r.ID(), Parent: parentID(r), Scene: r.Scene(), Agent: r.Agent(), State: state,
		Budget: b, Usage: u, Started: r.Started()}, r)
}

// storedCause is a reach.Cause as the store keeps it: with its mode.
type storedCause struct {
	Mode string `json:"mode,omitempty"`
	reach.Cause
}

// EncodeCause is a stop's cause as the store keeps it: JSON, with its mode.
func EncodeCause(c reach.Cause) []byte {
	sc := storedCause{Cause: c}
	if c.Mode != reach.Running {
		sc.Mode = c.Mode.String()
	}
	b, _ := json.Marshal(sc)
	return b
}

// decodeCause reads a stored cause; what it cannot read is left zero.
func DecodeCause(b []byte) reach.Cause {
	var sc storedCause
	json.Unmarshal(b, &sc)
	if m, err := reach.ParseStopMode(sc.Mode); err == nil {
		sc.Cause.Mode = m
	}
	return sc.Cause
}

// Add implements reach.DeadLetterQueue: d is stored open, its ID "dl-<n>".
func (c *Checkpoints) Add(ctx context.Context, d *reach.DeadLetter) error {
	msg := ""
	if d.Error != nil {
		msg = d.Error.Message
	}
	// The undo's arguments as it registered them, not masked: a retry runs
	// the undo with them (Take), as a restart's compensation runs the undo
	// a checkpoint keeps. What shows a dead letter masks them.
	s := &store.DeadLetter{Request: d.Request, Frame: undoFrame(d.Key), Tool: d.Tool, Args: d.Args, Error: msg, Attempts: d.Attempts,
		Principal: d.Principal, Tenant: d.Tenant}
	if _, err := c.st.AddDeadLetter(ctx, s); err != nil {
		return err
	}
	crashpoint.Reached("deadletter.added")
	d.ID, d.State, d.Updated = deadLetterID(s.ID), reach.DeadLetterOpen, s.Updated
	return nil
}

// undoFrame is the frame an undo's idempotency key ("undo:<frame id>")
// undoes: a stored dead letter's Frame.
func undoFrame(key string) string { return strings.TrimPrefix(key, "undo:") }

// deadLetterID is the queue's id of the stored dead letter n.
func deadLetterID(n int64) string { return fmt.Sprint("dl-", n) }

// storedID reads a queue's dead letter id: "dl-<n>", or n.
func storedID(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "dl-"), 10, 64)
	return n, err == nil && n > 0
}

// List implements reach.DeadLetterQueue: the stored dead letters in state
// (the open ones with those taken), each with the call it undoes as its
// checkpoint names it.
func (c *Checkpoints) List(ctx context.Context, state reach.DeadLetterState) ([]reach.DeadLetter, error) {
	ds, err := c.listDead(ctx, state)
	if err != nil {
		return nil, err
	}
	out := []reach.DeadLetter{}
	undone := map[string]*undoneIn{} // by request
	for _, d := range ds {
		s := reach.DeadLetterState(d.State)
		if state != "" && s != state && !(state == reach.DeadLetterOpen && s == reach.DeadLetterTaken) {
			continue
		}
		in, ok := undone[d.Request]
		if !ok {
			if in, err = readUndone(ctx, c.st, d); err != nil {
				return nil, err
			}
			undone[d.Request] = in
		}
		out = append(out, *queued(d, in))
	}
	return out, nil
}

// listDead reads the stored dead letters in state, oldest first, by their
// state (the store's index): the open ones are those open and those
// taken, read in two steps, the taken ones first, so that one given back
// open in between is read twice (once kept) rather than not at all; only
// one taken in between is left out, which an action could not take
// anyway. The settled ones, which the store keeps besides, are not read
// for them (TestOpenDeadLettersReadOnly).
func (c *Checkpoints) listDead(ctx context.Context, state reach.DeadLetterState) ([]*store.DeadLetter, error) {
	if state != reach.DeadLetterOpen {
		return c.st.ListDeadLetters(ctx, string(state))
	}
	taken, err := c.st.ListDeadLetters(ctx, store.DeadTaken)
	if err != nil {
		return nil, err
	}
	open, err := c.st.ListDeadLetters(ctx, store.DeadOpen)
	if err != nil {
		return nil, err
	}
	ds := append(open, taken...)
	slices.SortStableFunc(ds, func(a, b *store.DeadLetter) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(ds, func(a, b *store.DeadLetter) bool { return a.ID == b.ID }), nil
}

// Take implements reach.DeadLetterQueue: it takes the stored dead letter
// id, in one step of the store, so that one action of any process holds
// it. With Share, the step records the life that took it, whose death
// gives it back at once (Recover).
func (c *Checkpoints) Take(ctx context.Context, id string) (*reach.DeadLetter, error) {
	n, ok := storedID(id)
	if !ok {
		return nil, fmt.Errorf("dead letter %q: %w: its ids are dl-<n>, or n", id, reach.ErrDeadLetterID)
	}
	d, err := c.st.TakeDeadLetter(ctx, n, c.owner)
	switch {
	case errors.Is(err, store.ErrConflict):
		return nil, fmt.Errorf("dead letter %s: %w", id, reach.ErrDeadLetterBusy)
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("dead letter %s: %w", id, reach.ErrNoDeadLetter)
	case err != nil:
		return nil, err
	}
	crashpoint.Reached("deadletter.taken")
	in, err := readUndone(ctx, c.st, d)
	if err != nil {
		d.State = store.DeadOpen // give it back: nothing was done
		c.st.UpdateDeadLetter(context.WithoutCancel(ctx), d)
		return nil, err
	}
	return queued(d, in), nil
}

// Settle implements reach.DeadLetterQueue: the stored dead letter takes
// d's state, note, attempts and last error.
func (c *Checkpoints) Settle(ctx context.Context, d *reach.DeadLetter) error {
	n, ok := storedID(d.ID)
	if !ok {
		return fmt.Errorf("dead letter %s: %w", d.ID, reach.ErrNoDeadLetter)
	}
	msg := ""
	if d.Error != nil {
		msg = d.Error.Message
	}
	s := &store.DeadLetter{ID: n, State: string(d.State), Note: d.Note, Error: msg, Attempts: d.Attempts}
	if err := c.st.UpdateDeadLetter(ctx, s); err != nil {
		return err
	}
	crashpoint.Reached("deadletter.settled")
	d.Updated = s.Updated
	return nil
}

// queued is the stored dead letter d as the queue shows it, with what the
// store keeps of its request (in).
func queued(d *store.DeadLetter, in *undoneIn) *reach.DeadLetter {
	undoes := ""
	if undone := in.frames[d.Frame]; undone != nil {
		undoes = undone.Name + " " + string(undone.Args)
	}
	var e *reach.Error
	if d.Error != "" {
		e = &reach.Error{Message: d.Error}
	}
	return &reach.DeadLetter{ID: deadLetterID(d.ID), Request: d.Request, Tool: d.Tool, Args: d.Args, Undoes: undoes, Error: e,
		At: d.Created, Attempts: d.Attempts, Key: "undo:" + d.Frame, Trace: in.trace, State: reach.DeadLetterState(d.State),
		Note: d.Note, Updated: d.Updated, Principal: d.Principal, Tenant: d.Tenant}
}

// Report is what Recover found and did.
type Report struct {
	// Claims are the idempotency claims that the stopped gateway left, and
	// what settling each did (see store.Idempotency.Recover).
	Claims []store.Settled
	// MayHaveRun are the calls that were executing when the gateway
	// stopped: each may or may not have taken effect.
	MayHaveRun []*store.Frame
	// Interrupted are the requests that had not ended.
	Interrupted []string
	// Stopped are the requests that were stopped and had not ended: they
	// stay stopped; their undos ran.
	Stopped []string
	// Compensated are the undos run for them, per request.
	Compensated map[string][]reach.Compensation
	// Dead are the lives of instances that died whose work this recovery
	// took over (on a store shared by several instances).
	Dead []string
	// Unreadable are the rows this recovery could not read and left in
	// the store as they are (a disk error, a hand edit): each is one
	// warning to log.
	Unreadable []BadRow
}

// BadRow is a stored row that could not be read: its table, its key, what
// was wrong and what reach did about it.
type BadRow struct {
	Table, Key, Err, Did string
}

// RecoverOptions configure Recover. A nil *RecoverOptions means all
// defaults.
type RecoverOptions struct {
	// Idempotency is the runtime's idempotency store
	// (reach.Options.Idempotency) over st's records. If nil, and st keeps
	// idempotency records, one over st with the default options: its
	// instance's claims then count as an earlier life's, as they are at
	// start.
	Idempotency *store.Idempotency
	// History, if not nil, restores each request it interrupts with its
	// frames (reach.Runtime.RestorePast), so that its graph is shown;
	// otherwise without (reach.Runtime.RestoreInterrupted).
	History *History
	// Shared, if not nil, says that other instances run on the store too
	// (internal/cluster): Recover then recovers the work of dead lives
	// only, and may run while serving: the claims they held and the
	// checkpoints they left open, and the requests whose every instance
	// is dead, each claimed by this one first (Shared.ClaimOrphans).
	Shared Shared
}

// Shared is what Recover needs of the instances that share a store.
type Shared interface {
	// Dead returns the lives ("<instance>/<life>") that died: this
	// instance's earlier lives, and any other whose heartbeat stopped.
	Dead(ctx context.Context) ([]string, error)
	// OpenFramesOf returns the checkpoints still open that owners wrote.
	OpenFramesOf(ctx context.Context, owners []string) ([]*store.Frame, error)
	// ClaimOrphans claims up to n requests whose every instance is dead,
	// for this one to recover, and returns their ids, roots first.
	ClaimOrphans(ctx context.Context, n int) ([]string, error)
	// Release drops this instance's part in a recovered request.
	Release(ctx context.Context, id string) error
	// Forget forgets a dead life whose work was recovered.
	Forget(ctx context.Context, owner string) error
}

// takenFor is how long a dead letter stays taken, on a store that several
// instances share, before a recovery gives it back: an operator's action
// on a live instance may hold it meanwhile. One whose taker (the life
// that took it, recorded with the take) died is given back at once; one
// with no taker recorded (taken before the store kept one) waits this.
const takenFor = 10 * time.Minute

// inherited is what the stored sub-request r comes back as, from the
// requests above it as they were stored before this recovery wrote any of
// them: the nearest ancestor that was stopped, whose stop was in force on r
// (a live stop reaches the sub-requests after the ancestor's own stop is
// durable: a crash in between leaves them running), or nil and whether its
// root was still running (or found interrupted) when the gateway stopped.
// A root that ended returns nil, false: r's work was part of a request that
// finished. The decision reads the records as the dead life left them
// (before, the states this recovery found, by id): recovery stores a
// stopped root ended before it reaches the sub-requests on a shared store,
// which lists roots first.
func inherited(ctx context.Context, st Store, r *store.Request, before map[string]*store.Request) (stopped *store.Request, rootRunning bool) {
	for range 64 { // delegation depth, bounded against a loop in bad records
		if r.Parent == "" {
			return nil, r.State == "running" || r.State == "interrupted" || r.State == "stopped" && r.Ended.IsZero()
		}
		p, ok := before[r.Parent]
		if !ok {
			var err error
			if p, err = st.GetRequest(ctx, r.Parent); err != nil {
				return nil, false
			}
		}
		if p.State == "stopped" {
			return p, true
		}
		r = p
	}
	return nil, false
}

// undoneIn is what the store keeps of the request a dead letter's undo
// belongs to: the checkpoints of its calls, by frame id, and its trace.
type undoneIn struct {
	frames map[string]*store.Frame
	trace  [16]byte
}

// readUndone reads the request of the stored dead letter d.
func readUndone(ctx context.Context, st Store, d *store.DeadLetter) (*undoneIn, error) {
	list, err := st.RequestFrames(ctx, d.Request)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoints of dead letter %d: %w", d.ID, err)
	}
	in := &undoneIn{frames: map[string]*store.Frame{}}
	for _, f := range list {
		in.frames[f.Frame] = f
	}
	r, err := st.GetRequest(ctx, d.Request)
	switch {
	case err == nil:
		in.trace = requestOptions(r).Trace
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("reading the request of dead letter %d: %w", d.ID, err)
	}
	return in, nil
}

// undoRequest reports whether r is a request the runtime began to run
// undos: a compensation ("<request>/compensate/<n>", agent "reach") or an
// operator's retry of a dead letter ("<request>/retry/<n>", agent
// "operator"). The store keeps no flag for it, so the id and agent the
// runtime gives them say it.
func undoRequest(r *store.Request) bool {
	for _, k := range [...]struct{ infix, agent string }{{"/compensate/", "reach"}, {"/retry/", "operator"}} {
		i := strings.LastIndex(r.ID, k.infix)
		if i > 0 && r.Parent == "" && r.Agent == k.agent && !strings.Contains(r.ID[i+len(k.infix):], "/") {
			return true
		}
	}
	return false
}

// retriedDeadLetter reads the dead letter that r, an operator's retry
// ("<request>/retry/dl-<n>-<hex>", Runtime.RetryDeadLetter), took.
func retriedDeadLetter(r *store.Request) (int64, bool) {
	if !undoRequest(r) || r.Agent != "operator" {
		return 0, false
	}
	rest, ok := strings.CutPrefix(r.ID[strings.LastIndex(r.ID, "/retry/")+len("/retry/"):], "dl-")
	n, _, cut := strings.Cut(rest, "-")
	if !ok || !cut {
		return 0, false
	}
	return storedID(n)
}

// rootOf is the id of the root request of the stored request id (itself,
// for a request with no parent), "" if a request of its tree cannot be
// read.
func rootOf(ctx context.Context, st Store, id string) string {
	for range 64 {
		r, err := st.GetRequest(ctx, id)
		if err != nil {
			return ""
		}
		if r.Parent == "" {
			return id
		}
		id = r.Parent
	}
	return ""
}

// Earlier is a Shared that can name this instance's earlier lives,
// alive by their heartbeat or not (internal/cluster).
type Earlier interface {
	Shared
	Earlier(ctx context.Context) ([]string, error)
}

// MoveEarlierEntities moves on, once at start, the entities that the
// writes left open by this instance's earlier lives write (by the keys
// their checkpoints kept, or named from their recorded arguments as
// effects.writes names them: moveWritten), before those
// lives are judged dead (the TTL) and their work recovered: a restart
// after a kill -9 knows at once that the write may have run, and a read
// another instance made while it ran is then stale, not only once the
// recovery comes. It closes nothing: the recovery does, and moves them
// on again (a read made in between is taken for stale then, as one made
// while the write ran). Moving an entity on can only make a read stale,
// so an earlier life that still runs (its lock's connection dropped)
// loses nothing by it.
func MoveEarlierEntities(ctx context.Context, sh Earlier, rt *reach.Runtime) error {
	lives, err := sh.Earlier(ctx)
	if err != nil || len(lives) == 0 {
		return err
	}
	open, err := sh.OpenFramesOf(ctx, lives)
	if err != nil {
		return fmt.Errorf("reading the open checkpoints of this instance's earlier lives: %w", err)
	}
	for _, f := range open {
		if f.Kind == "delegate" {
			continue // a hand-off's row (Delegated): it writes nothing
		}
		if err := moveWritten(ctx, rt, f); err != nil {
			return fmt.Errorf("moving on the entities checkpoint %s writes: %w", f.Frame, err)
		}
	}
	return nil
}

// moveWritten moves on the entities that f, an open checkpoint, writes:
// by the keys it kept (store.Frame.Entities), which name one named from a
// secret too; a checkpoint written before they were kept, by its
// arguments, masked as kept (an entity named from a secret is not moved
// on then).
func moveWritten(ctx context.Context, rt *reach.Runtime, f *store.Frame) error {
	if len(f.Entities) > 0 {
		return rt.MoveEntityKeys(ctx, f.Entities)
	}
	return rt.MoveWrittenEntities(ctx, f.Name, f.Args)
}

// Recover resolves what a stopped gateway left behind. Call it once at
// start, after the tools are registered and before serving. In order:
//
//   - The idempotency claims that no call of this process holds are settled
//     by their calls' checkpoints (store.Idempotency.Recover): a claim whose
//     call never started is released, so that a retry runs it; one whose
//     call started answers every retry with an error saying what happened.
//     No retry waits for a claim of the stopped gateway.
//   - The checkpoints still open are marked cancelled: those calls may have
//     run (Report.MayHaveRun).
//   - The open stored dead letters are put back in rt's queue
//     (Runtime.DeadLetters), with the store's ids ("dl-<n>").
//   - Each request that had not ended is interrupted: the undos of its
//     completed writes run, newest first, each once under its idempotency
//     key, except those that already have a stored dead letter (open,
//     retried or resolved: an operator has them), and an undo that fails is
//     dead-lettered. The idempotency key of each call that was undone then
//     answers a retry with an error (code "undone") instead of the call's
//     old result. The request is stored as interrupted, with its cause, for
//     good (store.Requests.PutRequest), and kept in rt as such
//     (Runtime.RestoreInterrupted): every call made in it, and every Begin
//     of its id, is refused with code request_interrupted.
//
// An interrupted request that ran undos (a compensation, a dead letter's
// retry) is not compensated: an undo is never undone; the request it
// compensated, if interrupted too, runs its undos again, each under its
// idempotency key, so one that ran before the stop does not run twice.
func Recover(ctx context.Context, st Store, rt *reach.Runtime, opts *RecoverOptions) (*Report, error) {
	rep := &Report{Compensated: map[string][]reach.Compensation{}}
	var idem *store.Idempotency
	var hist *History
	if opts != nil {
		idem, hist = opts.Idempotency, opts.History
	}
	if ir, ok := st.(store.IdemRecords); ok && idem == nil {
		idem = store.NewIdempotency(ir, nil)
	}
	var sh Shared
	if opts != nil {
		sh = opts.Shared
	}
	var deadLives []string
	if sh != nil {
		var err error
		if deadLives, err = sh.Dead(ctx); err != nil {
			return nil, fmt.Errorf("listing the instances that died: %w", err)
		}
	}
	if idem != nil {
		// A client that retries after a transport error sends a write the
		// kill cut off again, with a new call id: its first identical
		// retry is told so instead of running it twice (reach/cutoff.go).
		// The note is written before the claim is settled: a kill between
		// the two leaves the claim, and the next recovery notes it again
		// (before, it was noted after every claim was settled, and a kill
		// in between left no claim to note it by: the retry ran the write
		// again, TestKill38ClaimSettled in cmd/reach).
		var note store.BeforeSettle
		if rt != nil {
			dead := make(map[string]bool, len(deadLives))
			for _, l := range deadLives {
				dead[l] = true
			}
			note = func(ctx context.Context, c *store.IdemRecord, f *store.Frame) {
				if sh != nil && !dead[f.Owner] {
					return // a stale claim of a live life: its checkpoint is not recovered here
				}
				rt.NoteCutOff(c.Key, f.Name, rootOf(ctx, st, f.Request), f.Request, f.CallID, c.Args, f.Started)
			}
		}
		var settled []store.Settled
		var err error
		if sh != nil {
			settled, err = idem.RecoverOwnersTelling(ctx, deadLives, note)
		} else {
			settled, err = idem.RecoverTelling(ctx, note)
		}
		rep.Claims = settled
		if err != nil {
			return nil, fmt.Errorf("settling the idempotency claims of the previous run: %w", err)
		}
	}
	var open []*store.Frame
	var err error
	switch {
	case sh == nil:
		open, err = st.OpenFrames(ctx)
	case len(deadLives) > 0:
		open, err = sh.OpenFramesOf(ctx, deadLives)
	}
	if err != nil {
		return nil, fmt.Errorf("reading open checkpoints: %w", err)
	}
	for _, f := range open {
		if f.Kind == "delegate" {
			// The row of a hand-off a dead life made (Delegated), which
			// its end did not reach: no call that may have run, and
			// nothing it writes. Its hand-off is over with that life: the
			// row is settled so, and stands no more as one that runs.
			f.State = "cancelled"
			f.Error, _ = json.Marshal(map[string]string{"code": "interrupted",
				"message": "the gateway instance that ran this hand-off stopped while it ran"})
			if err := st.PutFrame(ctx, f); err != nil {
				return nil, fmt.Errorf("marking the row of delegate frame %s: %w", f.Frame, err)
			}
			continue
		}
		// A write of a dead life that may have run moves the entities it
		// writes on, as its claim after the tool ran would have, before its
		// checkpoint is closed: a read another instance made while it ran
		// is then stale (docs/STATE.md, Entity versions).
		if sh != nil && rt != nil {
			if err := moveWritten(ctx, rt, f); err != nil {
				return nil, fmt.Errorf("moving on the entities checkpoint %s writes: %w", f.Frame, err)
			}
		}
		f.State = "cancelled"
		f.Error, _ = json.Marshal(map[string]string{"code": "interrupted",
			"message": "the gateway stopped while this call ran: it may have run"})
		if err := st.PutFrame(ctx, f); err != nil {
			return nil, fmt.Errorf("marking checkpoint %s: %w", f.Frame, err)
		}
		rep.MayHaveRun = append(rep.MayHaveRun, f)
	}
	ds, err := st.ListDeadLetters(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	dead := map[[2]string]bool{} // request and frame of every stored dead letter
	for _, d := range ds {
		dead[[2]string{d.Request, d.Frame}] = true
	}
	running, err := interruptible(ctx, st, sh)
	if err != nil {
		return nil, err
	}
	// A retry's request that this recovery interrupts names the dead letter
	// it took: no live action holds that one, on several instances either.
	cutOff := map[int64]bool{}
	for _, r := range running {
		if n, ok := retriedDeadLetter(r); ok {
			cutOff[n] = true
		}
	}
	diedHere := make(map[string]bool, len(deadLives))
	for _, l := range deadLives {
		diedHere[l] = true
	}
	for _, d := range ds { // taken by an action that a crash cut short: nothing settled it
		if d.State == store.DeadTaken && (sh == nil || cutOff[d.ID] || diedHere[d.Taker] || time.Since(d.Updated) > takenFor) {
			d.State = store.DeadOpen
			if err := st.UpdateDeadLetter(ctx, d); err != nil {
				return nil, fmt.Errorf("putting back dead letter %d: %w", d.ID, err)
			}
		}
	}
	release := func(id string) error {
		if sh == nil {
			return nil
		}
		return sh.Release(ctx, id)
	}
	before := make(map[string]*store.Request, len(running))
	for _, r := range running {
		c := *r
		before[r.ID] = &c
	}
	for _, r := range running {
		if r.Unreadable != "" {
			// Who it acted for cannot be known: nothing runs as it (no
			// undo), its row stays as it is, and a call naming it is
			// refused as interrupted.
			rep.Unreadable = append(rep.Unreadable, BadRow{Table: "requests", Key: r.ID, Err: r.Unreadable,
				Did: "kept as it is, not recovered: its undos did not run, and a call naming it is refused"})
			cause := reach.Cause{By: "reach", Reason: "the gateway restarted while it ran, and its stored record could not be read",
				At: time.Now(), Request: r.ID}
			rt.RestoreInterrupted(&reach.RequestOptions{ID: r.ID, Principal: r.Principal, Tenant: r.Tenant}, cause)
			continue
		}
		var stoppedAbove *store.Request
		rootRunning := true
		if r.Parent != "" && r.State != "stopped" {
			stoppedAbove, rootRunning = inherited(ctx, st, r, before)
		}
		if stoppedAbove != nil {
			// An ancestor was stopped: the stop was in force on r, which
			// comes back stopped, with that cause, its undos run (below),
			// and its id never begun anew.
			r.State, r.Cause = "stopped", stoppedAbove.Cause
		}
		if !rootRunning {
			// A sub-request whose root ended: its work was part of a
			// request that finished, so nothing of it is undone.
			r.State, r.Ended = "ended", time.Now()
			if err := st.PutRequest(ctx, r); err != nil {
				return nil, err
			}
			if err := release(r.ID); err != nil {
				return nil, err
			}
			continue
		}
		comps, failed, err := undoStored(ctx, st, rt, idem, r, dead, rep)
		if err != nil {
			return nil, err
		}
		if r.State == "stopped" {
			// Stopped before the restart: it stays stopped, with its cause;
			// the restart finished its undos.
			r.Ended = time.Now()
			if err := st.PutRequest(ctx, r); err != nil {
				return nil, err
			}
			crashpoint.Reached("recovery.stopped")
			if err := release(r.ID); err != nil {
				return nil, err
			}
			rep.Stopped = append(rep.Stopped, r.ID)
			if err := stopEndedBelow(ctx, st, rt, idem, r, dead, rep, 0, before); err != nil {
				return nil, err
			}
			continue
		}
		// A compensation cut off by the kill: the request whose undos it
		// ran, stopped and ended while they ran, owes them still. Run
		// before this one is stored interrupted: a kill in between leaves
		// it to the next recovery.
		if err := undoCutOff(ctx, st, rt, idem, r, before, dead, rep); err != nil {
			return nil, err
		}
		cause := reach.Cause{By: "reach", Reason: interruptedReason(len(comps)-failed, failed), At: time.Now(), Request: r.ID}
		r.State, r.Ended = "interrupted", cause.At
		r.Cause = EncodeCause(cause)
		if err := st.PutRequest(ctx, r); err != nil {
			return nil, err
		}
		crashpoint.Reached("recovery.interrupted")
		if err := release(r.ID); err != nil {
			return nil, err
		}
		if p := hist.pastOf(r); p != nil {
			rt.RestorePast(p)
		} else {
			o := requestOptions(r)
			o.Agent, o.Scene = r.Agent, r.Scene
			rt.RestoreInterrupted(o, cause) // fails only for a request running here: none is, before serving
		}
		rep.Interrupted = append(rep.Interrupted, r.ID)
	}
	for _, owner := range deadLives {
		if err := sh.Forget(ctx, owner); err != nil {
			return nil, err
		}
	}
	rep.Dead = deadLives
	return rep, nil
}

// undoStored runs the undos of the stored request r's completed calls,
// newest first, each once under its idempotency key, but for those that
// have a stored dead letter (dead); a failed undo is dead-lettered. It
// settles the idempotency key of each call it undid, and returns the
// compensations and how many failed.
func undoStored(ctx context.Context, st Store, rt *reach.Runtime, idem *store.Idempotency, r *store.Request,
	dead map[[2]string]bool, rep *Report) (comps []reach.Compensation, failed int, err error) {
	var frames []*store.Frame
	if !undoRequest(r) {
		if frames, err = st.RequestFrames(ctx, r.ID); err != nil {
			return nil, 0, err
		}
	}
	var undos []reach.RecordedUndo
	var undone []*store.Frame // the call each undo undoes, newest first
	for _, f := range slices.Backward(frames) {
		// A write that failed after it ran (its verify) keeps its undo
		// with its end too (reach's checkpoint stage): it is undone so.
		if f.State != "completed" && f.State != "failed" || len(f.Undo) == 0 {
			continue
		}
		var u struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			Key       string          `json:"key"`
		}
		if err := json.Unmarshal(f.Undo, &u); err != nil || u.Tool == "" {
			// Silent before: the write stayed done and the request was
			// reported interrupted with nothing to undo.
			msg := "no undo tool"
			if err != nil {
				msg = err.Error()
			}
			rep.Unreadable = append(rep.Unreadable, BadRow{Table: "frames", Key: r.ID + " " + f.Frame, Err: "its undo: " + msg,
				Did: "its undo did not run: the write " + f.Name + " stays done; undo it by hand"})
			continue
		}
		if dead[[2]string{r.ID, undoFrame(u.Key)}] {
			continue
		}
		undos = append(undos, reach.RecordedUndo{Request: r.ID, Tool: u.Tool, Args: u.Arguments, Key: u.Key,
			Undoes: f.Name + " " + string(f.Args)})
		undone = append(undone, f)
	}
	if len(undos) > 0 {
		// Its undos may have run, in its compensations' requests (its
		// stop's, or a failed call's while it ran): those that completed
		// are not run again. Their keys' records would answer them, but
		// only for the idempotency TTL: a restart later than that ran them
		// again (TestLiveUndosNotRunAgainByTheRecovery; for a request
		// interrupted, not stopped, while its compensation ran,
		// TestInterruptedCompensationNotRunAgain).
		ran, err := undosRan(ctx, st, r)
		if err != nil {
			return nil, 0, err
		}
		for i := len(undos) - 1; i >= 0; i-- {
			if ran[undos[i].Tool+":"+undos[i].Key] {
				undos, undone = slices.Delete(undos, i, i+1), slices.Delete(undone, i, i+1)
			}
		}
	}
	if len(undos) > 0 {
		comps = rt.CompensateRecorded(ctx, requestOptions(r), undos)
		rep.Compensated[r.ID] = comps
	}
	for i, c := range comps {
		if !c.OK {
			failed++
			continue
		}
		if i >= len(undone) || undone[i].IdemKey == "" || idem == nil {
			continue
		}
		if err := idem.Settle(ctx, undone[i].IdemKey, undoneError(r.ID, c.Tool)); err != nil {
			return nil, 0, fmt.Errorf("settling the idempotency key of checkpoint %s: %w", undone[i].Frame, err)
		}
		crashpoint.Reached("recovery.undone")
	}
	return comps, failed, nil
}

// undosRan returns the undos of request r that completed in its
// compensations' requests ("<id>/compensate/<n>"), as their checkpoints
// keep their idempotency keys: "<undo tool>:<undo key>" (the runtime's own
// keys are not scoped to a principal). A durable record of each, which
// outlives its key's record.
//
// A compensation acts for its request's principal and tenant (effects.go;
// a recovery's for "reach" when the request kept none): a request of
// another owner whose client named it so, and named its MCP client
// "reach", is not one, and what it completed does not count as r's undos
// run (TestForgedCompensationNotTakenForUndos). A client's keys are
// scoped by its owner, so no call of one spells an undo's key today; this
// does not lean on that.
func undosRan(ctx context.Context, st Store, r *store.Request) (map[string]bool, error) {
	prefix := r.ID + "/compensate/"
	comps, err := st.ListRequests(ctx, store.RequestFilter{IDPrefix: prefix, Roots: true, Limit: 100000})
	if err != nil {
		return nil, fmt.Errorf("listing the compensations of request %s: %w", r.ID, err)
	}
	ran := map[string]bool{}
	for _, c := range comps {
		if !strings.HasPrefix(c.ID, prefix) || !undoRequest(c) || c.Agent != "reach" {
			continue // a store that does not filter by IDPrefix lists every request
		}
		if c.Tenant != r.Tenant || c.Principal != r.Principal && !(r.Principal == "" && c.Principal == "reach") {
			continue // another owner's request, named as a compensation
		}
		frames, err := st.RequestFrames(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("reading the undos of compensation %s: %w", c.ID, err)
		}
		for _, f := range frames {
			if f.State == "completed" && f.IdemKey != "" {
				ran[f.IdemKey] = true
			}
		}
	}
	return ran, nil
}

// stopEndedBelow finishes the stop of the stored request r below it: a
// live stop stores r stopped (durable), then stops each of its
// sub-requests, ended or not (a stop undoes the whole chain below it: a
// sub-agent's finished work too), which stores each stopped and runs its
// undos. A crash between r's stop and theirs leaves them as they were:
// each sub-request stored ended comes back stopped, with r's cause, its
// undos run (as the stop would have), and so on below it; one the stop
// reached before the crash is stored stopped already, and is not undone
// again. The running ones are the recovery's own (inherited). No clock is
// compared: whichever instance ended a sub-request, it is undone once.
//
// A sub-request stored stopped by r's stop that had ended (the stop's
// cancellation ended it before the stop reached it, or its end was stored
// while its stop's undos ran) owes them too: a kill before they ran left
// nothing else that finds it. On PostgreSQL no recovery claims it (it has
// no part), and on either store none lists it (it ended). Its undos run
// here, each once under its key: those its stop ran before the kill answer
// from their records and do not run again. One that this recovery handles
// itself (own: stopped and not ended) is left to it.
func stopEndedBelow(ctx context.Context, st Store, rt *reach.Runtime, idem *store.Idempotency, r *store.Request,
	dead map[[2]string]bool, rep *Report, depth int, own map[string]*store.Request) error {
	if depth >= 64 { // delegation depth, bounded against a loop in bad records
		return nil
	}
	subs, err := st.ListRequests(ctx, store.RequestFilter{Parent: r.ID, Limit: 100000})
	if err != nil {
		return fmt.Errorf("listing the sub-requests of stopped request %s: %w", r.ID, err)
	}
	for _, c := range subs {
		switch {
		case c.State == "ended":
			if _, _, err := undoStored(ctx, st, rt, idem, c, dead, rep); err != nil {
				return err
			}
			c.State, c.Cause, c.Ended = "stopped", r.Cause, time.Now()
			if err := st.PutRequest(ctx, c); err != nil {
				return err
			}
		case c.State == "stopped" && !c.Ended.IsZero() && own[c.ID] == nil && sameStop(c.Cause, r.Cause) &&
			!slices.Contains(rep.Stopped, c.ID):
			if c.Unreadable != "" {
				// As a running request's unreadable record (Recover): who
				// it acted for cannot be known, nothing runs as it.
				rep.Unreadable = append(rep.Unreadable, unreadableUndos(c, "the stop of "+r.ID+","))
				break
			}
			if _, _, err := undoStored(ctx, st, rt, idem, c, dead, rep); err != nil {
				return err
			}
		default:
			continue
		}
		rep.Stopped = append(rep.Stopped, c.ID)
		if err := stopEndedBelow(ctx, st, rt, idem, c, dead, rep, depth+1, own); err != nil {
			return err
		}
	}
	return nil
}

// undoCutOff runs the undos of the request that c, a compensation's
// request ("<request>/compensate/<n>") cut off by the kill, ran them for,
// when that request is stored stopped and ended: its end was stored while
// its stop's undos ran (a hand-off ends as soon as its stop reaches it),
// and nothing else finds it after the kill (it ended: no recovery lists
// it, and on PostgreSQL none claims it). Each runs once under its key:
// those run before the kill answer from their records. One this recovery
// handles itself (own), or has undone already (rep.Stopped), is left.
func undoCutOff(ctx context.Context, st Store, rt *reach.Runtime, idem *store.Idempotency, c *store.Request,
	own map[string]*store.Request, dead map[[2]string]bool, rep *Report) error {
	if !undoRequest(c) || c.Agent != "reach" {
		return nil
	}
	id := c.ID[:strings.LastIndex(c.ID, "/compensate/")]
	if own[id] != nil || slices.Contains(rep.Stopped, id) {
		return nil
	}
	r, err := st.GetRequest(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("reading request %s, which the cut-off compensation %s undid: %w", id, c.ID, err)
	case r.State != "stopped" || r.Ended.IsZero():
		return nil
	case r.Unreadable != "":
		// Skipped without a word before: its writes stayed done, and
		// nothing said so.
		rep.Unreadable = append(rep.Unreadable, unreadableUndos(r, "its compensation "+c.ID+", cut off by the restart,"))
		return nil
	}
	if _, _, err := undoStored(ctx, st, rt, idem, r, dead, rep); err != nil {
		return err
	}
	rep.Stopped = append(rep.Stopped, r.ID)
	return nil
}

// unreadableUndos is the report's row of r, stored stopped and ended with
// its undos owed (by), whose record cannot be read whole: who it acted for
// cannot be known, so its undos do not run.
func unreadableUndos(r *store.Request, by string) BadRow {
	return BadRow{Table: "requests", Key: r.ID, Err: r.Unreadable,
		Did: "its undos, owed by " + by + " did not run: who it acted for cannot be read, so the writes they undo stay done; undo them by hand"}
}

// sameStop reports whether the stored causes a and b are one stop's: made
// on the same request at the same time (a stop stores its cause on each
// request below it as it was made).
func sameStop(a, b []byte) bool {
	ca, cb := DecodeCause(a), DecodeCause(b)
	return ca.Request != "" && ca.Request == cb.Request && ca.At.Equal(cb.At)
}

// interruptible returns the requests a recovery interrupts: every one that
// had not ended (running, or stopped and still settling its undos and its
// calls in flight), or, on a shared store, those whose every instance is
// dead, claimed by this one.
func interruptible(ctx context.Context, st Store, sh Shared) ([]*store.Request, error) {
	if sh != nil {
		ids, err := sh.ClaimOrphans(ctx, 1000)
		if err != nil {
			return nil, err
		}
		var out []*store.Request
		for _, id := range ids {
			r, err := st.GetRequest(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("reading orphaned request %s: %w", id, err)
			}
			out = append(out, r)
		}
		return out, nil
	}
	running, err := st.ListRequests(ctx, store.RequestFilter{State: "running", Limit: 100000})
	if err != nil {
		return nil, fmt.Errorf("listing running requests: %w", err)
	}
	stopped, err := st.ListRequests(ctx, store.RequestFilter{State: "stopped", Limit: 100000})
	if err != nil {
		return nil, fmt.Errorf("listing stopped requests: %w", err)
	}
	for _, r := range stopped {
		if r.Ended.IsZero() {
			running = append(running, r)
		}
	}
	return running, nil
}

// interruptedReason is the recorded reason of an interrupted request whose
// restart undid ok of its writes and failed to undo failed of them.
func interruptedReason(ok, failed int) string {
	reason := "the gateway restarted while it ran"
	if ok > 0 {
		reason += fmt.Sprintf("; %d of its completed writes were undone", ok)
	}
	if failed > 0 {
		reason += fmt.Sprintf("; %d undos failed and wait for an operator (dead letters)", failed)
	}
	return reason
}

// undoneError answers a retry of a call that completed in request, and
// that recovery undid with the tool undo.
func undoneError(request, undo string) *reach.Error {
	return &reach.Error{Guard: "idempotency", Type: reach.TypeInterrupted, Code: "undone",
		Message: fmt.Sprintf("This call completed, but the gateway restarted before its request (%s) ended, and the restart undid it (%s).",
			request, undo),
		Suggestion: "If it must still happen, call it again with a new idempotency key, in a new request."}
}
