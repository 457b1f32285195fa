// Package sqlcore is the store of internal/store written once for the SQL
// engines: the operations (requests, frames, idempotency records, the
// ledger, approvals, entities, pins, dead letters, tasks) and the
// group-commit writer that runs them, over a small interface that SQLite
// (internal/store/sqlite, database/sql) and PostgreSQL
// (internal/store/postgres, pgx) each implement: begin a batch's
// transaction, add statements to it by id with a callback for their
// result, commit; read through a pool. What is really one engine's stays
// in its package: SQLite's pragmas, checkpointer and audit index,
// PostgreSQL's cluster (instances, replicas, LISTEN/NOTIFY) and audit
// chain, and each one's migrations.
//
// The SQL of a statement is the engine's (see Shared and Stmt): where the
// engines differ, PostgreSQL does in one statement (a function of its
// schema, a CTE) what SQLite does in two, the second added by the
// callback of the first, since SQLite runs each statement as it is added
// (Engine.Sequential).
package sqlcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/store"
)

// Core implements the operations of store.Store that both engines share,
// with the engine's writer, reader and dialect. An engine's Store embeds
// it.
type Core struct {
	W *Writer
	R Reader
	D Dialect

	closed atomic.Bool

	// flights are the calls in flight whose claims this store took, by
	// key and owner, each ended (Flight.End) by the key's completion,
	// release or settlement: the writer holds a batch open for them under
	// a crowd (see Writer).
	fmu     sync.Mutex
	flights map[flightKey]*Flight

	// begins are the queued writes of requests begun running (QueueRequest)
	// not taken by a batch yet, by id: the request's next queued write
	// (its end, for a request that ends at once) takes a begin's place in
	// the queue, one row written where there were two (see QueueRequest).
	bmu    sync.Mutex
	begins map[string]*Write

	kept retained // what the retention sweeps removed (retention.go)

	// auditTenant is whether the audit log's index on the event's tenant
	// (audit_tenant) was there when the store opened (ReadIndexes).
	auditTenant atomic.Bool
}

type flightKey struct{ key, owner string }

// flew keeps f, the flight of the call that claimed key for owner, until
// the key is completed or released. A flight the key still had (its end
// never came) ends: a key has one claim.
func (c *Core) flew(key, owner string, f *Flight) {
	c.fmu.Lock()
	if c.flights == nil {
		c.flights = map[flightKey]*Flight{}
	}
	k := flightKey{key, owner}
	old := c.flights[k]
	c.flights[k] = f
	c.fmu.Unlock()
	old.End()
}

// landed ends the flight of the call that claimed key for owner, if it
// has one.
func (c *Core) landed(key, owner string) {
	c.fmu.Lock()
	k := flightKey{key, owner}
	f := c.flights[k]
	delete(c.flights, k)
	c.fmu.Unlock()
	f.End()
}

// MarkClosed makes every later call fail with store.ErrClosed.
func (c *Core) MarkClosed() { c.closed.Store(true) }

// Closed reports whether MarkClosed was called.
func (c *Core) Closed() bool { return c.closed.Load() }

// WriterStats returns the writer's counters.
func (c *Core) WriterStats() store.WriterStats { return c.W.Stats() }

// count is a callback of Batch.Exec that keeps how many rows changed in
// *n.
func count(n *int64) func(int64) error {
	return func(c int64) error { *n = c; return nil }
}

// PutRequest implements store.Requests: durable when it returns.
func (c *Core) PutRequest(ctx context.Context, r *store.Request) error {
	if c.Closed() {
		return store.ErrClosed
	}
	c.forgetBegin(r.ID)
	var n int64
	w, now := c.requestWrite(r, count(&n))
	err := c.W.Do(ctx, w)
	if err != nil {
		return fmt.Errorf("storing request %s: %w", r.ID, err)
	}
	if n == 0 {
		// A final state: say which.
		state := "interrupted by a restart"
		if old, gerr := c.GetRequest(context.WithoutCancel(ctx), r.ID); gerr == nil && old.State == "stopped" {
			state = "stopped"
		} else if gerr == nil && old.State == "ended" && old.Parent != "" {
			state = "a hand-off of request " + old.Parent + " that ended"
		}
		return fmt.Errorf("storing request %s: it was %s, and stays so: %w", r.ID, state, store.ErrConflict)
	}
	r.Updated = store.Round(now)
	return nil
}

