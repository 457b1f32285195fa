package reach

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/fault"
)

// checkpoint (10): a durable "executing" record before the call runs, and
// its end (with the undo it registered) after.
func (rt *Runtime) checkpoint(next Handler) Handler {
	cp := rt.opts.Checkpoints
	if cp == nil {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		if !rt.checkpointed(c.tool) {
			return next(ctx, c)
		}
		rec := &c.records().executing
		if !c.claimed { // else durable with the call's idempotency claim
			*rec = executingRecord(c)
			if err := cp.Executing(ctx, rec); err != nil {
				// The store's own text is logged, not told to the model:
				// what an operator must do is, when the store said.
				rt.log.Warn("call not checkpointed before it ran; refused", "request", c.req.id, "call", c.ID, "tool", c.Tool, "err", err)
				msg := "The call could not be recorded before it ran."
				if hint := fault.HintOf(err); hint != "" {
					msg = "The call could not be recorded before it ran: " + hint + "."
				}
				return nil, &Error{Guard: "checkpoint", Type: TypeTransient, Code: "checkpoint_failed",
					Message: msg, Suggestion: "Nothing ran. Try again in a moment."}
			}
		}
		if owesUndo(c) && c.req.owe() {
			defer c.req.paid() // after undoStoppedWrite
		}
		saga := c.req.saga.Len()
		res, err := next(ctx, c)
		if m := c.recs.moved; m != nil {
			c.recs.moved = nil
			m.claim()
		}
		end := &c.recs.ended
		*end = *rec
		end.End(res, err)
		failed := c.recs.undoAfter // its verify failed: its undo goes with its end (effectsStage)
		if s, ok := c.req.saga.Since(saga, c.frame.ID); ok && (end.State == Completed || failed) {
			end.Undo, _ = json.Marshal(map[string]any{"tool": s.Tool, "arguments": s.Args, "key": s.Key})
		}
		var pre *undoRun
		if lateUndo(c, end) {
			pre = rt.beginUndos(ctx, c.req)
		}
		cp.Ended(&c.detached, end)
		if failed {
			rt.undoFailedWrite(ctx, c, res, pre)
			return res, err
		}
		rt.undoStoppedWrite(ctx, c, end, res, pre)
		return res, err
	}
}

// executingRecord is c's "executing" checkpoint.
func executingRecord(c *Call) Checkpoint {
	rec := Checkpoint{Request: c.req.id, Root: c.req.root.id, Frame: c.frame.ID, Tool: c.Tool, CallID: c.ID,
		IdempotencyKey: c.idemRec, State: Executing, Args: c.args, Started: c.frame.Started, Node: c.frame}
	if c.recs != nil {
		rec.Entities = c.recs.writes
	}
	if c.parent != nil {
		rec.Parent = c.parent.ID
	}
	return rec
}

// callRecords are what a call with an idempotency key or checkpoints
// hands the stores: its claim, its "executing" checkpoint and its end's,
// made in one allocation (see Call.records). Nothing here is reused for
// another call: a store may keep what it was given.
type callRecords struct {
	claim     IdemClaim
	executing Checkpoint
	ended     Checkpoint
	// moved claims again the entities the call writes, once its tool ran
	// (withSharedEntities), before its end is recorded: a kill before it
	// leaves the checkpoint open, whose recovery moves them on instead
	// (Runtime.MoveWrittenEntities). The checkpoint stage claims
	// (entityMove.claim); withSharedEntities lets go of the entities'
	// locks once this stage returned (entityMove.letGo).
	moved *entityMove
	// writes are the keys of the entities the call writes in the shared
	// entity store (keyedEntities), kept with its "executing" checkpoint
	// (Checkpoint.Entities).
	writes []string
	// undoAfter says the call is a write that ran, registered its undo
	// and then failed (its verify refused or not confirmed): its end is
	// recorded with that undo, and its request compensated after it
	// (undoFailedWrite).
	undoAfter bool
}

// records returns c's records, made on the first use.
func (c *Call) records() *callRecords {
	if c.recs == nil {
		c.recs = new(callRecords)
	}
	return c.recs
}

// checkpointed reports whether the calls of t are checkpointed.
func (rt *Runtime) checkpointed(t *tool) bool {
	return rt.opts.Checkpoints != nil && (t.Access.Writes() || rt.opts.CheckpointReads)
}

// RecordedUndo is the undo of a call that completed before a restart, as a
// Checkpointer kept it, for CompensateRecorded.
type RecordedUndo struct {
	Request string          // the request the undone call belonged to
	Tool    string          // the undo tool
	Args    json.RawMessage // its arguments
	Key     string          // its idempotency key
	Undoes  string          // a description of the call it undoes
}

// CompensateRecorded runs undos recorded before a restart, in the order
// given (pass them newest first), each once under its idempotency key; an
// undo that fails becomes a dead letter. It is how a restarted gateway
// resolves the sagas of requests that were in flight when it stopped. o
// describes the interrupted request as it was begun: its ID, and the
// principal (with tenant, roles and attributes) the undos act for, as a
// compensation in the running process does, and the trace its frames go
// in. An empty principal is "reach" (a store that kept none).
func (rt *Runtime) CompensateRecorded(ctx context.Context, o *RequestOptions, undos []RecordedUndo) []Compensation {
	r := &Request{id: o.ID, principal: cmp.Or(o.Principal, "reach"), tenant: o.Tenant, roles: o.Roles, attrs: o.Attributes,
		trace: o.Trace, rt: rt}
	r.root = r
	for _, u := range slices.Backward(undos) { // given newest first; a saga holds them newest last
		r.saga.Push(effects.Undo{Tool: u.Tool, Args: u.Args, Key: u.Key, Origin: u.Undoes})
	}
	return rt.compensate(ctx, r, "restart", nil)
}
