package reach

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/idempotency"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/loops"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/records"
	"github.com/agentreach/reach/internal/retry"
)

// Call is one tool call. Callers set the exported fields; the runtime sets
// the rest as the call moves down the chain. Middleware must not modify a
// *Call it is given.
type Call struct {
	ID             string          `json:"call_id"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"` // if empty, writes derive one from the request and call id
	Why            string          `json:"why,omitempty"`             // the caller's reason (plan, criterion), recorded with the frame

	req       *Request
	parent    *Frame
	frame     *Frame
	tool      *tool
	args      []byte       // canonical arguments
	masked    []byte       // the result's data as the shape stage masked and shaped it
	key       string       // idempotency key in force
	idemRec   string       // the key of its idempotency record (a caller's scoped to the root's principal and tenant)
	recs      *callRecords // its idempotency claim and checkpoints, once it has one
	claimed   bool         // its "executing" checkpoint (recs.executing) was made durable by the idempotency claim
	sysKey    bool         // IdempotencyKey is the runtime's own (an undo's, a dead letter's): unique, not scoped
	ran       bool         // its tool was started (execute's first attempt began)
	budgetDue bool         // the admit stage found its tool-call budget spent and let it on to its own key's record (admitDue)
	asked     bool         // the admit stage found its tool-call budget spent and let it on uncounted: it was asked for approval before (ApprovalFinder)
	stepped   bool         // the loop guard admitted it: lstep is its record (the bools side by side keep Call in a smaller size class: TestCallSizeClass)
	cutRun    *IdemClaim   // a write with a derived key among the writes running (cutoff.go): its claim, whose Args name it; else nil
	fwdKey    string       // the caller's key, passed on to the tool when an approval's key replaced it
	toolKey   string       // the key the tool is given, "tool:"+fwdKey, when fwdKey is set
	started   time.Time
	lstep     loops.Step
	passes    passes   // through the circuit breakers, for the first attempt
	detached  detached // the call's context without its cancellation, for what outlives it (its record, its ended checkpoint)
}

// Request returns the request the call belongs to.
func (c *Call) Request() *Request { return c.req }

// Frame returns the call's frame, or nil before the graph stage made it.
func (c *Call) Frame() *Frame { return c.frame }

// Parent returns the frame the call nests under, or nil at the top.
func (c *Call) Parent() *Frame { return c.parent }

// Access returns the access level of the call's tool ("" before resolve).
func (c *Call) Access() Access {
	if c.tool == nil {
		return ""
	}
	return c.tool.Access
}

// Tags returns the tags of the call's tool.
func (c *Call) Tags() []string {
	if c.tool == nil {
		return nil
	}
	return c.tool.Tags
}

// CountedWhenAsked reports whether the call is one a human was asked to
// approve, collected by a retry: let on past its request's spent
// tool-call budget (its tool call was counted when it was asked), or
// running under its approval. A shared ledger counts it without its cap.
func (c *Call) CountedWhenAsked() bool {
	return c.asked || c.sysKey && strings.HasPrefix(c.IdempotencyKey, "approval:")
}

// Args returns the canonical arguments (nil before validate).
func (c *Call) Args() json.RawMessage { return c.args }

// Call dispatches one tool call through the chain and returns its result,
// never nil. The call nests under the frame in ctx (a model call, or the tool
// call whose Func is running); ctx must carry a request (see Begin).
func (rt *Runtime) Call(ctx context.Context, in *Call) *Result { return rt.call(ctx, in, false) }

// call is Call; sys says that in.IdempotencyKey is the runtime's own (an
// undo's, a dead letter's), which only the runtime can say: a copied *Call
// does not carry it.
func (rt *Runtime) call(ctx context.Context, in *Call, sys bool) *Result {
	c := &Call{ID: in.ID, Tool: in.Tool, Arguments: in.Arguments, IdempotencyKey: in.IdempotencyKey, Why: in.Why, sysKey: sys}
	c.req, c.parent = position(ctx)
	c.detached.ctx = ctx
	c.started = time.Now()
	if c.req == nil {
		return &Result{CallID: c.ID, Status: StatusRefused, Error: fault.NoRequest()}
	}
	if !rt.calls.enter(sys) {
		// The gateway stops: nothing of the call is recorded, its store
		// closing (drain.go).
		return &Result{CallID: c.ID, Status: StatusRefused, Error: shuttingDown()}
	}
	defer rt.calls.exit()
	res, err := rt.chain(ctx, c)
	return rt.finishCall(ctx, c, res, err)
}

