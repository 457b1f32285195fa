package reach

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/batch"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/deadletter"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/entities"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/template"
)

// entityTable is the runtime's table of entity versions and write locks
// (internal/entities), over its frames and requests.
type entityTable = entities.Table[*Frame, *Request]

// holder is one call that takes entity write locks (entities.Holder).
type holder = entities.Holder[*Frame, *Request]

// readVersions remembers, per request tree, the version of each entity when
// it was last read or written by that tree (entities.Seen).
type readVersions = entities.Seen

func newEntities() *entityTable {
	return entities.New(entities.DefaultMaxExact,
		func(f *Frame) *Frame { return f.Parent },
		func(r *Request) <-chan struct{} { return r.halt })
}

// state (7): a write based on a stale read is refused (or refreshed first);
// writes to one entity are serialized; deadlocks are broken (S3).
func (rt *Runtime) state(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		eff := c.tool.Effects
		if eff == nil || (len(eff.Reads) == 0 && len(eff.Writes) == 0) {
			return next(ctx, c)
		}
		s := template.NewScope(c.args, nil)
		reads, err := effects.Names(eff.Reads, s)
		if err == nil {
			var writes []string
			writes, err = effects.Names(eff.Writes, s)
			if err == nil {
				return rt.withEntities(ctx, c, next, reads, writes, rt.entityShower(c))
			}
		}
		return nil, &Error{Guard: "state", Type: TypeInvalidArgs, Code: "invalid_arguments",
			Message:    fmt.Sprintf("%s: %v.", c.Tool, err),
			Suggestion: "Give the arguments that name what this tool reads or writes."}
	}
}

// entityShower returns what shows an entity of c's (named from its real
// arguments) as the model, logs, records and views may see it: the name
// its effects' template gives from c's arguments masked by the runtime's
// Redactor (the value of an argument under a secret name, a registered
// secret), then masked as text. An entity named from a secret argument
// (acct:{token}) is shown acct:[REDACTED]. It is computed once, when first
// asked: most calls show no entity.
func (rt *Runtime) entityShower(c *Call) func(string) string {
	var once sync.Once
	var shown map[string]string
	return func(n string) string {
		once.Do(func() { shown = rt.shownEntities(c) })
		if s, ok := shown[n]; ok {
			return s
		}
		return rt.opts.Redactor.RedactString(n)
	}
}

// shownEntities maps each entity c reads or writes to its name as shown
// (entityShower).
func (rt *Runtime) shownEntities(c *Call) map[string]string {
	eff := c.tool.Effects
	named := template.NewScope(c.args, nil)
	masked := template.NewScope(rt.opts.Redactor.Redact(c.args), nil)
	shown := map[string]string{}
	for _, t := range slices.Concat(eff.Reads, eff.Writes) {
		n, err := t.Text(named)
		if err != nil {
			continue
		}
		s, err := t.Text(masked)
		if err != nil {
			s = redact.Mask // a path into a value masked whole
		}
		s = rt.opts.Redactor.RedactString(s)
		if prev, ok := shown[n]; ok && prev != n {
			continue // named by two templates: keep the one that masks
		}
		shown[n] = s
	}
	return shown
}