// QueueRequest implements store.Requests: it returns at once, and r is
// written with a later batch (a failure is logged). A request's write
// queued while the write of its begin is still queued, not taken by a
// batch (a request that began and ended within one gather, as a
// sessionless call's own request does), takes its place: the request is
// written once, in its latest state, where its begin would have been, and
// a crash before that batch commits leaves neither, as it would have.
func (c *Core) QueueRequest(r *store.Request) {
	id := r.ID
	w, now := c.requestWrite(r, func(n int64) error {
		if n == 0 {
			return fmt.Errorf("request %s is in a final state, and stays so: %w", id, store.ErrConflict)
		}
		return nil
	})
	w.What, w.Of = "request", id
	r.Updated = store.Round(now)
	c.bmu.Lock()
	begin := c.begins[id]
	delete(c.begins, id)
	if begin != nil && c.W.Replace(begin, w) {
		c.bmu.Unlock()
		return
	}
	if r.State == "running" {
		// Kept until the request's next write, queued or not (PutRequest):
		// as many as requests that began and have not ended.
		if c.begins == nil {
			c.begins = map[string]*Write{}
		}
		c.begins[id] = w
	}
	c.W.Queue(w) // under bmu: a begin is in the queue before it can be replaced
	c.bmu.Unlock()
}

// forgetBegin forgets the queued begin of request id, if it is kept: a
// write of the request that does not take its place follows it.
func (c *Core) forgetBegin(id string) {
	c.bmu.Lock()
	delete(c.begins, id)
	c.bmu.Unlock()
}

// requestWrite is the write of r, whose rows changed fn reads, and its
// time.
func (c *Core) requestWrite(r *store.Request, fn func(n int64) error) (*Write, time.Time) {
	now := time.Now()
	var roles, attrs []byte
	if len(r.Roles) > 0 {
		roles, _ = json.Marshal(r.Roles)
	}
	if len(r.Attrs) > 0 {
		attrs, _ = json.Marshal(r.Attrs)
	}
	d := c.D
	args := []any{r.ID, r.Parent, r.Principal, r.Tenant, d.Text(roles), d.Text(attrs), r.Trace, r.Scene, r.Agent,
		r.State, d.Text(r.Budget), d.Text(r.Usage), d.Text(r.Cause), store.UnixNano(r.Started), store.UnixNano(r.Ended), now.UnixNano()}
	return &Write{Run: func(b Batch, w *Write) { b.Exec(w, StPutRequest, args, fn) }}, now
}

func scanRequest(sc interface{ Scan(...any) error }) (*store.Request, error) {
	var r store.Request
	var roles, attrs, budget, usage, cause []byte
	var started, ended, updated int64
	if err := sc.Scan(&r.ID, &r.Parent, &r.Principal, &r.Tenant, &roles, &attrs, &r.Trace, &r.Scene, &r.Agent, &r.State,
		&budget, &usage, &cause, &started, &ended, &updated); err != nil {
		return nil, err
	}
	// A row whose identity does not decode is still listed, marked, so
	// that one bad row hides neither the others nor itself.
	if len(roles) > 0 {
		if err := json.Unmarshal(roles, &r.Roles); err != nil {
			r.Roles, r.Unreadable = nil, "its roles: "+err.Error()
		}
	}
	if len(attrs) > 0 && r.Unreadable == "" {
		if err := json.Unmarshal(attrs, &r.Attrs); err != nil {
			r.Attrs, r.Unreadable = nil, "its attributes: "+err.Error()
		}
	}
	if r.Unreadable != "" {
		r.Roles, r.Attrs = nil, nil
	}
	r.Budget, r.Usage, r.Cause = EmptyNil(budget), EmptyNil(usage), EmptyNil(cause)
	r.Started, r.Ended, r.Updated = store.FromUnixNano(started), store.FromUnixNano(ended), store.FromUnixNano(updated)
	return &r, nil
}

