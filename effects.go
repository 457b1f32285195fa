package reach

import (
	"cmp"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
)

// Followup is a call reach makes on a tool's behalf: its undo, its verify
// check, or the read that refreshes an entity before a write. Args is a
// JSON template over the call's arguments and result, e.g.
// {"refund_id": "{result.refund_id}", "order_id": "{args.order_id}"}.
type Followup struct {
	Tool string
	Args string
}

// Verify is a check after a write (S2): reach calls Tool with Args and
// evaluates Condition, a CEL expression over result (the check's result),
// args (the write's arguments) and output (the write's result). A false
// condition, or a failed check, makes the write a silent failure: the call
// fails and the request's saga compensates.
type Verify struct {
	Followup
	Condition string
}

// effects is a tool's compiled side-effect contract.
type effects struct {
	reads, writes []*template
	undo          *compiledFollowup
	refresh       *compiledFollowup
	verify        *compiledFollowup
	cond          cel.Program
}

type compiledFollowup struct {
	tool string
	args *template
}

var celEnv = func() *cel.Env {
	env, err := cel.NewEnv(cel.Variable("result", cel.DynType), cel.Variable("args", cel.DynType), cel.Variable("output", cel.DynType))
	if err != nil {
		panic(err)
	}
	return env
}()

func compileFollowup(name, what string, f *Followup) (*compiledFollowup, error) {
	if f == nil {
		return nil, nil
	}
	if f.Tool == "" {
		return nil, fmt.Errorf("tool %s: %s needs a tool", name, what)
	}
	args := f.Args
	if args == "" {
		args = "{}"
	}
	t, err := compileTemplate(args, true)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %s: %w", name, what, err)
	}
	return &compiledFollowup{tool: f.Tool, args: t}, nil
}

func compileEffects(t *Tool) (*effects, error) {
	if len(t.Reads) == 0 && len(t.Writes) == 0 && t.Undo == nil && t.Verify == nil && t.Refresh == nil {
		return nil, nil
	}
	e := &effects{}
	for _, list := range []struct {
		src []string
		dst *[]*template
	}{{t.Reads, &e.reads}, {t.Writes, &e.writes}} {
		for _, s := range list.src {
			tt, err := compileTemplate(s, false)
			if err != nil {
				return nil, fmt.Errorf("tool %s: entity %w", t.Name, err)
			}
			*list.dst = append(*list.dst, tt)
		}
	}
	var err error
	if e.undo, err = compileFollowup(t.Name, "undo", t.Undo); err != nil {
		return nil, err
	}
	if e.refresh, err = compileFollowup(t.Name, "refresh", t.Refresh); err != nil {
		return nil, err
	}
	if t.Refresh != nil && len(t.Writes) == 0 {
		return nil, fmt.Errorf("tool %s: refresh needs the entities the tool writes (Writes)", t.Name)
	}
	if t.Verify != nil {
		if e.verify, err = compileFollowup(t.Name, "verify", &t.Verify.Followup); err != nil {
			return nil, err
		}
		ast, iss := celEnv.Compile(t.Verify.Condition)
		if iss != nil && iss.Err() != nil {
			return nil, fmt.Errorf("tool %s: verify condition %q: %v", t.Name, t.Verify.Condition, iss.Err())
		}
		if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
			return nil, fmt.Errorf("tool %s: verify condition %q must be true or false, not %s", t.Name, t.Verify.Condition, ast.OutputType())
		}
		if e.cond, err = celEnv.Program(ast); err != nil {
			return nil, fmt.Errorf("tool %s: verify condition: %w", t.Name, err)
		}
	}
	return e, nil
}