func (rt *Runtime) withEntities(ctx context.Context, c *Call, next Handler, reads, writes []string, show func(string) string) (*Result, error) {
	if rt.opts.Entities != nil {
		return rt.withSharedEntities(ctx, c, next, reads, writes, show)
	}
	rv := &c.req.root.reads
	ok := false // the write succeeded: its versions are the request's (set as its locks are let go)
	release, err := rt.lockWrites(ctx, c, writes, show, func(vers map[string]uint64) {
		if ok {
			for _, n := range writes {
				rv.Set(n, vers[n]) // this write's version, not one another request wrote since
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, n := range writes {
		seen, ok := rv.Get(n)
		now := rt.entities.Observe(n) // a refresh reads it at this version
		if !ok || seen == now {
			continue
		}
		if eff := c.tool.Effects; eff.Refresh != nil {
			// Re-read before the write instead of refusing (seed 004).
			before, err := rt.followup(ctx, c, eff.Refresh, nil, "refresh")
			if err != nil {
				release(false)
				return nil, err
			}
			rv.Set(n, now)
			rt.noteRefresh(c, show(n), seen, now, before)
			continue
		}
		release(false)
		return nil, entities.StaleRead(show(n), seen, now)
	}
	readAt := make([]uint64, len(reads))
	for i, n := range reads {
		readAt[i] = rt.entities.Observe(n)
	}
	res, err := next(ctx, c)
	ok = err == nil && res.Status == StatusSuccess && !res.Replayed
	if ok {
		for i, n := range reads {
			rv.Set(n, readAt[i])
		}
	}
	// A write that reached its tool may have taken effect, however it
	// ended (failed, timed out, cancelled, its result refused): its
	// entities change version, so a write based on an earlier read is
	// refused, not lost. One refused before, or replayed, did not run.
	// The request's versions of what it wrote are set as the locks are
	// let go (lockWrites' released), before a call of its that waited
	// for them looks: after, such a call found its own request's write
	// "changed since you read it".
	release(c.frame.State() == Executing)
	return res, err
}

// noteRefresh tells, in c's result, that entity n (as shown) changed from
// version seen to now since its request read it, and what the refresh read.
func (rt *Runtime) noteRefresh(c *Call, n string, seen, now uint64, before json.RawMessage) {
	w := rt.opts.Redactor.RedactString(fmt.Sprintf("%s changed since you read it (v%d -> v%d); reach read it again before writing: %s",
		entities.Words(n), seen, now, callgraph.Preview(before, 200)))
	c.frame.mu.Lock()
	c.frame.warn = append(c.frame.warn, w)
	c.frame.mu.Unlock()
}

// lockWrites takes the write locks of the entities c writes, as its root
// request (or as the request an undo writes as), and returns what
// releases them (entityTable.Lock); without writes, a release that does
// nothing. show shows c's entities (entityShower), for a deadlock's
// refusal.
func (rt *Runtime) lockWrites(ctx context.Context, c *Call, writes []string, show func(string) string, released func(map[string]uint64)) (func(bool) map[string]uint64, error) {
	if len(writes) == 0 {
		return func(bool) map[string]uint64 { return nil }, nil
	}
	root := c.req.root
	h := &holder{Root: root, Frame: c.frame, Batch: batch.From(ctx), Show: show, Released: released}
	if p := c.frame.Parent; p != nil && p.Kind == ModelFrame {
		h.Turn = p // a call its model turn asked for: one of the turn's batch
	}
	if as := root.lockAs; as != nil {
		h.Root, h.Origin, h.Batch, h.Undoes = as.Root, as.Origin, as.Batch, as.Undoes
	}
	release, err := rt.entities.Lock(ctx, h, writes)
	if err != nil {
		return nil, lockError(ctx, h, err)
	}
	return release, nil
}

// lockError is the refusal of a write whose entities' locks h could not
// take (see entityTable.Lock).
func lockError(ctx context.Context, h *holder, err error) *Error {
	if d, ok := errors.AsType[*entities.Deadlock[*Frame, *Request]](err); ok {
		o := d.Holder
		id := o.Root.id
		if o.Root.principal != h.Root.principal || o.Root.tenant != h.Root.tenant {
			id = "" // another principal's request (its id may be its client's, a customer's): not named
		}
		return d.Refusal(o.Root == h.Root, id, o.Frame.Name)
	}
	if errors.Is(err, entities.ErrHalted) {
		return (&StopError{Cause: *h.Undoes.StopCause()}).Refusal()
	}
	return asError(fault.ContextCause(ctx, "state"))
}

// followup runs an undo, verify or refresh call in the request, under the
// frame of c, and returns its data.
func (rt *Runtime) followup(ctx context.Context, c *Call, f *effects.Followup, result []byte, what string) (json.RawMessage, *Error) {
	args, err := f.Args.JSON(template.NewScope(c.args, result))
	if err != nil {
		return nil, &Error{Guard: what, Type: TypeTool, Code: what + "_failed",
			Message: fmt.Sprintf("Could not build the %s call of %s: %v.", what, c.Tool, err)}
	}
	res := rt.Call(withFrame(ctx, c.frame), &Call{ID: c.ID + "/" + what, Tool: f.Tool, Arguments: args})
	if res.IsError() {
		return nil, res.Error
	}
	return res.Data, nil
}

// effectsStage (12): on the way back from execute, a successful write is
// verified (S2) and its undo registered (S1); a failed or unverified write
// compensates the request's earlier writes in reverse order. The calls of a
// request that runs undos (a compensation, a dead letter's retry) are
// verified, but neither register undos nor compensate: an undo is not
// undone, and one that fails is dead-lettered by what runs it.
func (rt *Runtime) effectsStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		checkpointed := rt.checkpointed(c.tool)
		if !checkpointed && owesUndo(c) && c.req.owe() {
			defer c.req.paid() // see owesUndo; checkpointed, the checkpoint stage owes it
		}
		res, err := next(ctx, c)
		eff := c.tool.Effects
		write := c.tool.Access.Writes()
		if err != nil || res == nil || res.Replayed || !write {
			return res, err
		}
		undoing := c.req.root.undoing
		pushed := false // this write's undo registered
		if res.Status == StatusSuccess && eff != nil {
			if eff.Undo != nil && !undoing {
				args, terr := eff.Undo.Args.JSON(template.NewScope(c.args, res.Data))
				if terr == nil {
					pushed = true
					c.req.saga.Push(effects.Undo{Tool: eff.Undo.Tool, Args: args,
						Key: "undo:" + c.frame.ID.String(), Origin: c.Tool + " " + callgraph.Preview(c.args, 80), Frame: c.frame.ID})
					if !checkpointed && StopMode(c.req.mode.Load()) >= Cancel {
						// The request was cancelled while this write ran (the
						// tool did not stop): the stop's compensation ran
						// without it, so it is undone now. Checkpointed, it
						// is undone once its end, with its undo, is durable
						// (undoStoppedWrite).
						if done := rt.compensate(context.WithoutCancel(ctx), c.req, "stopped while "+c.Tool+" ran", c.frame); len(done) > 0 {
							res.Notes = append(res.Notes, effects.CompensationNote(done))
						}
					}
				} else {
					res.Notes = append(res.Notes, fmt.Sprintf("warning: the undo of this call could not be prepared (%v); it will not be compensated", terr))
				}
			}
			if eff.Verify != nil {
				if e := rt.verify(ctx, c, res.Data); e != nil {
					res = &Result{Status: StatusError, Error: e}
				}
			}
		}
		if res.Status == StatusError && !undoing {
			if checkpointed && pushed {
				// It ran and registered its undo, and then failed (its
				// verify): its end is recorded with its undo first, and
				// the compensation runs after (the checkpoint stage:
				// undoFailedWrite). Before, the undo ran before the end:
				// a kill in between left the write "executing", which the
				// restart answers "may have run" and does not undo,
				// though its undo had run, or had not.
				c.records().undoAfter = true
				return res, nil
			}
			if done := rt.compensate(context.WithoutCancel(ctx), c.req, c.Tool+" failed", c.frame); len(done) > 0 {
				res.Notes = append(res.Notes, effects.CompensationNote(done))
			}
		}
		return res, nil
	}
}

// owesUndo reports whether c is a write that may register an undo (not
// one that runs undos): owed while it runs (Request.owe), so that a stop
// that lands meanwhile undoes it once it completes, and the request's
// end, stopped, waits for that (recordEndOwed). Before, the end was
// stored at once, and a kill after the write completed and before its
// compensation's request began left nothing that found it: the write
// stayed done. A write whose tool ignores its cancellation is waited for
// its own time only (boundHeldEnd).
func owesUndo(c *Call) bool {
	eff := c.tool.Effects
	return eff != nil && eff.Undo != nil && c.tool.Access.Writes() && !c.req.root.undoing
}

// undoStoppedWrite undoes c, a checkpointed write whose end was just
// recorded with the undo it registered (end), if its request was stopped
// (cancel or isolate) while it ran: the stop's compensation ran without
// it. Its end is durable first: a kill before this compensation's request
// is begun leaves the write completed with its undo in a request stopped
// and not ended (its end waits: owesUndo), which the restart undoes. The
// compensation's note is added to res. pre, if not nil, is the
// compensation's request, begun before the write's end was recorded
// (lateUndo).
//
// lateUndo reports whether c's write, just completed with an undo, needs
// its compensation's request begun before its end is recorded: its
// request is stopped and its end no longer waits for the write (its tool
// ignored the stop past its time, boundHeldEnd). A kill after the write's
// end then leaves that request begun and not ended, which the restart
// finds (a compensation cut off) and runs the undos of the stopped and
// ended request for, this one among them. Before, nothing found it: the
// request was ended, and the write stayed done.
func lateUndo(c *Call, end *Checkpoint) bool {
	return len(end.Undo) > 0 && StopMode(c.req.mode.Load()) >= Cancel && c.req.endNotHeld()
}
func (rt *Runtime) undoStoppedWrite(ctx context.Context, c *Call, end *Checkpoint, res *Result, pre *undoRun) {
	if len(end.Undo) == 0 || StopMode(c.req.mode.Load()) < Cancel {
		if pre != nil {
			pre.req.End()
		}
		return
	}
	r := c.req
	if r.owe() {
		defer r.paid()
	}
	if done := rt.compensateIn(context.WithoutCancel(ctx), r, "stopped while "+c.Tool+" ran", c.frame, pre); len(done) > 0 && res != nil {
		res.Notes = append(res.Notes, effects.CompensationNote(done))
	}
}

// undoFailedWrite compensates c's request once c, a checkpointed write
// that ran, registered its undo and then failed (its verify refused, as
// in a request stopped while it ran, or not confirmed), has its end
// recorded with that undo: what effectsStage does for a failed write, once
// the end is durable. A kill before the compensation's request is begun
// leaves the write failed with its undo, which the restart undoes with
// its request (interrupted; or stopped, its end waiting for this:
// owesUndo); its request stopped and ended already (lateUndo), pre, the
// compensation's request begun before the end, is found cut off and
// finished. Each undo runs once under its key: one that ran before a kill
// is not run again. pre, if not nil, is that request.
func (rt *Runtime) undoFailedWrite(ctx context.Context, c *Call, res *Result, pre *undoRun) {
	r := c.req
	if r.owe() {
		defer r.paid()
	}
	if done := rt.compensateIn(context.WithoutCancel(ctx), r, c.Tool+" failed", c.frame, pre); len(done) > 0 && res != nil {
		res.Notes = append(res.Notes, effects.CompensationNote(done))
	}
}

func (rt *Runtime) verify(ctx context.Context, c *Call, output []byte) *Error {
	eff := c.tool.Effects
	data, e := rt.followup(ctx, c, eff.Verify, output, "verify")
	if e != nil {
		return effects.CheckFailed(c.Tool, eff.Verify.Tool, e.Message)
	}
	if why := eff.Confirms(data, c.args, output); why != "" {
		return effects.NotConfirmed(c.Tool, eff.Verify.Tool, c.tool.Verify.Condition, why, callgraph.Preview(data, 200))
	}
	return nil
}

// Compensate runs the undos the request has registered, newest first, each
// once under its own idempotency key; an undo that fails after its retries
// becomes a dead letter. It returns what ran. Compensate runs even when the
// request is stopped.
func (r *Request) Compensate(ctx context.Context, reason string) []Compensation {
	// Called from inside one of the request's calls (a tool that decides to
	// undo), the undos write as the request: that call holds its entities.
	var origin *Frame
	if f, ok := FrameFrom(ctx); ok && f.Request != nil && f.Request.root == r.root {
		origin = f
	}
	return r.rt.compensate(ctx, r, reason, origin)
}

// compensate runs r's registered undos, newest first. origin is set when it
// runs inside one of r's calls (that call's frame), which holds its entity
// locks: the undos then write as r, sharing the locks of origin and its
// callers (else they would wait for those locks forever) and of r's other
// calls that may be waiting for origin, and wait for r's other calls that
// hold the entities and provably do not, which may be writing them (see
// holder.blockedBy). If r is stopped (cancel or isolate) after such a
// compensation began, its undos no longer wait for an entity: one that
// waits, or would, fails with the stop and is dead-lettered for an
// operator, while the others still run. A compensation from outside (a
// stop, origin nil), or one that begins once r is stopped, waits for all
// of r's writes in flight.
func (rt *Runtime) compensate(ctx context.Context, r *Request, reason string, origin *Frame) []Compensation {
	if r.owe() {
		defer r.paid()
	}
	return rt.compensateOwed(ctx, r, reason, origin)
}

// compensateOwed is compensate, for a caller that noted it owed (owe) and
// notes it paid once it returns: r's end, if r is stopped, is recorded
// after it.
func (rt *Runtime) compensateOwed(ctx context.Context, r *Request, reason string, origin *Frame) []Compensation {
	return rt.compensateIn(ctx, r, reason, origin, nil)
}

// undoRun is a compensation's request begun before its undos were taken
// (beginUndos).
type undoRun struct {
	ctx context.Context
	req *Request
}

// beginUndos begins a compensation's request of r ahead of the undos it
// will run (compensateIn), or returns nil if the store refuses it: the
// compensation then begins its own, as it does otherwise.
func (rt *Runtime) beginUndos(ctx context.Context, r *Request) *undoRun {
	cctx, creq, err := rt.beginCompensation(ctx, r)
	if err != nil {
		rt.log.Warn("compensation could not begin ahead of its undo", "request", r.id, "err", err)
		return nil
	}
	return &undoRun{cctx, creq}
}

// beginCompensation begins the request in which r's undos run (see
// compensateIn).
func (rt *Runtime) beginCompensation(ctx context.Context, r *Request) (context.Context, *Request, error) {
	cctx, creq, err := rt.Begin(context.WithoutCancel(ctx), &RequestOptions{ID: r.id + "/compensate/" + newID()[4:],
		Principal: r.principal, Tenant: r.tenant, Roles: r.roles, Attributes: r.attrs, Agent: "reach", Budget: &Budget{},
		Trace: r.Trace()})
	if err == nil {
		creq.undoing = true
	}
	return cctx, creq, err
}

// compensateIn is compensateOwed, in pre, a compensation's request begun
// already (beginUndos), if not nil.
func (rt *Runtime) compensateIn(ctx context.Context, r *Request, reason string, origin *Frame, pre *undoRun) []Compensation {
	steps := r.saga.Take()
	if len(steps) == 0 {
		if pre != nil {
			pre.req.End()
		}
		return nil
	}
	// Undos run in a request of their own: the stopped or failing request
	// may refuse new work, but its compensation must still run. Its id
	// ("<request>/compensate/<n>") and agent ("reach") are how a durable
	// store knows it again after a restart: see undoing. It acts for r's
	// principal as r does (tenant, roles and attributes too, as a
	// delegation does), so that r's owner sees it, its events carry the
	// tenant, and policies judge the undos as they judged the writes. Its
	// frames are in r's trace, beside the writes they undo.
	// A store that refuses the compensation's request (down a moment, its
	// connection cut) is asked again, for up to deadLetterWait; then each
	// undo is dead-lettered, for an operator. Before, the first refusal
	// dropped the undos, taken from the saga: none ran, none was queued.
	var cctx context.Context
	var creq *Request
	var err error
	if pre != nil {
		cctx, creq = pre.ctx, pre.req
	} else {
		err = storeAgain(func() (err error) {
			cctx, creq, err = rt.beginCompensation(ctx, r)
			return err
		}, func(err error, wait time.Duration) {
			rt.log.Warn("compensation could not begin; trying again", "request", r.id, "in", wait, "err", err)
		})
	}
	if err != nil {
		rt.log.Error("compensation could not begin: its undos are dead-lettered", "request", r.id, "undos", len(steps), "err", err)
		var out []Compensation
		for i := len(steps) - 1; i >= 0; i-- {
			s := steps[i]
			dl := rt.deadLetter(r, s, &Result{Status: StatusError, Error: &Error{Guard: "execute", Type: TypeUnavailable, Code: "compensation_not_begun",
				Message:    fmt.Sprintf("The undo did not run: its compensation could not begin (%v).", err),
				Suggestion: "Retry the dead letter once the store answers again."}})
			out = append(out, Compensation{Tool: s.Tool, Undoes: s.Origin, DeadLetter: dl.ID})
		}
		return out
	}
	switch as := r.root.lockAs; {
	case as != nil:
		// r itself writes as another request (it runs undos, which register
		// none, so only its own Compensate gets here): so do these undos.
		creq.lockAs = &holder{Root: as.Root, Origin: cmp.Or(origin, as.Origin), Batch: as.Batch, Undoes: as.Undoes}
	case origin != nil:
		creq.lockAs = &holder{Root: r.root, Origin: origin, Batch: batch.From(ctx)}
		if StopMode(r.mode.Load()) < Cancel {
			creq.lockAs.Undoes = r
		}
	}
	defer creq.End()
	rt.log.Info("compensating", "request", r.id, "reason", reason, "undos", len(steps))
	var out []Compensation
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		res := rt.runUndo(cctx, s)
		comp := Compensation{Tool: s.Tool, Undoes: s.Origin, OK: !res.IsError()}
		if res.IsError() {
			dl := rt.deadLetter(r, s, res)
			comp.DeadLetter = dl.ID
		}
		out = append(out, comp)
	}
	return out
}

// errUndoUnanswered ends the context of an undo that did not answer
// within its tool's time (runUndo).
var errUndoUnanswered = errors.New("the undo did not answer in its time")

// runUndo runs the undo s in ctx, a compensation's request, and returns
// its result, waiting no longer than its tool's time (toolspec's Answers:
// its attempts with their timeouts and backoffs, and one timeout more for
// an entity's lock): then its context ends, and if it still has not
// answered (its tool ignores its context, or the lock it waits for is held
// by a write whose tool does) it fails as "may have run", so that it is
// dead-lettered and the compensation goes on. Before, such an undo held its
// compensation, and so its stopped request's end, for good: the request
// never ended, its budget and holds never settled. The call goes on
// unwatched; a later answer changes nothing (its dead letter is the
// operator's, its retry runs under the same key).
func (rt *Runtime) runUndo(ctx context.Context, s effects.Undo) *Result {
	return rt.callUndo(ctx, &Call{ID: "undo-" + s.Frame.String(), Tool: s.Tool, Arguments: s.Args, IdempotencyKey: s.Key})
}

// callUndo runs in, an undo, in ctx, a request that runs undos (a
// compensation's, a dead letter's retry), bounded as runUndo says.
func (rt *Runtime) callUndo(ctx context.Context, in *Call) *Result {
	t := rt.lookup(in.Tool)
	if t == nil {
		return rt.call(ctx, in, true) // refused at once: no such tool
	}
	bound := t.Answers()
	uctx, cancel := context.WithTimeoutCause(ctx, bound, errUndoUnanswered)
	defer cancel()
	done := make(chan *Result, 1)
	go func() { done <- rt.call(uctx, in, true) }()
	select {
	case res := <-done:
		return res
	case <-uctx.Done():
	}
	select {
	case res := <-done:
		return res // it answered as its time ran out
	default:
	}
	rt.log.Error("an undo did not answer in its time: dead-lettered as may have run", "tool", in.Tool, "key", in.IdempotencyKey, "after", bound)
	return &Result{Status: StatusError, Error: &Error{Guard: "execute", Type: TypeTransient, Code: "undo_unanswered",
		Message:    fmt.Sprintf("The undo %s did not answer within %s (its timeout, attempts and backoffs); its tool ignored its cancellation: it may have run.", in.Tool, bound),
		Suggestion: "Check whether it took effect before retrying the dead letter (a retry runs it under the same idempotency key), or dismiss it."}}
}

// deadLetterWait is how long a failed undo's dead letter (or its
// compensation's request) is asked of a store that refuses it.
var deadLetterWait = time.Minute

// storeAgain calls try until it succeeds or deadLetterWait has passed,
// waiting 100 ms after the first refusal, twice as long after each next,
// up to 2 s; retrying is told of each refusal it tries again after. It
// returns the last refusal, or nil.
func storeAgain(try func() error, retrying func(err error, wait time.Duration)) error {
	wait := 100 * time.Millisecond
	for deadline := time.Now().Add(deadLetterWait); ; {
		err := try()
		if err == nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		retrying(err, wait)
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

func (rt *Runtime) deadLetter(r *Request, s effects.Undo, res *Result) *DeadLetter {
	dl := &DeadLetter{Request: r.id, Tool: s.Tool, Args: s.Args, Undoes: s.Origin,
		Error: res.Error, At: time.Now(), Attempts: deadletter.Attempts(res.Error), Key: s.Key, Trace: r.Trace(),
		Principal: r.Root().Principal(), Tenant: r.Root().Tenant()}
	// A store that refuses the dead letter (down a moment, its connection
	// cut) is asked again, for up to deadLetterWait: dropped, the failed
	// undo would be in no queue, its write done for good with nobody told.
	// Before, the first refusal dropped it.
	err := storeAgain(func() error { return rt.dead.Add(context.Background(), dl) }, func(err error, wait time.Duration) {
		rt.log.Warn("compensation failed, and its dead letter was not stored; trying again", "request", r.id, "tool", s.Tool, "in", wait, "err", err)
	})
	if err != nil {
		rt.log.Error("compensation failed, and it could not be dead-lettered", "request", r.id, "tool", s.Tool, "err", err)
		return dl
	}
	rt.log.Warn("compensation dead-lettered", "request", r.id, "tool", s.Tool, "dead_letter", dl.ID)
	return dl
}

// DeadLetters lists the dead letters in state (all if ""), oldest first.
func (rt *Runtime) DeadLetters(ctx context.Context, state DeadLetterState) ([]DeadLetter, error) {
	return rt.dead.List(ctx, state)
}

// RetryDeadLetter runs a dead-lettered undo again (by an operator), under
// its idempotency key, and settles the dead letter: retried on success;
// open again on failure, with the new error and one more attempt. It
// returns the retry's result and the dead letter as settled. The dead
// letter is taken from the queue for the retry (DeadLetterQueue.Take): a
// second action on it meanwhile fails with ErrDeadLetterBusy.
func (rt *Runtime) RetryDeadLetter(ctx context.Context, id, by string) (*Result, *DeadLetter, error) {
	return rt.RetryDeadLetterIn(ctx, id, by, "")
}

// RetryDeadLetterIn is RetryDeadLetter by a principal of tenant: the
// retry's request is of that tenant, as its caller is (an operator of a
// tenant retries its tenant's dead letters), so that its audit events and
// the request itself are in that tenant's view and its policies apply.
func (rt *Runtime) RetryDeadLetterIn(ctx context.Context, id, by, tenant string) (*Result, *DeadLetter, error) {
	dl, err := rt.dead.Take(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	// The retry's request runs an undo (see compensate for its id and agent).
	// Its id names the dead letter: a recovery that finds it cut off gives
	// the dead letter back (internal/durable).
	cctx, creq, err := rt.Begin(ctx, &RequestOptions{ID: dl.Request + "/retry/" + dl.ID + "-" + newID()[4:], Principal: by, Tenant: tenant, Agent: "operator", Budget: &Budget{},
		Trace: dl.Trace})
	if err != nil {
		dl.State = DeadLetterOpen
		if serr := rt.dead.Settle(context.WithoutCancel(ctx), dl); serr != nil {
			rt.log.Error("dead letter not released", "dead_letter", id, "err", serr)
		}
		return nil, nil, err
	}
	creq.undoing = true
	defer creq.End()
	// Bounded as a compensation's undo is (runUndo): a tool that ignores
	// its context leaves the dead letter open again, "may have run", and
	// answers the operator. Before, the retry (and the operator's call,
	// the dead letter taken) waited for it for good.
	res := rt.callUndo(cctx, &Call{ID: "retry-" + dl.ID, Tool: dl.Tool, Arguments: dl.Args, IdempotencyKey: dl.Key})
	dl.Retried(by, !res.IsError(), res.Error)
	if err := rt.dead.Settle(context.WithoutCancel(ctx), dl); err != nil {
		return res, dl, fmt.Errorf("dead letter %s was retried, but settling it failed: %w", id, err)
	}
	rt.log.Info("dead letter retried", "dead_letter", id, "by", by, "ok", !res.IsError())
	return res, dl, nil
}

// DismissDeadLetter settles a dead letter an operator has dealt with by
// hand: it is resolved, with who dismissed it and the note. It fails with
// ErrDeadLetterBusy while another action holds it.
func (rt *Runtime) DismissDeadLetter(ctx context.Context, id, by, note string) (*DeadLetter, error) {
	dl, err := DismissDeadLetter(ctx, rt.dead, id, by, note)
	if err == nil {
		rt.log.Info("dead letter dismissed", "dead_letter", id, "by", by, "note", note)
	}
	return dl, err
}

// EntityStore keeps entity versions for runtimes that share it
// (Options.Entities): internal/store's stores are one.
type EntityStore interface {
	// EntityVersions returns the version of each entity of names; an
	// entity never written has none (0, and no entry).
	EntityVersions(ctx context.Context, names []string) (map[string]uint64, error)
	// ClaimEntities gives the entities of claims one new version and
	// returns it; a claim with Check only if its entity is still at From
	// (0: never written), else its name is returned in stale.
	ClaimEntities(ctx context.Context, claims []EntityClaim) (version uint64, stale []string, err error)
}

// EntityClaim is one entity a write claims (EntityStore.ClaimEntities).
type EntityClaim = entities.Claim

// withSharedEntities is withEntities with the versions in rt.opts.Entities.
// Before the write runs, the entities it writes that its request read are
// claimed from the versions read: one that another runtime wrote since is
// refused as a stale read (or refreshed and claimed again), and two writes
// on one read never both run. After it ran, they are claimed again (the
// others it writes set), so that a read made while it ran is stale too.
// A store that fails refuses the call: a check that cannot be made does
// not pass.
func (rt *Runtime) withSharedEntities(ctx context.Context, c *Call, next Handler, reads, writes []string, show func(string) string) (*Result, error) {
	es := &keyedEntities{es: rt.opts.Entities, show: show}
	rv := &c.req.root.reads
	release, err := rt.lockWrites(ctx, c, writes, show, nil)
	if err != nil {
		return nil, err
	}
	var claims []EntityClaim
	for _, n := range writes {
		if seen, ok := rv.Get(n); ok {
			claims = append(claims, EntityClaim{Name: n, From: seen, Check: true})
		}
	}
	claimed := make(map[string]uint64, len(claims))
	// A claim moves its entity on with nobody having written it since the
	// request read it: the request's read of it is as good at the new
	// version. Kept so, a write refused before its tool ran (a stale read
	// of another entity, a later stage) is not refused when made again
	// as a stale read of what only its own claim moved on.
	keep := func() {
		for n, v := range claimed {
			rv.Set(n, v)
		}
	}
	for refreshed := false; len(claims) > 0; refreshed = true {
		v, stale, err := es.ClaimEntities(ctx, claims)
		if err != nil {
			keep()
			release(false)
			return nil, rt.entityStoreError(ctx, c, err)
		}
		for _, cl := range claims {
			if !slices.Contains(stale, cl.Name) {
				claimed[cl.Name] = v
			}
		}
		if len(stale) == 0 {
			break
		}
		now, err := es.EntityVersions(ctx, stale)
		if err != nil {
			keep()
			release(false)
			return nil, rt.entityStoreError(ctx, c, err)
		}
		refresh := c.tool.Effects.Refresh
		if refresh == nil || refreshed {
			// No refresh, or written again since the refresh read it.
			keep()
			release(false)
			seen, _ := rv.Get(stale[0])
			return nil, entities.StaleRead(show(stale[0]), seen, now[stale[0]])
		}
		// Re-read before the write instead of refusing (seed 004), then
		// claim from the versions the refresh read at.
		before, ferr := rt.followup(ctx, c, refresh, nil, "refresh")
		if ferr != nil {
			keep()
			release(false)
			return nil, ferr
		}
		claims = claims[:0]
		for _, n := range stale {
			seen, _ := rv.Get(n)
			rv.Set(n, now[n])
			claims = append(claims, EntityClaim{Name: n, From: now[n], Check: true})
			rt.noteRefresh(c, show(n), seen, now[n], before)
		}
	}
	var readAt map[string]uint64
	if len(reads) > 0 {
		var err error
		if readAt, err = es.EntityVersions(ctx, reads); err != nil {
			keep()
			release(false)
			return nil, rt.entityStoreError(ctx, c, err)
		}
	}
	// After the tool ran, its entities are claimed again (m.claim): on a
	// checkpointed call by the checkpoint stage (10), which runs inside
	// this one (7), before its end is recorded; so a kill before this
	// claim leaves its checkpoint open, and the recovery of the dead life
	// moves them on instead (MoveWrittenEntities): a read another
	// instance made while it ran is then stale all the same. Otherwise
	// m.letGo, just below, claims them. Their locks are let go there
	// only, once the call ended: after its end is recorded and a failed
	// write's undo ran, as withEntities does.
	m := &entityMove{rt: rt, c: c, es: es, ctx: ctx, rv: rv, reads: reads, readAt: readAt, writes: writes, claimed: claimed, keep: keep, release: release}
	if rt.opts.Checkpoints != nil && rt.checkpointed(c.tool) {
		recs := c.records()
		recs.moved = m
		// The keys it claims them under go with its checkpoint, stored
		// below (stage 9 or 10): the recovery moves those on, as its
		// masked arguments cannot name one named from a secret.
		if len(writes) > 0 {
			recs.writes = make([]string, len(writes))
			for i, n := range writes {
				recs.writes[i] = es.key(n)
			}
		}
	}
	res, err := next(ctx, c)
	m.letGo(wrote(res, err))
	return res, err
}

// wrote reports whether a call's result res, err is a write that succeeded
// and ran (not replayed): the versions of what it read and wrote are then
// its request's.
func wrote(res *Result, err error) bool {
	return err == nil && res != nil && res.Status == StatusSuccess && !res.Replayed
}

// keyedEntities is the shared store as one call's entities are kept in it:
// an entity whose name is shown as it is (no secret in it) under its name;
// one named from a secret (entityShower shows it otherwise) under
// "sha256:" and the SHA-256 of its name in hex, so that the store, its
// backups and whoever reads them never hold the secret. The digest is not
// keyed: every instance must find one entity under one key, and no key is
// shared by all instances that the store does not hold; a secret with
// little entropy (a PIN) could be guessed from it, a token could not.
// Names in, names out: the caller never sees a key. Used by one call's
// goroutine at a time.
type keyedEntities struct {
	es    EntityStore
	show  func(string) string
	names map[string]string // key -> name, of the names keyed
}

// entityKey returns the key of the entity named n that shown shows so
// (keyedEntities).
func entityKey(n, shown string) string {
	if shown == n {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (k *keyedEntities) key(n string) string {
	key := entityKey(n, k.show(n))
	if key != n {
		if k.names == nil {
			k.names = map[string]string{}
		}
		k.names[key] = n
	}
	return key
}

func (k *keyedEntities) EntityVersions(ctx context.Context, names []string) (map[string]uint64, error) {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = k.key(n)
	}
	v, err := k.es.EntityVersions(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(v))
	for i, n := range names {
		if x, ok := v[keys[i]]; ok {
			out[n] = x
		}
	}
	return out, nil
}

func (k *keyedEntities) ClaimEntities(ctx context.Context, claims []EntityClaim) (uint64, []string, error) {
	keyed := slices.Clone(claims)
	for i := range keyed {
		keyed[i].Name = k.key(keyed[i].Name)
	}
	v, stale, err := k.es.ClaimEntities(ctx, keyed)
	for i, key := range stale {
		if n, ok := k.names[key]; ok {
			stale[i] = n
		}
	}
	return v, stale, err
}

// entityMove is a shared-entity write's claim after its tool ran
// (withSharedEntities), run once.
type entityMove struct {
	rt      *Runtime
	c       *Call
	es      EntityStore
	ctx     context.Context
	rv      *readVersions
	reads   []string
	readAt  map[string]uint64 // the versions of reads when the call read them
	writes  []string
	claimed map[string]uint64
	keep    func()
	release func(bool) map[string]uint64
	done    bool              // claimed (claim)
	ran     bool              // its tool ran, as claim found
	after   map[string]uint64 // the versions claim gave
}

// claim claims the entities m's call writes again once its tool ran, if
// it did, once: the checkpoint stage makes it before the call's end is
// recorded; else letGo makes it.
func (m *entityMove) claim() {
	if m.done {
		return
	}
	m.done = true
	// A write that reached its tool may have taken effect, however it
	// ended: its entities change version (see withEntities).
	m.ran = m.c.frame.State() == Executing
	if m.ran && len(m.writes) > 0 {
		crashpoint.Reached("entities.ran")
		m.after = m.claimAfter()
	}
}

// letGo ends m's call's hold of its entities, once it ended (its end
// recorded, the undo of a write that failed run): it claims them again if
// that is not done (claim), notes the versions of what the call read and
// wrote as its request's if ok (the write succeeded: wrote), and only then
// lets go of their locks, as withEntities does. A call that waited for
// them (a turn's other write of one) finds its request's own write noted,
// not "changed since you read it"; another request's write of them runs
// after the failed write's undo, which does not write over it. Before,
// the locks were let go before the claim and the note, and on a
// checkpointed call before its end and its undo.
func (m *entityMove) letGo(ok bool) {
	m.claim()
	if !m.ran {
		m.keep()
	}
	if ok {
		for _, n := range m.reads {
			m.rv.Set(n, m.readAt[n])
		}
		for n, v := range m.after {
			m.rv.Set(n, v) // this write's version, not one another request wrote since
		}
	}
	m.release(m.ran)
	if h := m.rt.lockLetGo; h != nil {
		h(m.c)
	}
}

// claimAfter claims the entities m's call writes again, after its tool
// ran, and returns the versions it gave them: the one the claim gave, or,
// for one another runtime wrote while it ran (or when the store failed),
// the one the claim before the tool gave, so that the request's next
// write of it is refused.
func (m *entityMove) claimAfter() map[string]uint64 {
	post := make([]EntityClaim, len(m.writes))
	for i, n := range m.writes {
		v, ok := m.claimed[n]
		post[i] = EntityClaim{Name: n, From: v, Check: ok}
	}
	v, stale, cerr := m.es.ClaimEntities(context.WithoutCancel(m.ctx), post)
	if cerr != nil {
		m.rt.log.Error("entity versions not moved on after a write: reads made while it ran are not seen as stale", "tool", m.c.Tool, "err", cerr)
	}
	after := make(map[string]uint64, len(m.writes))
	for _, n := range m.writes {
		switch {
		case cerr == nil && !slices.Contains(stale, n):
			after[n] = v
		default:
			// Written by another runtime while this write ran (or not
			// known): the request's next write of it is refused.
			after[n] = m.claimed[n]
		}
	}
	return after
}

// MoveEntityKeys gives the entities of keys, as the shared entity store
// (Options.Entities) keeps them (a name, or "sha256:" and the digest of one
// named from a secret: Checkpoint.Entities), a new version: for the
// recovery of a call cut off while it may have run, whose checkpoint kept
// the keys of what it writes. It does nothing without a shared entity
// store or keys.
func (rt *Runtime) MoveEntityKeys(ctx context.Context, keys []string) error {
	es := rt.opts.Entities
	if es == nil || len(keys) == 0 {
		return nil
	}
	claims := make([]EntityClaim, len(keys))
	for i, k := range keys {
		claims[i] = EntityClaim{Name: k}
	}
	_, _, err := es.ClaimEntities(ctx, claims)
	return err
}

// MoveWrittenEntities gives the entities that a call of tool with args
// writes (its effects' writes) a new version in the shared entity store
// (Options.Entities), as the write's claim after its tool ran does: for
// the recovery of a call cut off by a crash while it may have run (its
// checkpoint left open), so that a read another runtime made while it ran
// is stale all the same. It does nothing without a shared entity store,
// for a tool not registered or that declares no writes, and for arguments
// that do not name them: an entity named from what the checkpoint keeps
// masked (a secret argument) is not moved on, as its name there is not its
// name (and its key is a digest of the real name: keyedEntities; a
// checkpoint that kept its keys is recovered by MoveEntityKeys); one
// that is masked only when shown is moved on under its digest, as a call
// keeps it.
func (rt *Runtime) MoveWrittenEntities(ctx context.Context, tool string, args []byte) error {
	es := rt.opts.Entities
	if es == nil {
		return nil
	}
	t := rt.lookup(tool)
	if t == nil || t.Effects == nil || len(t.Effects.Writes) == 0 {
		return nil
	}
	names, err := effects.Names(t.Effects.Writes, template.NewScope(args, nil))
	if err != nil || len(names) == 0 {
		return nil
	}
	claims := make([]EntityClaim, 0, len(names))
	for _, n := range names {
		if !strings.Contains(n, redact.Mask) { // named from what the checkpoint masked: not this entity
			// Under the key a call of it uses (keyedEntities): a name
			// that reads as holding a secret only as a whole
			// ("token:Tk-42") is masked when shown, so kept by its digest.
			claims = append(claims, EntityClaim{Name: entityKey(n, rt.opts.Redactor.RedactString(n))})
		}
	}
	if len(claims) == 0 {
		return nil
	}
	_, _, err = es.ClaimEntities(ctx, claims)
	return err
}

// entityStoreError refuses a call whose entity versions the store could
// not read or claim.
func (rt *Runtime) entityStoreError(ctx context.Context, c *Call, err error) error {
	if ctx.Err() != nil {
		return asError(fault.ContextCause(ctx, "state"))
	}
	return &Error{Guard: "state", Type: TypeUnavailable, Code: "state_unavailable",
		Message:    rt.opts.Redactor.RedactString(fmt.Sprintf("%s was not run: the versions of what it reads and writes could not be checked (%v).", c.Tool, err)),
		Suggestion: "Try again in a moment; if it keeps failing, tell the operator that reach's store is unreachable."}
}