// finishCall settles the frame's final state, tells the loop guard and the
// recorder (stage 14), and turns a refusal into a Result.
func (rt *Runtime) finishCall(ctx context.Context, c *Call, res *Result, err error) *Result {
	f := c.frame
	if f == nil {
		// Refused before the graph stage: still a frame in the graph.
		f = rt.newToolFrame(ctx, c)
		c.req.addFrame(f)
	}
	res, st := records.Settle(res, err)
	if w := f.Warnings(); len(w) > 0 {
		res.Notes = append(res.Notes, w...)
	}
	if note := rt.noteRefusals(c, st, res.Error); note != "" {
		res.Notes = append(res.Notes, note)
	}
	rt.redactResult(res, c.masked)
	if st == Completed {
		f.mu.Lock()
		f.result = res.Data
		f.mu.Unlock()
	}
	if res.Replayed {
		f.replayed.Store(true)
	}
	f.finish(st, res.Error, res.Summary)
	res.CallID = c.ID
	res.Frame = f.ID
	rt.loopDone(c, res, err)
	rt.record(&c.detached, f)
	return res
}

// redactResult masks secrets in everything the model will read and the
// frame keeps: the data (unless it is masked, the data the shape stage
// masked and left as it is), the summary, the notes and the error.
func (rt *Runtime) redactResult(res *Result, masked []byte) {
	rd := rt.opts.Redactor
	if res.Data != nil && !sameBytes(res.Data, masked) {
		res.Data = rd.Redact(res.Data)
	}
	res.Summary = rd.RedactString(res.Summary)
	for i, n := range res.Notes {
		res.Notes[i] = rd.RedactString(n)
	}
	res.Error = rt.redactError(res.Error)
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

func (rt *Runtime) newToolFrame(ctx context.Context, c *Call) *Frame {
	f := &Frame{ID: newFrameID(), Kind: ToolFrame, Name: c.Tool, Args: c.args, CallID: c.ID,
		Agent: c.req.agent, Parent: c.parent, Request: c.req, Depth: 1, Started: c.started, why: rt.opts.Redactor.RedactString(c.Why)}
	if f.Args == nil && json.Valid(c.Arguments) {
		f.Args = c.Arguments
	}
	if c.tool != nil {
		f.upstream = c.tool.Upstream
	}
	if c.parent != nil {
		f.Depth = c.parent.Depth + 1
		f.mark.Filter = c.parent.mark.Filter
	} else {
		f.remote = remoteParent(ctx, c.req)
	}
	return f
}

// buildChain composes the stages once, in the documented order.
func (rt *Runtime) buildChain() Handler {
	exec := Chain(rt.execute, rt.opts.Middleware...)
	return Chain(exec,
		rt.admit,         // 1
		rt.resolve,       // 2
		rt.validate,      // 3
		rt.graph,         // 4
		rt.loopGuard,     // 5
		rt.authorize,     // 6
		rt.state,         // 7
		rt.rateLimit,     // 8
		rt.idempotency,   // 9
		rt.fallbackStage, // reads, on the way back: a fallback answers a transient failure
		rt.checkpoint,    // 10
		rt.shapeStage,    // 13, on the way back
		rt.effectsStage,  // 12, on the way back from 11
		rt.breakerStage,  // 11, first: an open breaker fails the call at once
	)
}

// admit (1): the request is running and within its budgets.
func (rt *Runtime) admit(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		depth := 1
		if c.parent != nil {
			depth = c.parent.Depth + 1
		}
		if e := rt.admitFrame(ctx, c.req, depth); e != nil {
			return nil, e
		}
		if q, detail := c.req.meter.AdmitToolCall(); q != nil {
			if rt.askedBefore(ctx, c) {
				// Its approval was asked when it was admitted, and its
				// tool call counted then: collecting it (a human may
				// have approved it since) needs no budget again. The
				// authorize stage counts it after all if it turns out
				// not to need that approval.
				c.asked = true
				return next(ctx, c)
			}
			if c.IdempotencyKey == "" || c.sysKey {
				return nil, budgetError("tool_calls", c.req, q, detail)
			}
			// A retry by the caller's own key (sent again while the
			// first call still runs, or after it ended) is answered by
			// the key, which needs no budget: it is counted only if it
			// is to run (admitDue), in the idempotency stage, or before
			// a human is asked to approve it.
			c.budgetDue = true
		}
		return next(ctx, c)
	}
}

// askedBefore reports whether c, refused by its spent tool-call budget,
// was asked for approval before and the approval stands (ApprovalFinder):
// its arguments, normalized here for the look only (the validate stage
// normalizes and checks them for the call), name the approval.
func (rt *Runtime) askedBefore(ctx context.Context, c *Call) bool {
	f, ok := rt.opts.Approver.(ApprovalFinder)
	if !ok || c.sysKey {
		return false
	}
	raw := c.Arguments
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	args, _, err := callgraph.NormalizeArguments(nil, raw)
	if err != nil {
		return false
	}
	c.args = args
	return f.Asked(ctx, c)
}

