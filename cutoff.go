package reach

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach/internal/ids"
)

// A write whose answer never reached its caller — its caller went away
// while it ran (a dropped connection cancels the call), or the gateway
// was killed while it ran — may have taken effect, and the caller cannot
// know. A client that retries after a transport error (Mastra's MCP
// client reconnects and calls again; an HTTP client's retry) sends the
// call again with a new call id and no idempotency key: a new derived
// key, so the write would run twice. The runtime remembers such a write,
// by its owner (the root request's principal and tenant), tool and
// normalized arguments, for CutOffWindow; the first identical write of the
// same owner without a key of its own in that time is answered with the
// error interrupted, which names the call that was cut off, and nothing
// runs. It is answered so once: the call after it runs. A write that was
// answered is never remembered, so two identical writes that were both
// answered both run. A write whose caller went away while its tool still
// runs (a tool deaf to its context) is cut off already: its retry is
// answered so (through any instance that shares the store: it is stored
// when its caller goes), and its late return is not remembered again.
// Retries of one cut-off write at once are each answered so: the write is
// answered for, and the call after runs, once a retry's refusal is made.

// CutOffWindow is how long a write cut off before its answer reached its
// caller is remembered for its caller's retry.
const CutOffWindow = 10 * time.Minute

// cutOffCap bounds the writes remembered: past it, the oldest of the owner
// with the most is dropped.
const cutOffCap = 4096

// CutOffStore keeps the writes cut off before their answer was
// delivered where every instance that shares it, and the next life of
// this one, reads them (Options.CutOffs): the retry of a write cut off on
// one instance is caught on another, or after a restart. A store that
// several instances share (Options.CutOffsShared) is looked up for each
// write without a key of its own, once: by its key's claim, where the
// idempotency store can (IdemClaim.CutOff), else by GetCutOff after it;
// one that this process alone uses is read once, by New, and kept in
// memory too.
type CutOffStore interface {
	// ListCutOffs returns the writes unexpired at now.
	ListCutOffs(ctx context.Context, now time.Time) ([]*CutOffRecord, error)
	// PutCutOff stores r until r.Expires, replacing the write of r.Key.
	PutCutOff(ctx context.Context, r *CutOffRecord) error
	// GetCutOff returns the write of key unexpired at now; nil if none.
	GetCutOff(ctx context.Context, key string, now time.Time) (*CutOffRecord, error)
	// TakeCutOff deletes the write of key if it is still request's call,
	// and reports whether it did: of the instances that read it, one
	// takes it.
	TakeCutOff(ctx context.Context, key, request, call string) (bool, error)
	// HandCutOff makes the write of key request toRequest's call toCall
	// if it is still request's call, and reports whether it did: of the
	// instances that read it, one hands it over to its retry, which
	// takes it (TakeCutOff) once it is answered.
	HandCutOff(ctx context.Context, key, request, call, toRequest, toCall string) (bool, error)
}

// CutOffRecord is a write cut off before its answer was delivered, as a
// CutOffStore keeps it.
type CutOffRecord struct {
	Key           string // digests of its owner, and of its owner, tool and arguments (storeKey)
	Tool          string
	Root          string // its root request's id (its session's); "" if not known
	Request, Call string
	Began, At     time.Time // when it began; when it was cut off
	Expires       time.Time
	Restart       bool   // a restart cut it off (else its caller went away)
	Stopped       string // the stop of its request that cut it off, if one did
}

type cutOffs struct {
	store   CutOffStore  // if not nil, where the cut-off writes are kept
	log     *slog.Logger // the runtime's
	shared  bool         // store is shared: read by each take, not kept in m
	n       atomic.Int64 // entries: a write looks only when there are some
	live    atomic.Int64 // writes running, in running
	mu      sync.Mutex
	m       map[string]cutOffWrite // cutOffKey -> the write
	running map[cutOffID]runningWrites
}

// runningWrites are the writes of one cutOffID running: one, most often;
// more when identical writes of one owner run at once (two agents of one
// principal), each its own, so that a second does not hide the first.
type runningWrites struct {
	one  runningWrite
	more []runningWrite
}

// at returns the i-th write (0: one).
func (rs *runningWrites) at(i int) *runningWrite {
	if i == 0 {
		return &rs.one
	}
	return &rs.more[i-1]
}