// EmptyNil reads a value stored as NULL when empty: nil for none.
func EmptyNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// queryAll runs q on the reader and scans each row with scan.
func queryAll[T any](ctx context.Context, r Reader, what string, scan func(sc interface{ Scan(...any) error }) (T, error), q string, args ...any) ([]T, error) {
	rows, err := r.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// queryOne is queryAll for one row: ErrNoRows if there is none.
func queryOne[T any](ctx context.Context, r Reader, scan func(sc interface{ Scan(...any) error }) (T, error), q string, args ...any) (T, error) {
	var zero T
	rows, err := r.Query(ctx, q, args...)
	if err != nil {
		return zero, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return zero, err
		}
		return zero, ErrNoRows
	}
	return scan(rows)
}

// getOne reads one row by its key: an error matching ErrNotFound, naming
// what, if there is none.
func getOne[T any](ctx context.Context, c *Core, what string, scan func(sc interface{ Scan(...any) error }) (T, error), q string, args ...any) (T, error) {
	v, err := queryOne(ctx, c.R, scan, q, args...)
	if errors.Is(err, ErrNoRows) {
		return v, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("reading %s: %w", what, err)
	}
	return v, nil
}

// GetRequest implements store.Requests.
func (c *Core) GetRequest(ctx context.Context, id string) (*store.Request, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return getOne(ctx, c, "request "+id, scanRequest, `SELECT `+RequestColumns+` FROM requests WHERE id = $1`, id)
}

// ListRequests implements store.Requests.
func (c *Core) ListRequests(ctx context.Context, f store.RequestFilter) ([]*store.Request, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	q, args := RequestsQuery(f)
	return queryAll(ctx, c.R, "listing requests", scanRequest, q, args...)
}

// RequestTree implements store.RequestTreer: one recursive read of the
// ids down the index requests_parent.
func (c *Core) RequestTree(ctx context.Context, root string, limit int) ([]string, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return queryAll(ctx, c.R, "listing a request's tree", func(sc interface{ Scan(...any) error }) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	}, `WITH RECURSIVE tree(id) AS (SELECT CAST($1 AS TEXT) UNION SELECT r.id FROM requests r JOIN tree t ON r.parent = t.id AND r.parent <> '')
	SELECT id FROM tree LIMIT $2`, root, limit)
}

// RequestsQuery is the query of ListRequests(f) and its arguments.
func RequestsQuery(f store.RequestFilter) (string, []any) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + RequestColumns + ` FROM requests WHERE true`
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.State != "" {
		q += ` AND state = ` + arg(f.State)
	}
	if f.Parent != "" {
		q += ` AND parent = ` + arg(f.Parent) + ` AND parent <> ''` // the second lets the partial index requests_parent serve
	}
	if f.Roots {
		q += ` AND parent = ''`
	}
	if !f.Before.IsZero() {
		q += ` AND started < ` + arg(f.Before.UnixNano())
	}
	if f.IDPrefix != "" {
		// substr counts characters in both engines; a range of ids would
		// follow PostgreSQL's collation, which may order "/" apart.
		q += ` AND substr(id, 1, ` + arg(utf8.RuneCountInString(f.IDPrefix)) + `) = ` + arg(f.IDPrefix)
	}
	return q + ` ORDER BY started DESC, id DESC LIMIT ` + arg(limit), args
}

// PutFrame implements store.Frames: durable when it returns.
func (c *Core) PutFrame(ctx context.Context, f *store.Frame) error {
	if c.Closed() {
		return store.ErrClosed
	}
	if err := c.W.Do(ctx, c.frameWrite(f)); err != nil {
		return fmt.Errorf("storing frame %s of request %s: %w", f.Frame, f.Request, err)
	}
	return nil
}

// QueueFrame implements store.Frames: it returns at once, and the frame is
// written with a later batch.
func (c *Core) QueueFrame(f *store.Frame) {
	c.W.Queue(c.frameWrite(f)) // named by its frame and request in the log (Write.What)
}