// admitDue counts c's tool call, if the admit stage let it on uncounted
// (budgetDue): at the idempotency stage, once its key was claimed and c is
// to run; before a human is asked to approve it, who must not be asked
// for a call its budget refuses. It returns the budget's refusal, and
// the call does not run.
func (c *Call) admitDue() *Error {
	if !c.budgetDue {
		return nil
	}
	if q, detail := c.req.meter.AdmitToolCall(); q != nil {
		return budgetError("tool_calls", c.req, q, detail)
	}
	c.budgetDue = false
	return nil
}

// resolve (2): the tool exists.
func (rt *Runtime) resolve(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		c.tool = rt.lookup(c.Tool)
		if c.tool == nil {
			if f := rt.opts.Missing; f != nil {
				if e := f(c.Tool); e != nil {
					e.Guard = "resolve"
					return nil, e
				}
			}
			e := refuse("resolve", TypeNotFound, "unknown_tool",
				fmt.Sprintf("There is no tool named %q.", c.Tool),
				"Call one of the tools you were given, with its exact name.")
			e.Alternatives = names.Closest(c.Tool, rt.callable(c), 3)
			return nil, e
		}
		return next(ctx, c)
	}
}

// callable returns the names of the tools c's caller could call: an
// unknown name's closest ones are named to the model, and a tool the
// listing hides from it (forbidden, or one no policy could let it call: a
// Lister's answer), which never runs for it, is no tool to use instead.
func (rt *Runtime) callable(c *Call) iter.Seq[string] {
	ls, _ := rt.opts.Authorizer.(Lister)
	return func(yield func(string) bool) {
		for n := range rt.tools.Names() {
			t := rt.lookup(n)
			if t == nil || t.Access == Forbidden || ls != nil && !ls.Lists(c, t.Tool) {
				continue
			}
			if !yield(n) {
				return
			}
		}
	}
}

// validate (3): arguments are a JSON object matching the schema; they are
// normalized for every later stage.
func (rt *Runtime) validate(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		raw := c.Arguments
		if len(bytes.TrimSpace(raw)) == 0 {
			raw = []byte("{}")
		}
		args, names, err := callgraph.NormalizeArguments(make([]byte, 0, len(raw)), raw)
		if de, ok := errors.AsType[*callgraph.DepthError](err); ok {
			// Valid JSON, maybe: refused for its depth, which no check
			// reads past.
			return nil, &Error{Guard: "validate", Type: TypeInvalidArgs, Code: "invalid_arguments",
				Message: fmt.Sprintf("The arguments of %s nest too deep: they hold a value inside more than %d arrays and objects (at byte %d), deeper than reach reads arguments, so the call was not run.",
					c.Tool, callgraph.MaxDepth, de.Offset),
				Suggestion: fmt.Sprintf("Send arguments nested at most %d deep: flatten the deep part (a list of items rather than items inside items), and call it again.", callgraph.MaxDepth)}
		}
		if err != nil {
			return nil, &Error{Guard: "validate", Type: TypeInvalidArgs, Code: "invalid_arguments",
				Message:    fmt.Sprintf("The arguments of %s are not valid JSON: %v.", c.Tool, err),
				Suggestion: "Send the arguments as one JSON object."}
		}
		c.args = args
		// A forbidden tool never runs, whatever its arguments: the model
		// is told so at once, not first asked to mend fields of a call it
		// may not make.
		if c.tool.Access != Forbidden {
			if twins := names.Twins; twins != nil {
				// Checks and policies read "path", a tool that binds
				// its arguments as encoding/json does reads "PATH":
				// the call would run other arguments than were allowed.
				return nil, &Error{Guard: "validate", Type: TypeInvalidArgs, Code: "invalid_arguments",
					Message: fmt.Sprintf("The arguments of %s name one member twice, as %q and %q (one name in two cases): a tool may read both as one, and reach cannot tell which value it would use.",
						c.Tool, twins.A, twins.B),
					Suggestion: "Send each member once, spelled as the tool's schema spells it."}
			}
			if e := c.tool.ValidateNames(args, names.Fold); e != nil {
				return nil, e
			}
		}
		return next(ctx, c)
	}
}