// entityNames renders the entity templates for one call.
func entityNames(ts []*template, s scope) ([]string, error) {
	var out []string
	for _, t := range ts {
		n, err := t.text(s)
		if err != nil {
			return nil, fmt.Errorf("entity %s: %w", t.raw, err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// maxExactVersions is how many entities (the most recently written)
// entities keeps an exact version of. A variable so that tests can make it
// small.
var maxExactVersions = 1 << 16

// versionSlots is the number of hashed slots that hold the versions of the
// entities written longer ago.
const versionSlots = 1 << 12

// entities holds the version of every entity written through reach (S3),
// and serializes writes to one entity, with a wait-for graph between the
// calls that hold and wait for entities to break deadlocks.
//
// Versions come from one counter for all entities, so a write always gives
// its entity a version higher than any version handed out before. The
// exact version of the maxExactVersions entities written or read most
// recently is kept (a read keeps an entity exactly from then on, at the
// version it is at); an older one (never one that is locked) is evicted,
// and its version folded into a slot, chosen by a hash of its name, that
// keeps the highest version of all the entities evicted into it. An
// entity that is not kept exactly is at its slot's version. So memory
// stays bounded in a gateway that runs for months, and a stale read is
// never missed: a write since a read raised the entity's version above
// what was read, and a slot's version only grows, as does an entity's when
// it is kept exactly again. Two entities in one slot may only make a read
// look stale when it is not (the write is refused or refreshed, the safe
// side), when the entity itself was evicted between the read and the
// write: the eviction of another entity into the slot raises its version.
type entities struct {
	mu      sync.Mutex
	seq     uint64                   // the last version handed out
	version map[string]*list.Element // exact versions (*versioned), of the entities in recent
	recent  list.List                // *versioned, least recently written or read first
	max     int                      // the most entities in version
	seed    maphash.Seed
	slots   [versionSlots]uint64 // the highest version of the entities evicted into each slot
	holders map[string][]*holder // the calls holding each entity's write lock, all of one root request
	waiting map[*holder]struct{} // calls waiting for an entity
	changed chan struct{}        // closed and replaced when a lock is released
}

// holder is one call that takes entity write locks: the locks belong to its
// root request, so the request's calls share them (a write nested in a
// write of the same entity takes it again), except for an undo that writes
// as the request it compensates.
type holder struct {
	root  *Request   // the root request it writes as
	frame *Frame     // the call's frame
	batch *batchCall // the Batch call it runs under, if any
	// origin, for an undo that writes as the request it compensates, is the
	// frame of the call it runs for (the failing call, or the one that
	// called Request.Compensate), and batch is that call's. The undo shares
	// the locks of that call and of its callers, which wait for it, and of
	// every other call of the request that may be waiting for it; it waits
	// for the request's calls that hold the entity and provably do not wait
	// for it: they may be writing it right now.
	origin *Frame
	// undoes, for such an undo, is the request it compensates if that was
	// running when the compensation began: once it is stopped (cancel or
	// isolate), the undo waits no longer.
	undoes *Request
	waits  string // the entity it waits for, while it waits
}

// on reports whether f is on h's stack: h's frame or one of its callers,
// or, for an undo, the call it runs for or one of that call's callers.
func (h *holder) on(f *Frame) bool {
	for _, s := range [2]*Frame{h.frame, h.origin} {
		for a := s; a != nil; a = a.Parent {
			if a == f {
				return true
			}
		}
	}
	return false
}

// blockedBy reports whether o, which holds an entity, keeps h from taking
// it: o belongs to another root request; or h is an undo and o another
// call of its request that is not on h's stack and provably independent
// of the call the undo runs for (see batchCall); or o is an undo and h is
// not on its stack.
//
// Independence must be proven: a call that holds the entity may be
// waiting for the call the undo runs for, which waits for its undo (a
// tool's Func that makes a call with its request's context rather than its
// own, say), and an undo that waited for it would wait for ever. So an
// undo shares the lock of every call of its request it cannot prove
// independent. A call that waits for an undo never has that problem: it
// has not started, so nothing it runs can be what the undo waits for.
func (h *holder) blockedBy(o *holder) bool {
	switch {
	case o.root != h.root:
		return true
	case h.origin == nil && o.origin == nil, h.on(o.frame):
		return false
	case o.origin == nil:
		return h.batch.independent(o.batch)
	}
	return true
}

// versioned is an entity's exact version.
type versioned struct {
	name string
	v    uint64
}

func newEntities() *entities {
	return &entities{version: map[string]*list.Element{}, max: max(maxExactVersions, 1), seed: maphash.MakeSeed(),
		holders: map[string][]*holder{}, waiting: map[*holder]struct{}{}, changed: make(chan struct{})}
}

func (es *entities) current(name string) uint64 {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.versionOf(name)
}

// observe returns the entity's version as a request records it when it
// reads the entity, and keeps it exactly, as the most recently used, from
// now on: an entity not kept exactly gets an exact version at its slot's,
// which is all a write since the read has to be above, so later evictions
// into the slot do not make the request's write look stale. The entity is
// evicted again, like any other, once es.max more recently used ones are
// kept.
func (es *entities) observe(name string) uint64 {
	es.mu.Lock()
	defer es.mu.Unlock()
	if e, ok := es.version[name]; ok {
		es.recent.MoveToBack(e)
		return e.Value.(*versioned).v
	}
	v := es.slots[es.slot(name)]
	es.version[name] = es.recent.PushBack(&versioned{name, v})
	es.evict()
	return v
}

// versionOf returns the entity's version: exact, or its slot's (es.mu held).
func (es *entities) versionOf(name string) uint64 {
	if e, ok := es.version[name]; ok {
		return e.Value.(*versioned).v
	}
	return es.slots[es.slot(name)]
}

func (es *entities) slot(name string) int {
	return int(maphash.String(es.seed, name) % versionSlots)
}

// bump gives the entity a new version, kept exactly (es.mu held).
func (es *entities) bump(name string) {
	es.seq++
	if e, ok := es.version[name]; ok {
		e.Value.(*versioned).v = es.seq
		es.recent.MoveToBack(e)
		return
	}
	es.version[name] = es.recent.PushBack(&versioned{name, es.seq})
}

// evict folds the least recently used entities that are not locked
// into their slots while more than es.max are kept exactly (es.mu held).
func (es *entities) evict() {
	for e := es.recent.Front(); e != nil && len(es.version) > es.max; {
		next := e.Next()
		if v := e.Value.(*versioned); len(es.holders[v.name]) == 0 {
			s := &es.slots[es.slot(v.name)]
			*s = max(*s, v.v)
			delete(es.version, v.name)
			es.recent.Remove(e)
		}
		e = next
	}
}

// lock takes the write locks of names (sorted) for h, waiting while another
// call holds one that blocks h (see holder.blockedBy), unless waiting would
// close a cycle.
func (es *entities) lock(ctx context.Context, h *holder, names []string) (func(bump bool) map[string]uint64, *Error) {
	var held []string
	// release lets go of the locks and returns the versions the entities
	// had as it did (bumped for a write that may have taken effect), read
	// before another request can write them.
	release := func(bump bool) map[string]uint64 {
		es.mu.Lock()
		vers := make(map[string]uint64, len(held))
		for _, n := range held {
			if bump {
				es.bump(n)
			}
			vers[n] = es.versionOf(n)
			hs := slices.DeleteFunc(es.holders[n], func(o *holder) bool { return o == h })
			if len(hs) == 0 {
				delete(es.holders, n)
			} else {
				es.holders[n] = hs
			}
		}
		if bump {
			es.evict()
		}
		close(es.changed)
		es.changed = make(chan struct{})
		es.mu.Unlock()
		return vers
	}
	for _, n := range names {
		for {
			es.mu.Lock()
			if !slices.ContainsFunc(es.holders[n], h.blockedBy) {
				es.holders[n] = append(es.holders[n], h)
				held = append(held, n)
				es.mu.Unlock()
				break
			}
			h.waits = n
			es.waiting[h] = struct{}{}
			if o, w := es.deadlock(h); o != nil {
				msg := fmt.Sprintf("Writing %s would deadlock: request %s holds it and waits for %s, which this request holds.",
					entityWords(n), o.root.id, entityWords(w.waits))
				if o.root == h.root {
					msg = fmt.Sprintf("Writing %s would deadlock: %s, another call of request %s, holds it and waits for %s, which this call holds.",
						entityWords(n), o.frame.Name, o.root.id, entityWords(w.waits))
				}
				delete(es.waiting, h)
				es.mu.Unlock()
				release(false)
				return nil, &Error{Guard: "state", Type: TypeState, Code: "deadlock", Message: msg,
					Suggestion: "Finish or undo what this request holds, then try again; do not nest writes to these entities."}
			}
			ch := es.changed
			es.mu.Unlock()
			var halt <-chan struct{}
			if h.undoes != nil {
				halt = h.undoes.halt
			}
			select {
			case <-ch:
			case <-ctx.Done():
				es.mu.Lock()
				delete(es.waiting, h)
				es.mu.Unlock()
				release(false)
				return nil, asError(contextCause(ctx, "state"))
			case <-halt:
				es.mu.Lock()
				delete(es.waiting, h)
				es.mu.Unlock()
				release(false)
				return nil, (&StopError{Cause: *h.undoes.StopCause()}).asError()
			}
			es.mu.Lock()
			delete(es.waiting, h)
			es.mu.Unlock()
		}
	}
	return release, nil
}

// deadlock reports whether h, about to wait, closes a cycle of calls that
// wait for each other; it returns the first holder h would wait for and
// the call that holder waits for. A holder waits for a waiting call that
// runs beneath it (on its stack, see holder.on), and, as a whole request,
// for a call of its root request that waits for another request's entity:
// a request that waits may be holding up any of its calls.
func (es *entities) deadlock(h *holder) (*holder, *holder) {
	type hop struct{ w, o1, w1 *holder } // a waiter, and the first holder and waiter on the path to it
	seen := map[*holder]bool{h: true}
	stack := []hop{{w: h}}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, o := range es.holders[cur.w.waits] {
			if !cur.w.blockedBy(o) {
				continue
			}
			for w := range es.waiting {
				if !es.holdsUp(w, o) {
					continue
				}
				next := hop{w, cur.o1, cur.w1}
				if cur.w == h {
					next.o1, next.w1 = o, w
				}
				if w == h {
					return next.o1, next.w1
				}
				if !seen[w] {
					seen[w] = true
					stack = append(stack, next)
				}
			}
		}
	}
	return nil, nil
}

// holdsUp reports whether waiting call w keeps holder o from finishing: w
// runs beneath o, or w's request waits for another request's entity.
func (es *entities) holdsUp(w, o *holder) bool {
	if w.on(o.frame) {
		return true
	}
	hs := es.holders[w.waits]
	return w.root == o.root && len(hs) > 0 && hs[0].root != w.root
}

func entityWords(n string) string { return strings.Replace(n, ":", " ", 1) }

// readVersions remembers, per request tree, the version of each entity when
// it was last read or written by that tree.
type readVersions struct {
	mu sync.Mutex
	v  map[string]uint64
}

func (rv *readVersions) get(n string) (uint64, bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	v, ok := rv.v[n]
	return v, ok
}

func (rv *readVersions) set(n string, v uint64) {
	rv.mu.Lock()
	if rv.v == nil {
		rv.v = map[string]uint64{}
	}
	rv.v[n] = v
	rv.mu.Unlock()
}

// state (7): a write based on a stale read is refused (or refreshed first);
// writes to one entity are serialized; deadlocks are broken (S3).
func (rt *Runtime) state(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		eff := c.tool.effects
		if eff == nil || (len(eff.reads) == 0 && len(eff.writes) == 0) {
			return next(ctx, c)
		}
		s := newScope(c.args, nil)
		reads, err := entityNames(eff.reads, s)
		if err == nil {
			var writes []string
			writes, err = entityNames(eff.writes, s)
			if err == nil {
				return rt.withEntities(ctx, c, next, reads, writes)
			}
		}
		return nil, &Error{Guard: "state", Type: TypeInvalidArgs, Code: "invalid_arguments",
			Message:    fmt.Sprintf("%s: %v.", c.Tool, err),
			Suggestion: "Give the arguments that name what this tool reads or writes."}
	}
}

func (rt *Runtime) withEntities(ctx context.Context, c *Call, next Handler, reads, writes []string) (*Result, error) {
	root := c.req.root
	rv := &root.reads
	var release func(bool) map[string]uint64
	if len(writes) > 0 {
		var e *Error
		h := &holder{root: root, frame: c.frame, batch: batchOf(ctx)}
		if as := root.lockAs; as != nil {
			h.root, h.origin, h.batch, h.undoes = as.root, as.origin, as.batch, as.undoes
		}
		if release, e = rt.entities.lock(ctx, h, writes); e != nil {
			return nil, e
		}
	}
	for _, n := range writes {
		seen, ok := rv.get(n)
		now := rt.entities.observe(n) // a refresh reads it at this version
		if !ok || seen == now {
			continue
		}
		if eff := c.tool.effects; eff.refresh != nil {
			// Re-read before the write instead of refusing (seed 004).
			before, err := rt.followup(ctx, c, eff.refresh, nil, "refresh")
			if err != nil {
				release(false)
				return nil, err
			}
			rv.set(n, now)
			w := rt.opts.Redactor.RedactString(fmt.Sprintf("%s changed since you read it (v%d -> v%d); reach read it again before writing: %s",
				entityWords(n), seen, now, preview(before, 200)))
			c.frame.mu.Lock()
			c.frame.warn = append(c.frame.warn, w)
			c.frame.mu.Unlock()
			continue
		}
		release(false)
		return nil, &Error{Guard: "state", Type: TypeState, Code: "stale_read",
			Message:    fmt.Sprintf("%s changed since you read it (v%d -> v%d).", capitalize(entityWords(n)), seen, now),
			Suggestion: "Read it again, then decide whether this write is still right."}
	}
	readAt := make([]uint64, len(reads))
	for i, n := range reads {
		readAt[i] = rt.entities.observe(n)
	}
	res, err := next(ctx, c)
	ok := err == nil && res.Status == StatusSuccess && !res.Replayed
	var vers map[string]uint64
	if release != nil {
		// A write that reached its tool may have taken effect, however it
		// ended (failed, timed out, cancelled, its result refused): its
		// entities change version, so a write based on an earlier read is
		// refused, not lost. One refused before, or replayed, did not run.
		vers = release(c.frame.State() == Executing)
	}
	if ok {
		for i, n := range reads {
			rv.set(n, readAt[i])
		}
		for _, n := range writes {
			rv.set(n, vers[n]) // this write's version, not one another request wrote since
		}
	}
	return res, err
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// followup runs an undo, verify or refresh call in the request, under the
// frame of c, and returns its data.
func (rt *Runtime) followup(ctx context.Context, c *Call, f *compiledFollowup, result []byte, what string) (json.RawMessage, *Error) {
	args, err := f.args.json(newScope(c.args, result))
	if err != nil {
		return nil, &Error{Guard: what, Type: TypeTool, Code: what + "_failed",
			Message: fmt.Sprintf("Could not build the %s call of %s: %v.", what, c.Tool, err)}
	}
	res := rt.Call(withFrame(ctx, c.frame), &Call{ID: c.ID + "/" + what, Tool: f.tool, Arguments: args})
	if res.IsError() {
		return nil, res.Error
	}
	return res.Data, nil
}

// sagaStep is a registered compensation.
type sagaStep struct {
	tool   string
	args   json.RawMessage
	key    string // idempotency key of the undo
	origin string // the call it undoes
	frame  FrameID
}

// saga is a request's stack of compensations (S1).
type saga struct {
	mu    sync.Mutex
	steps []sagaStep
}

func (s *saga) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps) > 0
}

// DeadLetter is a compensation that failed after its retries: it waits for
// an operator to retry or dismiss it.
type DeadLetter struct {
	ID       string          `json:"id"`
	Request  string          `json:"request"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"arguments"`
	Undoes   string          `json:"undoes"` // the call it would undo
	Error    *Error          `json:"error"`
	At       time.Time       `json:"at"`
	Attempts int             `json:"attempts"`
	// Key is the undo's idempotency key ("undo:<frame id>"): a retry runs
	// under it, so the undo takes effect at most once.
	Key string `json:"key"`
	// Trace is the W3C trace id of the request whose write it undoes: a
	// retry's frames are in that trace. Zero when unknown (a dead letter
	// restored from a store that keeps none); a retry then starts a trace.
	Trace [16]byte `json:"-"`
	// State is where it is: open (waiting), taken (an operator's action
	// holds it), retried (its undo ran again and succeeded) or resolved
	// (an operator dismissed it).
	State DeadLetterState `json:"state"`
	// Note says how it was settled ("retried by ...", "dismissed by ...: ...").
	Note    string    `json:"note,omitempty"`
	Updated time.Time `json:"updated"`
}

// Compensation reports one undo that ran.
type Compensation struct {
	Tool       string `json:"tool"`
	Undoes     string `json:"undoes"`
	OK         bool   `json:"ok"`
	DeadLetter string `json:"dead_letter,omitempty"`
}

// effectsStage (12): on the way back from execute, a successful write is
// verified (S2) and its undo registered (S1); a failed or unverified write
// compensates the request's earlier writes in reverse order. The calls of a
// request that runs undos (a compensation, a dead letter's retry) are
// verified, but neither register undos nor compensate: an undo is not
// undone, and one that fails is dead-lettered by what runs it.
func (rt *Runtime) effectsStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		eff := c.tool.effects
		write := c.tool.Access == Write || c.tool.Access == HighRisk
		if err != nil || res == nil || res.Replayed || !write {
			return res, err
		}
		undoing := c.req.root.undoing
		if res.Status == StatusSuccess && eff != nil {
			if eff.undo != nil && !undoing {
				args, terr := eff.undo.args.json(newScope(c.args, res.Data))
				if terr == nil {
					c.req.saga.mu.Lock()
					c.req.saga.steps = append(c.req.saga.steps, sagaStep{tool: eff.undo.tool, args: args,
						key: "undo:" + c.frame.ID.String(), origin: c.Tool + " " + preview(c.args, 80), frame: c.frame.ID})
					c.req.saga.mu.Unlock()
					if StopMode(c.req.mode.Load()) >= Cancel {
						// The request was cancelled while this write ran (the
						// tool did not stop): the stop's compensation ran
						// without it, so it is undone now.
						if done := rt.compensate(context.WithoutCancel(ctx), c.req, "stopped while "+c.Tool+" ran", c.frame); len(done) > 0 {
							res.Notes = append(res.Notes, compensationNote(done))
						}
					}
				} else {
					res.Notes = append(res.Notes, fmt.Sprintf("warning: the undo of this call could not be prepared (%v); it will not be compensated", terr))
				}
			}
			if eff.verify != nil {
				if e := rt.verify(ctx, c, res.Data); e != nil {
					res = &Result{Status: StatusError, Error: e}
				}
			}
		}
		if res.Status == StatusError && !undoing {
			if done := rt.compensate(context.WithoutCancel(ctx), c.req, c.Tool+" failed", c.frame); len(done) > 0 {
				res.Notes = append(res.Notes, compensationNote(done))
			}
		}
		return res, nil
	}
}