// frameArgs returns the parameters of StPutFrame and StUpdateFrame for f,
// and dates f's update now. The key comes after the columns an update
// sets, so that an engine's statements take their parameters in order
// (SQLite binds them by place then); extra are StPutClaimedFrame's guard,
// before the owner and the stack.
func (c *Core) frameArgs(f *store.Frame, extra ...any) []any {
	now := time.Now()
	f.Updated = store.Round(now)
	d := c.D
	args := append(make([]any, 0, 21), f.Parent, word(f.Kind), f.Name, f.CallID, d.Key(f.IdemKey), word(f.State), d.Text(f.Args), d.Text(f.Undo),
		d.Text(f.Error), store.UnixNano(f.Started), now.UnixNano(), f.Request, f.Frame)
	args = append(args, extra...)
	var ents []byte
	if len(f.Entities) > 0 {
		ents, _ = json.Marshal(f.Entities)
	}
	return append(args, f.Owner, d.Text(f.Stack), d.Text(ents))
}

func (c *Core) frameWrite(f *store.Frame) *Write {
	key := frameKey(f.Request, f.Frame)
	if f.EndOnly && store.FrameDone(f.State) {
		return c.endWrite(f, key)
	}
	args := c.frameArgs(f)
	return &Write{Pairs: key, Run: func(b Batch, w *Write) {
		if c.W.Lost(key) {
			w.Fail(fmt.Errorf("the idempotency claim of its call was not recorded, so the call must not run: %w", store.ErrConflict))
			return
		}
		c.putFrame(b, w, f, args)
	}}
}

// putFrame writes f, whose parameters are args (frameArgs).
func (c *Core) putFrame(b Batch, w *Write, f *store.Frame, args []any) {
	if !store.FrameDone(f.State) || !b.Has(StUpdateFrame) {
		b.Exec(w, StPutFrame, args, nil)
		return
	}
	// The end of a checkpoint written before: an update finds it
	// without trying an insert first. (A frame that is not final is
	// always put: SQLite writes it as a new row, where its open frames
	// are looked for.)
	b.Exec(w, StUpdateFrame, args, func(n int64) error {
		if n != 1 {
			b.Exec(w, StPutFrame, args, nil)
		}
		return nil
	})
}

// endWrite writes f, the end of a checkpoint put before (Frame.EndOnly):
// its state, undo and error, where the engine has StEndFrame; the whole
// frame if it has not, or if no checkpoint of f's is stored.
func (c *Core) endWrite(f *store.Frame, key string) *Write {
	now := time.Now()
	f.Updated = store.Round(now)
	d := c.D
	e := &argsWrite[[6]any]{args: [6]any{word(f.State), d.Text(f.Undo), d.Text(f.Error), now.UnixNano(), f.Request, f.Frame}}
	args := e.args[:]
	e.w = Write{Pairs: key, Run: func(b Batch, w *Write) {
		if c.W.Lost(key) {
			w.Fail(fmt.Errorf("the idempotency claim of its call was not recorded, so the call must not run: %w", store.ErrConflict))
			return
		}
		if !b.Has(StEndFrame) {
			c.putFrame(b, w, f, c.frameArgs(f))
			return
		}
		b.Exec(w, StEndFrame, args, func(n int64) error {
			if n != 1 {
				b.Exec(w, StPutFrame, c.frameArgs(f), nil)
			}
			return nil
		})
	}}
	return &e.w
}

// argsWrite is a write and its statement's arguments (an array), in one
// allocation.
type argsWrite[A any] struct {
	w    Write
	args A
}

// word is s as a statement's argument: a frame's kind or state, the same
// few words on every checkpoint, boxed once (a constant) rather than on
// each (an allocation).
func word(s string) any {
	switch s {
	case "tool":
		return "tool"
	case "executing":
		return "executing"
	case "completed":
		return "completed"
	case "failed":
		return "failed"
	case "refused":
		return "refused"
	case "cancelled":
		return "cancelled"
	}
	return s
}

// frameKey names a checkpoint for the writer's pairing of claims.
func frameKey(request, frame string) string { return request + "\x00" + frame }