// graph (4): no cycle and no broken reentrancy contract among the
// ancestors. The frame is made here, with the hashes of its stack, so the
// check costs two bit tests unless a hash may match.
func (rt *Runtime) graph(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		t := c.tool
		f := rt.newToolFrame(ctx, c)
		f.mark.Tool(t.Name, c.args, t.Reentrancy, t.Key)
		c.frame = f
		c.req.addFrame(f)
		c.req.meter.NoteDepth(f.Depth)
		if t.OnViolation != Allow {
			if hit, e := callgraph.CheckTool(node, f, t.Reentrancy, t.Key, t.NameHash); e != nil {
				f.mu.Lock()
				f.cycleTo = hit
				f.mu.Unlock()
				if t.OnViolation == Refuse {
					return nil, e
				}
				w := rt.opts.Redactor.RedactString("warning: " + e.Message)
				f.mu.Lock()
				f.warn = append(f.warn, w)
				f.mu.Unlock()
			}
		}
		f.mark.Seal(t.NameHash)
		f.setState(Validating)
		return next(ctx, c)
	}
}

// stoppedWaiting is what a call that waited for an approval in r ends
// with once a stop is in force on r or a request above it: the stop's
// refusal, where it waited (guard authorize); nil when nothing stopped r.
// The call's own answer (authorize) and the approval's expiry, which the
// stop brings too (Request.SettleAwaiting), both end the frame with it,
// so that whichever comes first, the frame says it was stopped.
func stoppedWaiting(r *Request) *Error {
	cause := r.stopped()
	if cause == nil {
		return nil
	}
	e := (&StopError{Cause: *cause}).Refusal()
	e.Guard = "authorize"
	return e
}

// authorize (6): the Authorizer decides.
func (rt *Runtime) authorize(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		c.frame.setState(Authorizing)
		d, e := rt.opts.Authorizer.Authorize(ctx, c)
		if c.asked && (d != NeedsApproval || rt.opts.Approver == nil) {
			// Let on past its spent budget for an approval it no longer
			// needs: counted as any other call, and refused so.
			c.asked, c.budgetDue = false, true
			if e := c.admitDue(); e != nil {
				return nil, e
			}
		}
		switch {
		case d == Permit && e == nil:
			return next(ctx, c)
		case d == NeedsApproval && rt.opts.Approver != nil:
			if e := c.admitDue(); e != nil {
				return nil, e // no human asked to approve what its budget refuses
			}
			c.frame.setState(AwaitingApproval)
			// A stop, even a soft one, ends the wait: after it, nothing
			// the approval lets through would start (execute refuses it).
			// Kept where a stop looks: the runtime of the request, which
			// may not be this one (a request's context handed on).
			actx, done := c.req.rt.awaiting.until(ctx, c.req)
			d, e = func() (Decision, *Error) {
				defer done() // an approver that panics lets go of the wait too
				return rt.opts.Approver.Approve(actx, c)
			}()
			if d == NeedsApproval {
				if e := stoppedWaiting(c.req); e != nil {
					return nil, e
				}
			}
			switch {
			case d == Permit:
				c.frame.setState(Authorizing)
				// An approved call runs once: the approval's id is its
				// idempotency key, so a retry returns the recorded result.
				// The caller's own key gives way: with a new key for every
				// retry, one approval would let any number of runs through.
				if key := rt.opts.ApprovalKey; key != nil {
					if id := key(c); id != "" {
						if c.IdempotencyKey != "" && !c.sysKey {
							c.fwdKey = c.IdempotencyKey // the tool still sees the caller's key
						}
						c.IdempotencyKey, c.sysKey = "approval:"+id, true // approval ids are unique
					}
				}
				return next(ctx, c)
			case d == NeedsApproval:
				if e == nil {
					e = &Error{Code: "approval_pending", Message: fmt.Sprintf("%s is waiting for approval.", c.Tool),
						Suggestion: "Tell the user it waits for a human's approval, and call it again with the same arguments once it is approved."}
				}
				e.Guard, e.Type = "authorize", TypeApproval
				return &Result{Status: StatusPending, Error: e}, nil
			case e != nil:
				e.Guard = "authorize"
				return nil, e
			}
			return nil, rt.denied(c, "the approver denied it")
		case d == NeedsApproval:
			c.frame.setState(AwaitingApproval)
			return nil, &Error{Guard: "authorize", Type: TypeApproval, Code: "approval_required",
				Message: fmt.Sprintf("%s is a %s tool and needs a human's approval, and no approver is configured here.",
					c.Tool, c.tool.Access),
				Suggestion: "Tell the user what you want to do and ask them to do it or approve it; do not retry."}
		case e != nil:
			e.Guard = "authorize"
			if e.Type == "" {
				e.Type = TypePermission
			}
			return nil, e
		default:
			return nil, rt.denied(c, "")
		}
	}
}

// denied builds a permission refusal that names permitted alternatives.
func (rt *Runtime) denied(c *Call, why string) *Error {
	msg := fmt.Sprintf("You may not call %s.", c.Tool)
	if why != "" {
		msg = fmt.Sprintf("You may not call %s: %s.", c.Tool, why)
	}
	e := &Error{Guard: "authorize", Type: TypePermission, Code: "denied", Message: msg,
		Suggestion: "Use a permitted tool, or ask the user to request access."}
	e.Alternatives = rt.tools.Alternatives(c.tool)
	return e
}