func (rs *runningWrites) len() int { return 1 + len(rs.more) }

// cutOffID is cutOffKey's parts: a running write is looked up by it with
// no string made for it.
type cutOffID struct{ scope, tool, args string }

func (id *cutOffID) key() string { return cutOffKey(id.scope, id.tool, id.args) }

// runningWrite is a write with a derived key whose tool may be running:
// one whose caller went away is cut off already, though its tool is not
// back (a tool deaf to its context), and its retry is told so.
type runningWrite struct {
	ctx           context.Context // its caller's: done when it went away
	root          string          // its root request's id: its session
	began         time.Time       // when it began
	request, call string
	taken         bool       // its retry was told
	started       bool       // its tool was started (dispatch)
	early         *earlyNote // with a shared store: its note once its caller went away
}

// earlyNote is the note, in a shared store, of a write whose caller went
// away while its tool still runs: made then, not once its tool is back, so
// that its retry through another instance is told as one through this
// one is (from the writes running). Its state is t.mu's.
type earlyNote struct {
	state int           // noteIdle, noteStoring, noteStored, noteFailed, noteEnded
	done  chan struct{} // closed once noteStoring ends
	stop  func() bool   // unregisters the note from its caller's context
}

const (
	noteIdle    = iota // its caller is there
	noteStoring        // its caller went away: the note is being stored
	noteStored         // stored: its retry is told from the store
	noteFailed         // not stored: it is noted when its tool is back, as without
	noteEnded          // its tool was back first
)

// start records the write of id running under ctx.
// root is its root request's id, and began when it began.
func (t *cutOffs) start(id cutOffID, ctx context.Context, root string, began time.Time, request, call string) {
	t.mu.Lock()
	if t.running == nil {
		t.running = map[cutOffID]runningWrites{}
	}
	w := runningWrite{ctx: ctx, root: root, began: began, request: request, call: call}
	if t.shared {
		w.early = &earlyNote{}
	}
	if rs, ok := t.running[id]; ok {
		rs.more = append(rs.more, w)
		t.running[id] = rs
	} else {
		t.running[id] = runningWrites{one: w}
	}
	t.live.Add(1)
	t.mu.Unlock()
	if e := w.early; e != nil {
		e.stop = context.AfterFunc(ctx, func() { t.noteEarly(id, e, ctx, root, began, request, call) })
	}
}

// noteEarly stores, in the shared store, the write of id whose caller went
// away (ctx is done) while its tool runs, unless its retry here was told
// already or its tool is back.
func (t *cutOffs) noteEarly(id cutOffID, e *earlyNote, ctx context.Context, root string, began time.Time, request, call string) {
	t.mu.Lock()
	if e.state != noteIdle || t.runningTaken(id, request, call) || !t.runningStarted(id, request, call) {
		// Not started: its caller went away before its tool was, which
		// now never starts (dispatch), so there is nothing to remember.
		t.mu.Unlock()
		return
	}
	e.state, e.done = noteStoring, make(chan struct{})
	t.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at := time.Now()
	r := CutOffRecord{Key: storeKey(id.scope, id.key()), Tool: id.tool, Root: root, Request: request, Call: call,
		Began: began, At: at, Expires: at.Add(CutOffWindow), Stopped: stoppedBy(ctx)}
	err := t.store.PutCutOff(sctx, &r)
	t.mu.Lock()
	e.state = noteStored
	if err != nil {
		e.state = noteFailed
	}
	close(e.done)
	t.mu.Unlock()
}

// runningTaken says whether the running write of id, request's call call,
// was told to its retry. t.mu is held.
func (t *cutOffs) runningTaken(id cutOffID, request, call string) bool {
	if rs, ok := t.running[id]; ok {
		for i := range rs.len() {
			if w := rs.at(i); w.request == request && w.call == call {
				return w.taken
			}
		}
	}
	return false
}

// runningStarted says whether the running write of id, request's call
// call, had its tool started. t.mu is held.
func (t *cutOffs) runningStarted(id cutOffID, request, call string) bool {
	if rs, ok := t.running[id]; ok {
		for i := range rs.len() {
			if w := rs.at(i); w.request == request && w.call == call {
				return w.started
			}
		}
	}
	return false
}