// scanFrame reads a frame as Dialect.FrameSelect selects it.
func scanFrame(sc interface{ Scan(...any) error }) (*store.Frame, error) {
	var f store.Frame
	var started, updated int64
	var idem, ents []byte
	if err := sc.Scan(&f.Request, &f.Frame, &f.Parent, &f.Kind, &f.Name, &f.CallID, &idem, &f.State,
		&f.Args, &f.Undo, &f.Error, &started, &updated, &f.Owner, &f.Stack, &ents); err != nil {
		return nil, err
	}
	if len(ents) > 0 {
		// Unreadable (a row edited by hand): left empty, the recovery names
		// the entities from the arguments, as for an older checkpoint.
		_ = json.Unmarshal(ents, &f.Entities)
	}
	f.IdemKey = string(idem)
	f.Args, f.Undo, f.Error, f.Stack = EmptyNil(f.Args), EmptyNil(f.Undo), EmptyNil(f.Error), EmptyNil(f.Stack)
	f.Started, f.Updated = store.FromUnixNano(started), store.FromUnixNano(updated)
	return &f, nil
}

// QueryFrames returns the frames where the condition where holds, in the
// order they started.
func (c *Core) QueryFrames(ctx context.Context, where string, args ...any) ([]*store.Frame, error) {
	return queryAll(ctx, c.R, "reading frames", scanFrame, c.D.FrameSelect+` WHERE `+where+` ORDER BY `+c.D.FrameOrder, args...)
}

// RequestFrames implements store.Frames.
func (c *Core) RequestFrames(ctx context.Context, request string) ([]*store.Frame, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return c.QueryFrames(ctx, `request = $1`, request)
}

// OpenFrames implements store.Frames.
func (c *Core) OpenFrames(ctx context.Context) ([]*store.Frame, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return c.QueryFrames(ctx, `state NOT IN `+FinalStates)
}

// FinalStates are the states of a final frame (store.FrameDone), as an
// SQL list.
const FinalStates = `('completed', 'failed', 'refused', 'cancelled')`

// noEnd is the context of a write that must not end with its caller's:
// Do reads nothing of a context but its end, so this one, which has none,
// spares a call the allocation of context.WithoutCancel.
var noEnd = context.Background()