// accessLevels is the default Authorizer: by access level only.
type accessLevels struct{}

func (accessLevels) Authorize(_ context.Context, c *Call) (Decision, *Error) {
	switch c.Access() {
	case Read, Write:
		return Permit, nil
	case HighRisk:
		return NeedsApproval, nil
	}
	return Deny, nil
}

// rateLimit (8): token buckets, global and per principal.
func (rt *Runtime) rateLimit(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if wait, scope := rt.limits.Allow(c.req.principal, int(c.req.priority)); wait > 0 {
			e := refuse("limit", TypeRateLimit, "rate_limited",
				fmt.Sprintf("Too many calls (%s rate limit).", scope),
				"Wait and retry, or do fewer calls.")
			e.RetryAfter = wait
			return nil, e
		}
		return next(ctx, c)
	}
}

// idempotency (9): writes (and calls given a key) run once per key; a
// repeat returns the recorded result. Concurrent repeats wait for the first.
func (rt *Runtime) idempotency(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		if c.IdempotencyKey == "" && (!c.tool.Access.Writes() || c.ID == "") {
			return next(ctx, c)
		}
		var key, skey string
		skey, c.key, key = idemKeys(c)
		for a := c.parent; a != nil; a = a.Parent {
			if a.Kind == ToolFrame && a.idem == c.key {
				// Waiting for our own ancestor would never end.
				return nil, idempotency.InUse(a.Name, a.Depth)
			}
		}
		c.idemRec = skey
		var claim *IdemClaim
		if rt.checkpointed(c.tool) {
			recs := c.records() // with the checkpoints
			claim = &recs.claim
			recs.executing = executingRecord(c)
			*claim = IdemClaim{Request: c.req.id, Frame: c.frame.ID, Checkpoint: &recs.executing}
		} else {
			claim = new(IdemClaim)
		}
		claim.Key, claim.Args, claim.Lease = skey, argsDigest(c.args), c.tool.Lease()
		derived := c.IdempotencyKey == "" && !c.sysKey // a retry of a cut-off write has a new one (cutoff.go)
		cutID := cutOffID{skey[:len(skey)-len(c.key)], c.Tool, claim.Args}
		if derived && rt.cutOffs.mayHave() {
			if w, ok := rt.cutOffs.takeHere(cutID, c.req.root.id, c.req.root.started); ok {
				if w.inFlight {
					return notDispatched(c, inFlightRefusal(c.Tool, w.request, w.began))
				}
				if w.told {
					// Another retry, told it now, answers for it.
					return notDispatched(c, w.refusal())
				}
				// Its key claimed before the write is taken from the store:
				// a kill before the refusal is answered leaves the claim,
				// and its recovery notes the write cut off again.
				claimed := false
				if rt.cutOffs.store != nil && !w.running {
					_, claimed, _ = rt.idem.Claim(ctx, claim)
				}
				rt.cutOffs.untake(ctx, cutID, &w)
				res := w.refusal()
				if claimed {
					res = rt.cutOffRefused(c, claim, skey, w)
				}
				rt.cutOffs.release(cutID, &w) // its refusal made: the next call runs
				return notDispatched(c, res)
			}
			if rt.cutOffs.shared {
				// A shared store's cut-off writes: looked for by the claim's
				// own statement where the store can (look).
				claim.CutOff, claim.Root = storeKey(cutID.scope, cutID.key()), c.req.root.id
			}
		}
		rec, claimed, err := rt.idem.Claim(ctx, claim)
		if claim.CutOff != "" && err == nil && claimed {
			if w, ok := rt.cutOffs.look(ctx, cutID, claim, c.req.root.id, c.req.root.started, c.req.id, c.ID); ok {
				res := rt.cutOffRefused(c, claim, skey, w)
				rt.cutOffs.store.TakeCutOff(context.WithoutCancel(ctx), claim.CutOff, c.req.id, c.ID) // handed over to this call: answered now
				return notDispatched(c, res)
			}
			if claim.InFlight && claim.InFlightRoot == c.req.root.id {
				// An identical write still runs (its caller may have gone
				// and no instance has noticed yet): not run a second time.
				return notDispatched(c, rt.inFlightRefused(c, claim, skey))
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, asError(fault.ContextCause(ctx, "idempotency"))
			}
			if errors.Is(err, ErrIdempotencyKeyReused) {
				return nil, idempotency.Reused(&idempotency.Call{ID: c.ID, Root: c.req.root.id, Tool: c.Tool, Key: key, Own: c.IdempotencyKey != ""})
			}
			// The store's own text is logged, not told to the model.
			rt.log.Warn("idempotency claim not recorded; call refused", "request", c.req.id, "call", c.ID, "tool", c.Tool, "err", err)
			return nil, idempotency.Unreadable(err)
		}
		if !claimed {
			return notDispatched(c, rec.Replay())
		}
		if e := c.admitDue(); e != nil {
			// Its key had no record and no call running: it would run,
			// and its budget is spent.
			rt.refuseClaimed(c, claim, skey, nil, e)
			return nil, e
		}
		c.frame.idem = c.key
		if claim.Checkpointed && c.recs != nil && claim.Checkpoint == &c.recs.executing {
			c.claimed = true
		}
		if derived {
			rt.cutOffs.start(cutID, ctx, c.req.root.id, c.frame.Started, c.req.id, c.ID)
			c.cutRun = claim
		}
		res, err := next(ctx, c)
		if derived {
			// Its caller went away while its tool ran: it may have taken
			// effect, and no one will read this answer.
			rt.cutOffs.end(ctx, cutID, c.req.id, c.ID, err != nil && c.ran && ctx.Err() != nil)
		}
		// An approved call's record keeps a failure too: the approval was
		// for one run, and a retry must not run it again. So does a run cut
		// off while its tool ran (cancelled, isolated): the tool may have
		// done its work, and each retry would have run it once more under
		// the one approval. A run under the caller's own key cut off so is
		// recorded too: the key says "this same write", and the write may
		// have been done; a failure that surely was not (nothing sent, a
		// refusal, the tool's error answer) lets the key go, and a retry
		// runs.
		approved := strings.HasPrefix(key, "approval:")
		once := approved && err == nil && res.Status == StatusError
		switch {
		case err == nil && (res.Status == StatusSuccess || once):
			rec := *res // the caller's copy is settled further up; the record must not change
			rec.Notes = slices.Clone(res.Notes)
			rt.idem.Complete(skey, &rec)
		case approved && err != nil && c.ran:
			rt.idem.Complete(skey, cutOff(c, err))
		case !c.sysKey && c.IdempotencyKey != "" && err != nil && c.ran:
			rt.idem.Complete(skey, cutOffOwnKey(c, key, err))
		default:
			rt.idem.Complete(skey, nil)
		}
		return res, err
	}
}