// dispatch marks the running write of id, request's call call, started,
// just before its tool's first attempt, unless its caller went away
// (ctx, or the context it was started under, is done): then it answers
// that context, and the tool must not start (it answers nil when the
// write is marked). The two differ when a middleware between the
// idempotency stage and the tool hands the tool a context that outlives
// its caller's (context.WithoutCancel): the caller's is the one done. One lock orders the two: a caller
// that goes away before the mark leaves a write never started, whose
// early note is not made (noteEarly) and which is not remembered cut off
// at its end (nothing was sent: its retry runs it); one that goes away
// after it leaves a write that may have taken effect, remembered as before.
func (t *cutOffs) dispatch(id cutOffID, ctx context.Context, request, call string) (gone context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ctx.Err() != nil {
		return ctx
	}
	if rs, ok := t.running[id]; ok {
		for i := range rs.len() {
			if w := rs.at(i); w.request == request && w.call == call {
				if w.ctx.Err() != nil {
					return w.ctx
				}
				w.started = true
				t.running[id] = rs
				return nil
			}
		}
	}
	return nil
}

// cutOffID is the id of c among the writes running (c.cutRun set): its
// owner's scope (its record key without its key), tool and arguments.
func (c *Call) cutOffID() cutOffID {
	return cutOffID{c.idemRec[:len(c.idemRec)-len(c.key)], c.Tool, c.cutRun.Args}
}

// end records the write of id done; cut says it was cut off while its tool
// ran, and it is remembered unless its retry was told already.
func (t *cutOffs) end(ctx context.Context, id cutOffID, request, call string, cut bool) {
	t.mu.Lock()
	var r runningWrite
	mine := false
	if rs, ok := t.running[id]; ok {
		for i := range rs.len() {
			if w := rs.at(i); w.request == request && w.call == call {
				r, mine = *w, true
				n := rs.len() - 1
				*w = *rs.at(n) // the last in its place
				if n == 0 {
					delete(t.running, id)
				} else {
					rs.more[n-1] = runningWrite{}
					rs.more = rs.more[:n-1]
					t.running[id] = rs
				}
				t.live.Add(-1)
				break
			}
		}
	}
	var done chan struct{}
	if e := r.early; mine && e != nil {
		if e.state == noteIdle {
			e.state = noteEnded
		}
		done = e.done
	}
	t.mu.Unlock()
	if e := r.early; mine && e != nil {
		e.stop()
		if done != nil {
			<-done // its note, begun as its tool came back
		}
		if e.state == noteStored { // final once done is closed
			if !cut {
				// Its tool answered after all (as a write whose caller
				// is there is not remembered): the note is let go,
				// unless a retry was handed it already.
				t.letGo(ctx, id, request, call)
			}
			return // its retry is told from the store, once
		}
	}
	if cut && !(mine && r.taken) {
		w := cutOffWrite{owner: id.scope, tool: id.tool, root: r.root, began: r.began, request: request, call: call, at: time.Now(), stopped: stoppedBy(ctx)}
		t.note(id.key(), w)
	}
}

// cutOffStoreWait bounds a store's call that no caller waits for.
const cutOffStoreWait = 10 * time.Second

// letGo takes from the shared store the early note of the write of id,
// request's call call, whose tool answered after its caller went away. A
// take that fails leaves the note until it expires (CutOffWindow): the
// first identical write without a key of its own in that time is answered
// interrupted, though this one was answered (docs/STATE.md).
func (t *cutOffs) letGo(ctx context.Context, id cutOffID, request, call string) {
	t.takeNote(ctx, storeKey(id.scope, id.key()), id.tool, request, call,
		"a cut-off write's note not let go once its tool answered: the first identical write without a key in the cut-off window is answered interrupted")
}

// takeNote takes the note of key, request's call call, from the store
// within cutOffStoreWait (a store that hangs holds no goroutine, nor a
// caller, past it), and logs a take that fails with what it leaves (why),
// by tool, request and call, never the arguments.
func (t *cutOffs) takeNote(ctx context.Context, key, tool, request, call, why string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cutOffStoreWait)
	defer cancel()
	if _, err := t.store.TakeCutOff(sctx, key, request, call); err != nil && t.log != nil {
		t.log.Warn(why, "tool", tool, "request", request, "call", call, "err", err)
	}
}