// ClaimKey implements store.IdemRecords. A claim is durable when ClaimKey
// returns, and so is r.Executing, the call's "executing" checkpoint, which
// is written in the same write, only if the claim is taken. The claim of a
// checkpointed call without it (r.Frame set, r.Executing nil) is answered
// as soon as it is decided, and is committed with the call's checkpoint,
// which the writer waits for (briefly) before it commits: that PutFrame
// returns once both are durable, or fails if the claim could not be
// committed.
func (c *Core) ClaimKey(ctx context.Context, r *store.IdemRecord) (rec *store.IdemRecord, claimed bool, err error) {
	if c.Closed() {
		return nil, false, store.ErrClosed
	}
	// What the writer found in its latest run, and the statements'
	// arguments, are one allocation (claimRun), which the closures below
	// share.
	cl := &claimRun{}
	w := &cl.w
	if c.W.Holds() {
		// The call is in flight from its claim: ended at once unless it
		// took the key, and then by the key's completion or release.
		f := c.W.CallBegan()
		w.flight = true
		defer func() {
			if claimed && err == nil {
				c.flew(r.Key, r.Owner, f)
				return
			}
			f.End()
		}()
	}
	cl.argv = [7]any{c.D.Key(r.Key), r.Owner, r.Args, r.Request, r.Frame, store.UnixNano(r.Claimed), store.UnixNano(r.Expires)}
	args := cl.argv[:]
	// An engine whose claim is one statement that returns the record
	// (PostgreSQL's) also says in it whether the cut-off write r.CutOff is
	// unexpired at the claim ($8, $9): no round trip of its own
	// (cl.cargs).
	read := func(rows Rows) error {
		if !rows.Next() {
			return nil
		}
		h := &store.IdemRecord{}
		var ok bool
		var at, exp int64
		var err error
		if cl.cargs != nil {
			err = rows.Scan(&ok, &h.Owner, &h.State, &h.Args, &h.Request, &h.Frame, &h.Result, &at, &exp, &cl.cutLive,
				&cl.fl.root, &cl.fl.at, &cl.fl.request)
		} else {
			err = rows.Scan(&ok, &h.Owner, &h.State, &h.Args, &h.Request, &h.Frame, &h.Result, &at, &exp)
		}
		if err != nil {
			return err
		}
		if ok {
			cl.w.Claimed, cl.cutRead = true, cl.cargs != nil && r.CutOff != ""
			return nil
		}
		h.Key, h.Claimed, h.Expires, h.Result = r.Key, store.FromUnixNano(at), store.FromUnixNano(exp), EmptyNil(h.Result)
		cl.found = h
		return nil
	}
	w.Run = func(b Batch, w *Write) {
		w.Claimed, cl.found, cl.cutLive, cl.cutRead, cl.fl = false, nil, false, false, inFlight{}
		if !b.Has(StIdemGet) {
			// The claim answers with the record that holds the key.
			if cl.cargs == nil {
				cl.cargs = append(args[:len(args):len(args)], r.CutOff, args[5], r.CutRoot)
			}
			b.Query(w, StIdemClaim, cl.cargs, read)
			return
		}
		// The claim only changes a row or not; a key held is read after it.
		b.Exec(w, StIdemClaim, args, func(n int64) error {
			if w.Claimed = n == 1; !w.Claimed {
				b.Query(w, StIdemGet, args[:1], read)
			}
			return nil
		})
	}
	if r.Executing != nil {
		// The checkpoint is written only if this very claim holds the key:
		// its owner, instant, request and frame.
		written := func(n int64) error {
			if w.Claimed && n != 1 {
				return fmt.Errorf("the checkpoint of the claim was not written: %w", store.ErrConflict)
			}
			return nil
		}
		run := w.Run
		if c.W.eng.Sequential() {
			// The claim has run, and its callback with it, when the
			// checkpoint is added: it is written (a plain StPutFrame) only
			// if the claim was taken.
			pargs := c.frameArgs(r.Executing)
			w.Run = func(b Batch, w *Write) {
				if run(b, w); w.Claimed {
					b.Exec(w, StPutFrame, pargs, written)
				}
			}
		} else {
			fargs := c.frameArgs(r.Executing, args[0], r.Owner, args[5], r.Request, r.Frame)
			w.Run = func(b Batch, w *Write) {
				run(b, w)
				b.Exec(w, StPutClaimedFrame, fargs, written)
			}
		}
		// Once sent, the claim and its checkpoint may commit whatever ctx
		// does: the caller waits for the outcome, so that a claim it took
		// is one it knows of, and ends (a call whose context ended is ended
		// as cancelled, and its key released), as it would end a
		// checkpoint written after the claim.
		if err = ctx.Err(); err != nil {
			err = context.Cause(ctx)
		} else if err = c.W.Do(noEnd, w); err == nil {
			rec, claimed = cl.found, w.Claimed
			r.CutOffRead, r.CutOffLive = cl.cutRead, cl.cutLive
			cl.fl.set(r, claimed)
		}
	} else if err = ctx.Err(); err != nil {
		// Not sent: a claim sent now could be taken, and hold the key,
		// after its caller was told of its context's end.
		err = context.Cause(ctx)
	} else if r.Frame != "" && r.Request != "" {
		// What the writer decided is read only once Decide returned it: on
		// a context's end, ClaimKey returns while the writer may still
		// decide, and must not write into results already returned.
		var drec *store.IdemRecord
		var dclaimed, dread, dlive bool
		var dfl inFlight
		if err = c.W.Decide(ctx, w, frameKey(r.Request, r.Frame), func(e error) {
			drec, dclaimed, dread, dlive, dfl = cl.found, w.Claimed && e == nil, cl.cutRead, cl.cutLive, cl.fl
		}); err == nil {
			rec, claimed = drec, dclaimed
			r.CutOffRead, r.CutOffLive = dread, dlive
			dfl.set(r, claimed)
		}
	} else if err = c.W.Do(ctx, w); err == nil {
		// Read only after the writer answered: on a context's end it may
		// still be running the write.
		rec, claimed = cl.found, w.Claimed
		r.CutOffRead, r.CutOffLive = cl.cutRead, cl.cutLive
		cl.fl.set(r, claimed)
	}
	if err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", r.Key, err)
	}
	if !claimed && rec == nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: no record was returned", r.Key)
	}
	return rec, claimed, nil
}