// notDispatched is the answer res of the idempotency stage to c, a call it
// answered for the call with c's key that was made before (its recorded
// result, or the word that it still runs or was cut off): nothing was
// dispatched, so the tool call the admit stage counted is given back, as
// the shared ledger, debited only as a call is dispatched, never counts it.
// A client that retries a call by its key, as it is told to, spends its
// request's tool-call budget once.
func notDispatched(c *Call, res *Result) (*Result, error) {
	if !c.budgetDue && !c.asked { // else its budget was spent, and it was never counted
		c.req.meter.GiveBackToolCall()
	}
	return res, nil
}

// cutOff is the record of an approved call whose run err cut off after
// its tool was started: what a retry is answered, instead of a second run.
// It has the shape of the record recovery leaves for a call a restart cut
// off (the error interrupted, status error, docs/STATE.md), the same case:
// not the cut-off run's status (cancelled) or its error's retry hints
// (a breaker's retry_after), which the retry, answered so for as long as
// the approval is remembered, would take for its own.
func cutOff(c *Call, err error) *Result {
	cause := fault.As(err)
	return &Result{Status: StatusError, Error: &Error{Guard: "idempotency", Type: TypeInterrupted, Code: "interrupted",
		Message: fmt.Sprintf("The approved run of %s was cut off while the tool ran (%s); it may have done its work. Its approval was for that one run, and reach does not run it again.",
			c.Tool, strings.TrimSuffix(cause.Message, ".")),
		Suggestion: "Check whether it took effect before going on. The same call is answered so until its approval expires, and asks the user again after that; tell the user it was cut off rather than calling it again now."}}
}

// cutOffOwnKey is the record of a call under the caller's own key, key,
// whose run err cut off after its tool was started (its caller went away,
// its request was cancelled or isolated): what each retry of the key is
// answered, as after a restart that cut it off (the error interrupted), not
// a second run of a write that may have been done.
func cutOffOwnKey(c *Call, key string, err error) *Result {
	cause := fault.As(err)
	return &Result{Status: StatusError, Error: &Error{Guard: "idempotency", Type: TypeInterrupted, Code: "interrupted",
		Message: fmt.Sprintf("The call of %s under the idempotency key %q was cut off while the tool ran (%s); it may have done its work, and reach does not run it again under that key.",
			c.Tool, key, strings.TrimSuffix(cause.Message, ".")),
		Suggestion: "Check whether it took effect. If it must still happen, call again with a new idempotency key."}}
}