// stoppedBy is the stop of its request that cut off a write run under
// ctx, if one did (the gateway's stop, not its caller): "" otherwise.
func stoppedBy(ctx context.Context) string {
	if se, ok := context.Cause(ctx).(*StopError); ok {
		return se.Error()
	}
	return ""
}

// cutOffWrite is a write that was cut off.
type cutOffWrite struct {
	owner               string // its owner's scope: the head of its key
	tool, request, call string
	root                string    // its root request's id (its session's): "" if not known
	began               time.Time // when it began
	at                  time.Time
	restart             bool   // a restart cut it off (else its caller went away)
	stopped             string // the stop of its request that cut it off, if one did
	running             bool   // its tool is still running (take): not noted yet
	inFlight            bool   // its caller is still there (take): the retry is refused as still running
	held                uint64 // the take of the retry that is being told it (takeHere), if not 0
	told                bool   // another retry is being told it (take): this one is told too
}

// takes numbers the takes of writes remembered in memory (cutOffWrite.held).
var takes atomic.Uint64

// cutOffKey is the key of a write of tool with the arguments' digest args
// by the owner scope (an idempotency record key's scope, idemKeys).
func cutOffKey(scope, tool, args string) string {
	return scope + tool + "\x00" + args
}

func (t *cutOffs) note(key string, w cutOffWrite) {
	if t.store != nil {
		// Its caller is gone (or it is recovery's): no one waits for this.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r := CutOffRecord{Key: storeKey(w.owner, key), Tool: w.tool, Root: w.root, Request: w.request, Call: w.call,
			Began: w.began, At: w.at, Expires: w.at.Add(CutOffWindow), Restart: w.restart, Stopped: w.stopped}
		if err := t.store.PutCutOff(ctx, &r); err == nil && t.shared {
			return
		}
		// This process's store, or not stored: remembered here too, by
		// its owner's digest, as load remembers it.
		key, w.owner = r.Key, storeOwner(r.Key)
	}
	t.hold(key, w)
}

// load remembers the writes of the store, which this process alone
// uses: no write needs to read it.
func (t *cutOffs) load() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := t.store.ListCutOffs(ctx, time.Now())
	if err != nil {
		return // their retries run, as after a restart without a store
	}
	for _, r := range rs {
		t.hold(r.Key, cutOffWrite{owner: storeOwner(r.Key), tool: r.Tool, root: r.Root, began: r.Began, request: r.Request, call: r.Call,
			at: r.At, restart: r.Restart, stopped: r.Stopped})
	}
}

// hold remembers w under key in memory.
func (t *cutOffs) hold(key string, w cutOffWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]cutOffWrite{}
	}
	if _, ok := t.m[key]; !ok && len(t.m) >= cutOffCap {
		// Past the cap, the oldest write of the owner with the most is
		// dropped: one principal cutting off writes by the thousand
		// forgets its own, not another's.
		now := time.Now()
		per := map[string]int{}
		for k, e := range t.m {
			if now.Sub(e.at) > CutOffWindow {
				delete(t.m, k)
			} else {
				per[e.owner]++
			}
		}
		if len(t.m) >= cutOffCap {
			most := w.owner
			for o, n := range per {
				if n > per[most] {
					most = o
				}
			}
			var oldest string
			for k, e := range t.m {
				if e.owner == most && (oldest == "" || e.at.Before(t.m[oldest].at)) {
					oldest = k
				}
			}
			delete(t.m, oldest)
		}
	}
	t.m[key] = w
	t.n.Store(int64(len(t.m)))
}

// forget drops the write remembered under key if it is w's (not taken, and
// not another's noted since).
func (t *cutOffs) forget(key string, w *cutOffWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok && e.request == w.request && e.call == w.call && e.at.Equal(w.at) {
		delete(t.m, key)
		t.n.Store(int64(len(t.m)))
	}
}

// retryOf says whether a write of the root request root, which started
// at started, may be the retry of a write of the root request wroot that
// began at began: a write of its own session (root request), or of one
// that began after it (a client that reconnected, a sessionless client's
// new request). Another session of the same owner that was open already
// (another agent sharing its principal) is not its retry.
func retryOf(root string, started time.Time, wroot string, began time.Time) bool {
	return wroot == "" || root == wroot || !started.Before(began)
}