// claimRun is one ClaimKey's write and what its statements take and read,
// allocated once: the write, the claim's arguments (and PostgreSQL's with
// the cut-off write's), and the record, cut-off and in-flight claim the
// writer found in its latest run.
type claimRun struct {
	w                Write
	argv             [7]any
	cargs            []any
	found            *store.IdemRecord
	cutLive, cutRead bool
	fl               inFlight
}

// inFlight is what a claim's statement read of another claim of its
// cut-off write held by a live owner (PostgreSQL's): none if at is 0.
type inFlight struct {
	root, request string
	at            int64
}

// set gives r what the claim read, if it took the key.
func (f *inFlight) set(r *store.IdemRecord, claimed bool) {
	if !claimed || f.at == 0 {
		return
	}
	r.InFlight, r.InFlightRoot, r.InFlightRequest, r.InFlightAt = true, f.root, f.request, store.FromUnixNano(f.at)
}

// CompleteKey implements store.IdemRecords: durable when it returns.
func (c *Core) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if c.Closed() {
		return store.ErrClosed
	}
	defer c.landed(key, owner)
	return wrap(c.W.Do(ctx, c.completeWrite(key, owner, result, expires)), "completing idempotency key %q", key)
}

// QueueCompleteKey implements store.IdemRecords: it returns at once, and
// the result is recorded with a later batch (a failure is logged).
func (c *Core) QueueCompleteKey(key, owner string, result []byte, expires time.Time) {
	w := c.completeWrite(key, owner, result, expires)
	w.What, w.Of = "the result of idempotency key", key
	c.W.Queue(w)
	c.landed(key, owner)
}

// QueueCompleteKeyThen is QueueCompleteKey, and then runs in the writer
// once the result's batch committed (true) or failed (false: the store did
// not take it, and the writer logged why).
func (c *Core) QueueCompleteKeyThen(key, owner string, result []byte, expires time.Time, then func(committed bool)) {
	w := c.completeWrite(key, owner, result, expires)
	w.What, w.Of, w.After = "the result of idempotency key", key, then
	c.W.Queue(w)
	c.landed(key, owner)
}

// QueueReleaseKeyThen is QueueReleaseKey, and then as for
// QueueCompleteKeyThen.
func (c *Core) QueueReleaseKeyThen(key, owner string, then func(committed bool)) {
	w := c.releaseWrite(key, owner)
	w.What, w.Of, w.After = "the release of idempotency key", key, then
	c.W.Queue(w)
	c.landed(key, owner)
}

func (c *Core) completeWrite(key, owner string, result []byte, expires time.Time) *Write {
	e := &argsWrite[[4]any]{args: [4]any{result, store.UnixNano(expires), c.D.Key(key), owner}}
	args := e.args[:]
	e.w = Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StIdemComplete, args, func(n int64) error {
			if n == 0 {
				return fmt.Errorf("completing idempotency key %q: not claimed by %s: %w", key, owner, store.ErrConflict)
			}
			return nil
		})
	}}
	return &e.w
}

// ReleaseKey implements store.IdemRecords: durable when it returns.
func (c *Core) ReleaseKey(ctx context.Context, key, owner string) error {
	if c.Closed() {
		return store.ErrClosed
	}
	defer c.landed(key, owner)
	return wrap(c.W.Do(ctx, c.releaseWrite(key, owner)), "releasing idempotency key %q", key)
}

// QueueReleaseKey implements store.IdemRecords: it returns at once, and
// the claim is deleted with a later batch.
func (c *Core) QueueReleaseKey(key, owner string) {
	w := c.releaseWrite(key, owner)
	w.What, w.Of = "the release of idempotency key", key
	c.W.Queue(w)
	c.landed(key, owner)
}