// idemKeys returns the keys of c, a call with an idempotency key (its
// own, or else one derived from its root request and call id, "ROOT/CALL",
// or "CALL/ROOT" for a call id the gateway numbered, ids.Numbered): rec, its
// record's key, which is scoped to the root request's principal and
// tenant (one principal's key, or a reused request id, never replays
// another's result) unless the runtime made the key; call, the tool and
// the key ("tool:key"); and the key. They are one string, each a tail of
// the one before: one allocation, not one for each.
//
// The scope is the principal, NUL, the tenant, NUL, as idempotency.Owner
// spells them.
func idemKeys(c *Call) (rec, call, key string) {
	root := c.req.root
	n := len(c.Tool) + 1
	if c.IdempotencyKey != "" {
		n += len(c.IdempotencyKey)
	} else {
		n += len(root.id) + 1 + len(c.ID)
	}
	lead, principal, tenant := idempotency.Owner(root.principal, root.tenant)
	scope := 0
	if !c.sysKey {
		scope = len(lead) + len(principal) + 1 + len(tenant) + 1
	}
	var b strings.Builder
	b.Grow(scope + n)
	if !c.sysKey {
		b.WriteString(lead)
		b.WriteString(principal)
		b.WriteByte(0)
		b.WriteString(tenant)
		b.WriteByte(0)
	}
	b.WriteString(c.Tool)
	b.WriteByte(':')
	switch {
	case c.IdempotencyKey != "":
		b.WriteString(c.IdempotencyKey)
	case ids.Numbered(c.ID):
		// A call id the gateway numbered grows with every call of the
		// process, whichever session made it: the key leads with it, so
		// that the store's index of the keys takes a batch's at its end
		// (one page), not in each session's place (a page each).
		b.WriteString(c.ID)
		b.WriteByte('/')
		b.WriteString(root.id)
	default:
		b.WriteString(root.id)
		b.WriteByte('/')
		b.WriteString(c.ID)
	}
	rec = b.String()
	call = rec[scope:]
	return rec, call, call[len(c.Tool)+1:]
}

// ownedToolKey is the key a tool is given for a call under the caller's own
// key (idempotency.ToolKey): one of its owner's own.
func ownedToolKey(c *Call, key string) string {
	return idempotency.ToolKey(c.req.root.principal, c.req.root.tenant, c.Tool, key)
}

// derivedToolKey is the key a tool is given for a call under a key derived
// from its request's id and the call's id: its owner's own, as for a
// caller's key (idempotency.ToolKey of "ROOT/CALL", or "CALL/ROOT"), since another
// principal may name the same request once the first is forgotten. A
// request id reach made gets the same: a request restored after a crash
// comes back with its id set, as a named one, and a call that runs again
// gives its tool the key the first run gave. The digest's text, the owner
// and "tool:ROOT/CALL", is the call's record key (idemKeys), made already.
func derivedToolKey(c *Call) string {
	return idempotency.ScopedToolKey(c.Tool, c.idemRec)
}

// argsDigest identifies a call's normalized arguments in its idempotency
// record: a key is not reused for other arguments.
func argsDigest(args []byte) string {
	sum := sha256.Sum256(args)
	var b [32]byte
	hex.Encode(b[:], sum[:16])
	return string(b[:])
}

var errAttemptTimeout = errors.New("attempt timed out")