// storeKey is the key of a cut-off write in a CutOffStore: digests of its
// owner's scope and of cutOffKey, which hold NULs and the owner's names.
// The owner's (storeOwner) heads it so that the writes a store gives back
// (load) are still told apart by owner past the cap (hold).
func storeKey(scope, key string) string {
	o, sum := sha256.Sum256([]byte(scope)), sha256.Sum256([]byte(key))
	return hex.EncodeToString(o[:8]) + "." + hex.EncodeToString(sum[:])
}

// storeOwner is the digest of the owner's scope at the head of a storeKey.
func storeOwner(key string) string {
	o, _, _ := strings.Cut(key, ".")
	return o
}

// mayHave says whether a write without a key of its own must look for a
// write it retries (take).
func (t *cutOffs) mayHave() bool {
	return t.shared || t.n.Load() > 0 || t.live.Load() > 0
}

// memKey is the key of a write remembered in memory: with a store, its
// key there.
func (t *cutOffs) memKey(id *cutOffID) string {
	if t.store != nil {
		return storeKey(id.scope, id.key())
	}
	return id.key()
}

// take returns the write remembered under id that a write of the root
// request root, started at started, may retry (retryOf), and forgets it:
// a write is answered for once. A write of id still running whose caller
// went away is one too. A shared store is not read here (look).
func (t *cutOffs) take(ctx context.Context, id cutOffID, root string, started time.Time) (cutOffWrite, bool) {
	w, ok := t.takeHere(id, root, started)
	if ok && !w.told {
		t.untake(ctx, id, &w)
		t.release(id, &w)
	}
	return w, ok
}

// untake takes w, taken from memory, from the store too: the next life
// does not tell it again. A write calls it once its own key is claimed
// (call.go): a kill before its refusal is answered leaves that claim,
// whose recovery notes the write cut off again (NoteCutOff), so that the
// next retry is told instead of running it (cutoff.taken, docs/STATE.md).
func (t *cutOffs) untake(ctx context.Context, id cutOffID, w *cutOffWrite) {
	if t.store != nil && !w.running {
		t.takeNote(ctx, t.memKey(&id), id.tool, w.request, w.call,
			"a cut-off write's note not taken from the store once its retry was told: after a restart its next identical retry is answered interrupted again")
	}
}

// look returns the write in the shared store that a write of id, in the
// root request root, started at started, whose key claim claimed, may
// retry (retryOf), and hands it over to that write, call call of request
// request, or takes it over from another retry handed it a moment before:
// each retry that finds it there is told. The claim's statement
// said whether one is unexpired (claim.CutOffRead, PostgreSQL's): most
// often none, and nothing more is read. A store that could not say is read
// now. The write handed over stays in the store, as the retry's, until the
// retry's refusal is made (call.go takes it then): a kill before leaves it
// for the next retry (cutoff.taken, docs/STATE.md), whose claim, on a
// store where it commits before the checkpoint, recovery could not note.
func (t *cutOffs) look(ctx context.Context, id cutOffID, claim *IdemClaim, root string, started time.Time, request, call string) (cutOffWrite, bool) {
	if claim.CutOffRead && !claim.CutOffLive {
		return cutOffWrite{}, false
	}
	// A retry that another one was handed the write by, between this
	// one's read and its hand-over, reads it again: while the write is
	// there (not yet answered for), each retry of it is told, and none
	// runs it. The cut-off call it names is the first read's.
	var first *CutOffRecord
	for range handTries {
		r, err := t.store.GetCutOff(ctx, claim.CutOff, time.Now())
		if err != nil || r == nil || !retryOf(root, started, r.Root, r.Began) {
			return cutOffWrite{}, false // unreadable, or answered for: the write runs, as with none
		}
		if first == nil {
			first = r
		}
		took, err := t.store.HandCutOff(ctx, claim.CutOff, r.Request, r.Call, request, call)
		if err != nil {
			return cutOffWrite{}, false
		}
		if took {
			break
		}
	}
	return cutOffWrite{owner: id.scope, tool: first.Tool, root: first.Root, began: first.Began, request: first.Request, call: first.Call,
		at: first.At, restart: first.Restart, stopped: first.Stopped}, true
}

// handTries bounds the reads of a cut-off write that other retries keep
// being handed (look): past them it is still there, being answered for,
// and this retry is told too, not handed it.
const handTries = 8