func (c *Core) releaseWrite(key, owner string) *Write {
	args := []any{c.D.Key(key), owner}
	return &Write{Run: func(b Batch, w *Write) { b.Exec(w, StIdemRelease, args, nil) }}
}

// SettleClaim implements store.IdemRecords.
func (c *Core) SettleClaim(ctx context.Context, r *store.IdemRecord, result []byte, expires time.Time) error {
	if c.Closed() {
		return store.ErrClosed
	}
	defer c.landed(r.Key, r.Owner)
	gone := func(n int64) error {
		if n == 0 {
			return fmt.Errorf("settling idempotency key %q: its claim by %s is gone: %w", r.Key, r.Owner, store.ErrConflict)
		}
		return nil
	}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		if result == nil {
			b.Exec(w, StIdemSettleDelete, []any{c.D.Key(r.Key), r.Owner, store.UnixNano(r.Claimed)}, gone)
			return
		}
		b.Exec(w, StIdemSettleUpdate, []any{result, store.UnixNano(expires), c.D.Key(r.Key), r.Owner, store.UnixNano(r.Claimed)}, gone)
	}})
	return wrap(err, "settling idempotency key %q", r.Key)
}

// SettleKey implements store.IdemRecords. The record keeps the arguments
// and checkpoint it was claimed with, if it had any.
func (c *Core) SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error {
	if c.Closed() {
		return store.ErrClosed
	}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StIdemSettleKey, []any{c.D.Key(key), result, time.Now().UnixNano(), store.UnixNano(expires)}, nil)
	}})
	return wrap(err, "settling idempotency key %q", key)
}

// wrap says what failed, unless err is a conflict or a missing row, which
// says it already.
func wrap(err error, format string, args ...any) error {
	if err == nil || isOutcome(err) {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

func isOutcome(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrClosed)
}

func scanIdem(sc interface{ Scan(...any) error }) (*store.IdemRecord, error) {
	var r store.IdemRecord
	var claimed, expires int64
	var key []byte
	if err := sc.Scan(&key, &r.Owner, &r.State, &r.Args, &r.Request, &r.Frame, &r.Result, &claimed, &expires); err != nil {
		return nil, err
	}
	r.Key, r.Claimed, r.Expires, r.Result = string(key), store.FromUnixNano(claimed), store.FromUnixNano(expires), EmptyNil(r.Result)
	return &r, nil
}

// ClaimedKeys implements store.IdemRecords.
func (c *Core) ClaimedKeys(ctx context.Context) ([]*store.IdemRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	where := `state = 'claimed'`
	if c.D.Claims != "" {
		where = c.D.Claims
	}
	return queryAll(ctx, c.R, "listing idempotency claims", scanIdem,
		`SELECT key, `+idemColumns+` FROM idempotency WHERE `+where+` ORDER BY claimed, key`)
}

// SweepKeys implements store.IdemRecords.
func (c *Core) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	var n int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) { b.Exec(w, StIdemSweep, []any{now.UnixNano()}, count(&n)) }})
	if err != nil {
		return 0, fmt.Errorf("sweeping idempotency keys: %w", err)
	}
	return int(n), nil
}

// QueueSweepKeys is SweepKeys queued: it returns at once, and the results
// that expired before now are deleted with a later batch (a failure is
// logged). store.Idempotency sweeps so after a call's completion, which no
// answer then waits for. An engine with StIdemSweepSome (SQLite, which
// keeps no index of the results by expiry) deletes them among the next
// span of records only: every record is looked at once a pass.
func (c *Core) QueueSweepKeys(now time.Time) {
	if c.Closed() {
		return
	}
	args := []any{now.UnixNano()}
	c.W.Queue(&Write{What: "the sweep of expired idempotency records", Run: func(b Batch, w *Write) {
		if b.Has(StIdemSweepSome) {
			b.Exec(w, StIdemSweepSome, args, nil)
			return
		}
		b.Exec(w, StIdemSweep, args, nil)
	}})
}