func (rt *Runtime) verify(ctx context.Context, c *Call, output []byte) *Error {
	eff := c.tool.effects
	data, e := rt.followup(ctx, c, eff.verify, output, "verify")
	if e != nil {
		return &Error{Guard: "verify", Type: TypeTool, Code: "verify_failed",
			Message:    fmt.Sprintf("%s reported success, but its check %s failed: %s", c.Tool, eff.verify.tool, e.Message),
			Suggestion: "Treat the write as not done; its effects are being undone. Tell the user, or try another way."}
	}
	var result, args, out any
	json.Unmarshal(data, &result)
	json.Unmarshal(c.args, &args)
	json.Unmarshal(output, &out)
	v, _, err := eff.cond.Eval(map[string]any{"result": result, "args": args, "output": out})
	if err == nil {
		if b, ok := v.Value().(bool); ok && b {
			return nil
		}
	}
	why := "it evaluated to false"
	if err != nil {
		why = err.Error()
	}
	return &Error{Guard: "verify", Type: TypeTool, Code: "verify_failed",
		Message: fmt.Sprintf("%s reported success, but the check %s does not confirm it (%s: %s; the check returned %s). This is a silent failure.",
			c.Tool, eff.verify.tool, c.tool.Verify.Condition, why, preview(data, 200)),
		Suggestion: "Treat the write as not done; its effects are being undone. Tell the user, or try another way."}
}