// release forgets the write w of id, taken from memory (takeHere), once its
// retry's refusal is made, if that retry holds it.
func (t *cutOffs) release(id cutOffID, w *cutOffWrite) {
	if w.held == 0 || w.told {
		return
	}
	key := t.memKey(&id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok && e.held == w.held {
		delete(t.m, key)
		t.n.Store(int64(len(t.m)))
	}
}

// takeHere is take of the writes in the runtime's memory.
func (t *cutOffs) takeHere(id cutOffID, root string, started time.Time) (cutOffWrite, bool) {
	for {
		w, ok, wait := t.takeHereOnce(id, root, started)
		if wait == nil {
			return w, ok
		}
		<-wait // a note on its way to the shared store: told from there once stored
	}
}

// takeHereOnce is takeHere, or the note to wait for before it: one of a
// write the retry may be of, on its way to the shared store.
func (t *cutOffs) takeHereOnce(id cutOffID, root string, started time.Time) (cutOffWrite, bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n.Load() > 0 {
		key := t.memKey(&id)
		w, ok := t.m[key]
		switch {
		case ok && time.Since(w.at) > CutOffWindow:
			delete(t.m, key)
			t.n.Store(int64(len(t.m)))
		case ok && retryOf(root, started, w.root, w.began) && w.held != 0:
			// Another retry is being told it: this one is told too,
			// and leaves it to that one (release).
			w.told = true
			return w, true, nil
		case ok && retryOf(root, started, w.root, w.began):
			// Kept, held by this retry, until its refusal is made
			// (release): a retry that comes meanwhile is told too.
			w.held = takes.Add(1)
			t.m[key] = w
			return w, true, nil
		}
	}
	if rs, ok := t.running[id]; ok {
		for i := range rs.len() {
			if r := rs.at(i); !r.taken && r.started && r.ctx.Err() != nil && retryOf(root, started, r.root, r.began) && r.early.here() {
				r.taken = true
				t.running[id] = rs
				return cutOffWrite{owner: id.scope, tool: id.tool, root: r.root, began: r.began, request: r.request, call: r.call, at: time.Now(), stopped: stoppedBy(r.ctx), running: true}, true, nil
			}
			if r := rs.at(i); r.early != nil && r.early.state == noteStoring && retryOf(root, started, r.root, r.began) {
				return cutOffWrite{}, false, r.early.done
			}
		}
		// An identical write of the same root request still runs, its
		// caller still there (or gone unnoticed yet): the retry is
		// refused, and nothing runs twice. One of another root request
		// (another agent of the principal) is not: both run, as they do
		// when neither was cut off.
		for i := range rs.len() {
			if r := rs.at(i); !r.taken && r.ctx.Err() == nil && root != "" && r.root == root {
				return cutOffWrite{owner: id.scope, tool: id.tool, root: r.root, began: r.began, request: r.request, call: r.call, inFlight: true}, true, nil
			}
		}
	}
	return cutOffWrite{}, false, nil
}

// here says whether a running write whose caller went away is told to its
// retry from the runtime's memory: not if its note is in the shared store
// (or on its way there), from which its retry is told once, through any
// instance. t.mu is held.
func (e *earlyNote) here() bool {
	return e == nil || e.state == noteFailed || e.state == noteEnded || e.state == noteIdle
}

// refusal is what the retry of w is answered.
func (w *cutOffWrite) refusal() *Result {
	how := "it was cancelled while it ran (its caller hung up, or cancelled it)"
	if w.restart {
		how = "the gateway stopped while it ran"
	} else if w.stopped != "" {
		how = "it was cancelled while it ran, as its " + w.stopped
	}
	return &Result{Status: StatusError, Error: &Error{Guard: "idempotency", Type: TypeInterrupted, Code: "interrupted",
		Message: fmt.Sprintf("The same call of %s, with these arguments, was cut off before its answer was delivered (call %s of request %s, %s UTC): %s, and it may have taken effect. Nothing ran now.",
			w.tool, w.call, w.request, w.at.UTC().Format("15:04:05"), how),
		Suggestion: "Check whether it took effect before going on. If it must still happen, call it again with the same arguments: the next call runs."}}
}

// NoteCutOff tells the runtime of a write that a restart cut off while its
// tool ran (recovery's, for each claim it settles as interrupted): record
// is the key of its idempotency record, args the digest of its arguments
// (the record's), root the id of its root request ("" if not known),
// request and call name it, and began is when it began. A record whose key
// the caller gave (not one derived from its root request and call id) is
// left out: a retry with that key is answered by its record. The key is
// derived only if it is exactly "tool:ROOT/CALL" ("tool:CALL/ROOT" for a
// call id the gateway numbered): a caller's own key that merely ends in
// "/CALL" is its own. Without root (its request's record is gone) a key
// that ends in "/CALL" (begins with "CALL/") is taken for a derived one, as
// before.
func (rt *Runtime) NoteCutOff(record, tool, root, request, call, args string, began time.Time) {
	i := strings.LastIndexByte(record, 0)
	if i < 0 || tool == "" || call == "" {
		return // a key of the runtime's own: not a caller's write
	}
	scope, rest := record[:i+1], record[i+1:]
	key, ok := strings.CutPrefix(rest, tool+":")
	if !ok || !derivedKey(key, root, call) {
		return
	}
	rt.cutOffs.note(cutOffKey(scope, tool, args), cutOffWrite{owner: scope, tool: tool, root: root, began: began,
		request: request, call: call, at: time.Now(), restart: true})
}

// derivedKey says whether key is the one derived for call in the root
// request root (idemKeys): "ROOT/CALL", or "CALL/ROOT" for a call id the
// gateway numbered (ids.Numbered).
func derivedKey(key, root, call string) bool {
	first, last := root, call
	if ids.Numbered(call) {
		first, last = call, root
		if root == "" {
			return strings.HasPrefix(key, call+"/")
		}
	} else if root == "" {
		return strings.HasSuffix(key, "/"+call)
	}
	return len(key) == len(first)+1+len(last) && strings.HasPrefix(key, first) && key[len(first)] == '/' && strings.HasSuffix(key, last)
}

// cutOffRefused answers a write that retries the cut-off write w, whose own
// key skey claim claimed: its "executing" checkpoint, if durable with the
// claim, ends as the refusal (nothing ran; recovery must not take it for
// a write cut off), and the key is let go.
func (rt *Runtime) cutOffRefused(c *Call, claim *IdemClaim, skey string, w cutOffWrite) *Result {
	res := w.refusal()
	rt.refuseClaimed(c, claim, skey, res, nil)
	return res
}

// refuseClaimed settles c's claim for a refusal made after it (res, or
// err): its "executing" checkpoint, if durable with the claim, ends so, and
// its key skey is let go.
func (rt *Runtime) refuseClaimed(c *Call, claim *IdemClaim, skey string, res *Result, err error) {
	if claim.Checkpointed {
		end := &c.records().ended
		*end = *claim.Checkpoint
		end.End(res, err)
		rt.opts.Checkpoints.Ended(&c.detached, end)
	}
	rt.idem.Complete(skey, nil)
}

// inFlightRefused answers c, a write without a key of its own whose claim
// found an identical write of its owner still running on a live instance
// (claim.InFlight: PostgreSQL's claim reads it; a retry sent through
// another instance before the first noticed its caller gone, or through
// this one): nothing runs. The write is refused, not waited for: its tool
// may run for as long as its lease, and the answer the retry would wait
// for is the cut-off one that its next retry gets anyway. c's claim is
// released and its checkpoint ended (refuseClaimed), as cutOffRefused's.
func (rt *Runtime) inFlightRefused(c *Call, claim *IdemClaim, skey string) *Result {
	res := inFlightRefusal(c.Tool, claim.InFlightRequest, claim.InFlightAt)
	rt.refuseClaimed(c, claim, skey, res, nil)
	return res
}

// inFlightRefusal is the answer to a write without a key of its own while
// an identical one of its owner, request's call begun at began, still runs.
func inFlightRefusal(tool, request string, began time.Time) *Result {
	return &Result{Status: StatusError, Error: &Error{Guard: "idempotency", Type: TypeInterrupted, Code: "still_running",
		Message: fmt.Sprintf("The same call of %s, with these arguments, is still running (request %s, since %s UTC); nothing ran now, so that it does not run twice.",
			tool, request, began.UTC().Format("15:04:05")),
		Suggestion: "Wait for its answer. If it never reaches you, call again with the same arguments once it ended: a call cut off is answered as such, and the call after runs."}}
}