// execute (11): run the tool with a timeout per attempt; retry transient
// failures with exponential backoff and jitter — reads always, writes only
// under an idempotency key the tool honours.
func (rt *Runtime) execute(ctx context.Context, c *Call) (*Result, error) {
	f, t := c.frame, c.tool
	f.setState(Executing)
	var key *string // a pointer: the string made an interface value would be an allocation
	switch {
	case c.fwdKey != "":
		c.toolKey = ownedToolKey(c, c.fwdKey)
		key = &c.toolKey
	case c.IdempotencyKey != "" && !c.sysKey:
		c.toolKey = ownedToolKey(c, c.IdempotencyKey)
		key = &c.toolKey
	case c.key != "" && !c.sysKey:
		c.toolKey = derivedToolKey(c)
		key = &c.toolKey
	case c.key != "":
		key = &c.key
	}
	canRetry := t.Access == Read || (c.key != "" && t.Idempotent)
	attempts := 1
	if canRetry {
		attempts = t.Retrying.Attempts
	}
	start := time.Now()
	ps := c.passes // the breaker stage's, for the first attempt
	c.passes = passes{}
	defer func() { ps.Abandon() }() // an attempt that ended without an answer (a cancel, a panic)
	// A stop starts nothing new. The call was admitted (1) before it
	// waited here — for an approval, its entities' locks, a concurrent
	// repeat of its key — and a soft stop ends none of those waits but
	// the approval's (stopwait.go): the tool would start after the stop.
	if cause := c.req.stopped(); cause != nil {
		e := (&StopError{Cause: *cause}).Refusal()
		e.Guard = "execute"
		return nil, e
	}
	for n := 1; ; n++ {
		if n > 1 {
			// Each retry goes through the breakers again: none is made
			// against one that opened meanwhile.
			var e *Error
			if ps, e = rt.admitBreakers(c); e != nil {
				e.Retry = strconv.Itoa(n-1) + "/" + strconv.Itoa(attempts)
				return &Result{Status: StatusError, Error: e}, nil
			}
		}
		// The frame, the key and the timeout in one context (see attempt),
		// the first begun at start.
		at := start
		if n > 1 {
			at = time.Now()
		}
		if n == 1 && c.cutRun != nil {
			if gone := rt.cutOffs.dispatch(c.cutOffID(), ctx, c.req.id, c.ID); gone != nil {
				// Its caller went away before its tool was started: nothing
				// was sent, and its retry runs it (cutoff.go, dispatch).
				return nil, fault.ContextCause(gone, "execute")
			}
		}
		actx := newAttemptAt(ctx, f, key, at, t.AttemptTimeout)
		ran := c.ran
		c.ran = true
		out, err := runTool(t.Func, actx, c.args)
		timedOut := err != nil && context.Cause(actx) == errAttemptTimeout && ctx.Err() == nil
		actx.end()
		if ns, ok := errors.AsType[*NotSentError](err); ok {
			c.ran = ran // this attempt sent nothing (NotSentError)
			if ctx.Err() != nil {
				// Its caller went away before it was sent.
				return nil, fault.ContextCause(ctx, "execute")
			}
			return nil, ns.Err
		}
		if c.req.isolated() {
			// Isolation refuses results that arrive late.
			return nil, fault.ContextCause(c.req.ctx, "execute")
		}
		if err == nil {
			ps.Succeeded(c.started)
			return &Result{Status: StatusSuccess, Data: asJSON(out)}, nil
		}
		if ctx.Err() != nil {
			return nil, fault.ContextCause(ctx, "execute")
		}
		te, transient := retry.Transient(err, timedOut, t.Retryable)
		ps.Failed(err, transient, timedOut || (te != nil && te.Type == "unavailable"))
		if !transient || n >= attempts {
			beneath := refusedBeneath(c.req, f)
			a := &retry.Attempt{Tool: c.Tool, Timeout: t.AttemptTimeout, Err: err,
				TimedOut: timedOut, Transient: transient, N: n, Of: attempts, CanRetry: canRetry, Took: time.Since(start)}
			if beneath != nil {
				a.Beneath, a.BeneathTool = beneath.Err(), beneath.Name
			}
			return &Result{Status: StatusError, Error: retry.Failure(a)}, nil
		}
		if err := retry.Sleep(ctx, retry.Backoff(t.Retrying.Base, t.Retrying.Max, n)); err != nil {
			return nil, fault.ContextCause(ctx, "execute")
		}
	}
}

// refusedBeneath returns the last tool call reach refused directly
// beneath f in r (a tool that calls reach from inside its own call, whose
// refusal it may pass back as its error), or nil.
func refusedBeneath(r *Request, f *Frame) *Frame {
	if r == nil || f == nil {
		return nil
	}
	var found *Frame
	r.mu.Lock() // the frames are compacted in place (letGo): read them under it
	for i := len(r.frames) - 1; i >= 0 && r.frames[i] != f; i-- {
		if g := r.frames[i]; g.Parent == f && g.Kind == ToolFrame && g.State() == Refused {
			found = g
			break
		}
	}
	r.mu.Unlock()
	if found == nil || found.Err() == nil {
		return nil
	}
	return found
}

// runTool runs a tool's Func; a panic in it fails the call (permanently)
// instead of taking the process down.
func runTool(fn ToolFunc, ctx context.Context, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, &ToolError{Type: "internal", Message: fmt.Sprintf("the tool's implementation panicked: %v", v)}
		}
	}()
	return fn(ctx, args)
}

// asJSON returns out if it is valid JSON, else out as a JSON string.
func asJSON(out []byte) json.RawMessage {
	if len(out) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(out) {
		return out
	}
	return jsonString(string(out))
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// refuse builds a refusal by a guard.
func refuse(guard, typ, code, msg, suggestion string) *Error {
	return &Error{Guard: guard, Type: typ, Code: code, Message: msg, Suggestion: suggestion}
}

// asError turns any error into an *Error, keeping one that already is.
func asError(err error) *Error { return fault.As(err) }