func compensationNote(done []Compensation) string {
	var parts []string
	for _, d := range done {
		s := d.Tool + " (undoing " + d.Undoes + ")"
		if !d.OK {
			s += " FAILED and is queued for an operator as dead letter " + d.DeadLetter
		}
		parts = append(parts, s)
	}
	return "the request's earlier writes were compensated, newest first: " + strings.Join(parts, "; ")
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
	r.saga.mu.Lock()
	steps := r.saga.steps
	r.saga.steps = nil
	r.saga.mu.Unlock()
	if len(steps) == 0 {
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
	cctx, creq, err := rt.Begin(context.WithoutCancel(ctx), &RequestOptions{ID: r.id + "/compensate/" + newID()[4:],
		Principal: r.principal, Tenant: r.tenant, Roles: r.roles, Attributes: r.attrs, Agent: "reach", Budget: &Budget{},
		Trace: r.Trace()})
	if err != nil {
		return nil
	}
	creq.undoing = true
	switch as := r.root.lockAs; {
	case as != nil:
		// r itself writes as another request (it runs undos, which register
		// none, so only its own Compensate gets here): so do these undos.
		creq.lockAs = &holder{root: as.root, origin: cmp.Or(origin, as.origin), batch: as.batch, undoes: as.undoes}
	case origin != nil:
		creq.lockAs = &holder{root: r.root, origin: origin, batch: batchOf(ctx)}
		if StopMode(r.mode.Load()) < Cancel {
			creq.lockAs.undoes = r
		}
	}
	defer creq.End()
	rt.log.Info("compensating", "request", r.id, "reason", reason, "undos", len(steps))
	var out []Compensation
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		res := rt.call(cctx, &Call{ID: "undo-" + s.frame.String(), Tool: s.tool, Arguments: s.args, IdempotencyKey: s.key}, true)
		comp := Compensation{Tool: s.tool, Undoes: s.origin, OK: !res.IsError()}
		if res.IsError() {
			dl := rt.deadLetter(r, s, res)
			comp.DeadLetter = dl.ID
		}
		out = append(out, comp)
	}
	return out
}

func (rt *Runtime) deadLetter(r *Request, s sagaStep, res *Result) *DeadLetter {
	attempts := 1
	if res.Error != nil && res.Error.Retry != "" {
		fmt.Sscanf(res.Error.Retry, "%d/", &attempts)
	}
	dl := &DeadLetter{Request: r.id, Tool: s.tool, Args: s.args, Undoes: s.origin,
		Error: res.Error, At: time.Now(), Attempts: attempts, Key: s.key, Trace: r.Trace()}
	if err := rt.dead.Add(context.Background(), dl); err != nil {
		rt.log.Error("compensation failed, and it could not be dead-lettered", "request", r.id, "tool", s.tool, "err", err)
		return dl
	}
	rt.log.Warn("compensation dead-lettered", "request", r.id, "tool", s.tool, "dead_letter", dl.ID)
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
	dl, err := rt.dead.Take(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	// The retry's request runs an undo (see compensate for its id and agent).
	cctx, creq, err := rt.Begin(ctx, &RequestOptions{ID: dl.Request + "/retry/" + newID()[4:], Principal: by, Agent: "operator", Budget: &Budget{},
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
	res := rt.call(cctx, &Call{ID: "retry-" + dl.ID, Tool: dl.Tool, Arguments: dl.Args, IdempotencyKey: dl.Key}, true)
	if res.IsError() {
		dl.State, dl.Attempts, dl.Error = DeadLetterOpen, dl.Attempts+1, res.Error
	} else {
		dl.State, dl.Attempts, dl.Note = DeadLetterRetried, dl.Attempts+1, "retried by "+by
	}
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

// DismissDeadLetter resolves the dead letter id of q, as
// Runtime.DismissDeadLetter does, for when no runtime runs (the CLI on a
// data folder).
func DismissDeadLetter(ctx context.Context, q DeadLetterQueue, id, by, note string) (*DeadLetter, error) {
	dl, err := q.Take(ctx, id)
	if err != nil {
		return nil, err
	}
	dl.State, dl.Note = DeadLetterResolved, "dismissed by "+by+": "+note
	if err := q.Settle(context.WithoutCancel(ctx), dl); err != nil {
		return nil, fmt.Errorf("dead letter %s was dismissed, but settling it failed: %w", id, err)
	}
	return dl, nil
}
