// Package entities keeps the version of every entity written through the
// runtime (S3) and serializes writes to one entity, with a wait-for graph
// between the calls that hold and wait for entities to break deadlocks.
// The runtime's state stage refuses (or refreshes) a write based on a
// stale read with it.
//
//	t := entities.New(entities.DefaultMaxExact, parentOf, haltOf)
//	release, err := t.Lock(ctx, &entities.Holder[*Frame, *Request]{Root: root, Frame: f}, []string{"order:7"})
//	...                  // the write runs
//	versions := release(true) // the entities it may have changed get new versions
//
// The table is generic over the runtime's frame type F and request type R,
// which it only compares and walks (a frame's caller is parent(f)).
package entities

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"github.com/agentreach/reach/internal/batch"
)

// DefaultMaxExact is how many entities (the most recently written or read)
// the runtime's table keeps an exact version of.
const DefaultMaxExact = 1 << 16

// versionSlots is the number of hashed slots that hold the versions of the
// entities written longer ago.
const versionSlots = 1 << 12

// Table holds the version of every entity written through the runtime,
// and serializes writes to one entity. Safe for concurrent use.
//
// Versions come from one counter for all entities, so a write always gives
// its entity a version higher than any version handed out before. The
// exact version of the maxExact entities written or read most recently is
// kept (a read keeps an entity exactly from then on, at the version it is
// at); an older one (never one that is locked) is evicted, and its version
// folded into a slot, chosen by a hash of its name, that keeps the highest
// version of all the entities evicted into it. An entity that is not kept
// exactly is at its slot's version. So memory stays bounded in a gateway
// that runs for months, and a stale read is never missed: a write since a
// read raised the entity's version above what was read, and a slot's
// version only grows, as does an entity's when it is kept exactly again.
// Two entities in one slot may only make a read look stale when it is not
// (the write is refused or refreshed, the safe side), when the entity
// itself was evicted between the read and the write: the eviction of
// another entity into the slot raises its version.
type Table[F, R comparable] struct {
	parent  func(F) F               // a frame's caller
	halt    func(R) <-chan struct{} // closed when a request is stopped (cancel or isolate)
	mu      sync.Mutex
	seq     uint64                   // the last version handed out
	version map[string]*list.Element // exact versions (*versioned), of the entities in recent
	recent  list.List                // *versioned, least recently written or read first
	max     int                      // the most entities in version
	seed    maphash.Seed
	slots   [versionSlots]uint64       // the highest version of the entities evicted into each slot
	holders map[string][]*Holder[F, R] // the calls holding each entity's write lock, all of one root request
	waiting map[*Holder[F, R]]struct{} // calls waiting for an entity
	changed chan struct{}              // closed and replaced when a lock is released
}

// New returns an empty table that keeps the exact versions of maxExact
// entities (at least one). parent returns a frame's caller (the zero F at
// the top); halt returns the channel that is closed when a request is
// stopped with cancel or isolate.
func New[F, R comparable](maxExact int, parent func(F) F, halt func(R) <-chan struct{}) *Table[F, R] {
	return &Table[F, R]{parent: parent, halt: halt, version: map[string]*list.Element{}, max: max(maxExact, 1),
		seed: maphash.MakeSeed(), holders: map[string][]*Holder[F, R]{}, waiting: map[*Holder[F, R]]struct{}{},
		changed: make(chan struct{})}
}

// Holder is one call that takes entity write locks: the locks belong to its
// root request, so the request's calls share them (a write nested in a
// write of the same entity takes it again), except for an undo that writes
// as the request it compensates.
type Holder[F, R comparable] struct {
	Root  R           // the root request it writes as
	Frame F           // the call's frame
	Batch *batch.Mark // the Batch call it runs under, if any
	// Turn, for a call a model turn asked for (a framework's tool call,
	// each of a turn's parallel calls its own call at the gateway), is
	// that turn's frame: the calls of one turn are a batch, and two of
	// them that write one entity take turns (R4). Neither is on the
	// other's stack, so neither can be waiting for the other through the
	// gateway (a call one of them makes is beneath it).
	Turn F
	// Origin, for an undo that writes as the request it compensates, is
	// the frame of the call it runs for (the failing call, or the one that
	// called Request.Compensate), and Batch is that call's. The undo shares
	// the locks of that call and of its callers, which wait for it, and of
	// every other call of the request that may be waiting for it; it waits
	// for the request's calls that hold the entity and provably do not wait
	// for it: they may be writing it right now.
	Origin F
	// Undoes, for such an undo, is the request it compensates if that was
	// running when the compensation began: once it is stopped (cancel or
	// isolate), the undo waits no longer (Lock fails with ErrHalted).
	Undoes R
	// Show, if not nil, returns an entity of the call's as it may be shown
	// (to the model, in logs, records and views): its name with what came
	// from a secret argument masked. Names are the real ones (the versions
	// are keyed by them); only what is shown goes through Show.
	Show func(name string) string
	// Released, if not nil, is told the versions the entities have as
	// release lets go of them, before a call waiting for them can take
	// them: the request notes its own write's version there, so that its
	// next write of them (a turn's other call, which waited) does not find
	// it changed since the request read it.
	Released func(vers map[string]uint64)
	waits    string // the entity it waits for, while it waits
}

// show returns entity n of h's call as it may be shown (Holder.Show).
func (h *Holder[F, R]) show(n string) string {
	if h == nil || h.Show == nil {
		return n
	}
	return h.Show(n)
}

// on reports whether f is on h's stack: h's frame or one of its callers,
// or, for an undo, the call it runs for or one of that call's callers.
func (t *Table[F, R]) on(h *Holder[F, R], f F) bool {
	var zero F
	for _, s := range [2]F{h.Frame, h.Origin} {
		for a := s; a != zero; a = t.parent(a) {
			if a == f {
				return true
			}
		}
	}
	return false
}

// blockedBy reports whether o, which holds an entity, keeps h from taking
// it: o belongs to another root request; or both are calls one model turn
// asked for (Holder.Turn); or h is an undo and o another
// call of its request that is not on h's stack and provably independent
// of the call the undo runs for (see batch.Mark); or o is an undo and h is
// not on its stack.
//
// Independence must be proven: a call that holds the entity may be
// waiting for the call the undo runs for, which waits for its undo (a
// tool's Func that makes a call with its request's context rather than its
// own, say), and an undo that waited for it would wait for ever. So an
// undo shares the lock of every call of its request it cannot prove
// independent. A call that waits for an undo never has that problem: it
// has not started, so nothing it runs can be what the undo waits for.
func (t *Table[F, R]) blockedBy(h, o *Holder[F, R]) bool {
	var zero F
	switch {
	case o.Root != h.Root:
		return true
	case h.Origin == zero && o.Origin == zero:
		return h.Turn != zero && h.Turn == o.Turn && h.Frame != o.Frame
	case t.on(h, o.Frame):
		return false
	case o.Origin == zero:
		return h.Batch.Independent(o.Batch)
	}
	return true
}

// versioned is an entity's exact version.
type versioned struct {
	name string
	v    uint64
}

// Current returns the entity's version.
func (t *Table[F, R]) Current(name string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.versionOf(name)
}

// Observe returns the entity's version as a request records it when it
// reads the entity, and keeps it exactly, as the most recently used, from
// now on: an entity not kept exactly gets an exact version at its slot's,
// which is all a write since the read has to be above, so later evictions
// into the slot do not make the request's write look stale. The entity is
// evicted again, like any other, once maxExact more recently used ones are
// kept.
func (t *Table[F, R]) Observe(name string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.version[name]; ok {
		t.recent.MoveToBack(e)
		return e.Value.(*versioned).v
	}
	v := t.slots[t.slot(name)]
	t.version[name] = t.recent.PushBack(&versioned{name, v})
	t.evict()
	return v
}

// versionOf returns the entity's version: exact, or its slot's (t.mu held).
func (t *Table[F, R]) versionOf(name string) uint64 {
	if e, ok := t.version[name]; ok {
		return e.Value.(*versioned).v
	}
	return t.slots[t.slot(name)]
}

func (t *Table[F, R]) slot(name string) int {
	return int(maphash.String(t.seed, name) % versionSlots)
}

// bump gives the entity a new version, kept exactly (t.mu held).
func (t *Table[F, R]) bump(name string) {
	t.seq++
	if e, ok := t.version[name]; ok {
		e.Value.(*versioned).v = t.seq
		t.recent.MoveToBack(e)
		return
	}
	t.version[name] = t.recent.PushBack(&versioned{name, t.seq})
}

// evict folds the least recently used entities that are not locked
// into their slots while more than t.max are kept exactly (t.mu held).
func (t *Table[F, R]) evict() {
	for e := t.recent.Front(); e != nil && len(t.version) > t.max; {
		next := e.Next()
		if v := e.Value.(*versioned); len(t.holders[v.name]) == 0 {
			s := &t.slots[t.slot(v.name)]
			*s = max(*s, v.v)
			delete(t.version, v.name)
			t.recent.Remove(e)
		}
		e = next
	}
}

// ErrHalted is Lock's error when the request an undo compensates
// (Holder.Undoes) was stopped while the undo waited.
var ErrHalted = errors.New("the request the undo compensates was stopped")

// Deadlock is Lock's error when waiting for Entity would close a cycle of
// calls that wait for each other: Holder holds it (the first holder on
// the cycle), and waits, through Waiter, for the entity Waiter waits for
// (Waiting), which the caller holds. Shown holds the two as they may be
// shown (Holder.Show of the caller and of Waiter): the error's texts say
// those.
type Deadlock[F, R comparable] struct {
	Entity  string
	Holder  *Holder[F, R]
	Waiter  *Holder[F, R]
	Waiting string
	Shown   [2]string // Entity and Waiting as shown
}

// shown returns Entity and Waiting as they may be shown.
func (d *Deadlock[F, R]) shown() (entity, waiting string) {
	return cmp.Or(d.Shown[0], d.Entity), cmp.Or(d.Shown[1], d.Waiting)
}

func (d *Deadlock[F, R]) Error() string {
	e, w := d.shown()
	return fmt.Sprintf("writing %s would deadlock: it is held by a call that waits for %s", Words(e), Words(w))
}

// Lock takes the write locks of names (sorted) for h, waiting while another
// call holds one that blocks h (see blockedBy), unless waiting would close
// a cycle (a *Deadlock), or ctx ends (context.Cause(ctx)), or the request
// an undo compensates is stopped (ErrHalted); then it takes none. release
// lets go of the locks and returns the versions the entities had as it
// did (bumped for a write that may have taken effect), read before another
// request can write them.
func (t *Table[F, R]) Lock(ctx context.Context, h *Holder[F, R], names []string) (release func(bump bool) map[string]uint64, err error) {
	var held []string
	release = func(bump bool) map[string]uint64 {
		t.mu.Lock()
		vers := make(map[string]uint64, len(held))
		for _, n := range held {
			if bump {
				t.bump(n)
			}
			vers[n] = t.versionOf(n)
			hs := slices.DeleteFunc(t.holders[n], func(o *Holder[F, R]) bool { return o == h })
			if len(hs) == 0 {
				delete(t.holders, n)
			} else {
				t.holders[n] = hs
			}
		}
		if bump {
			t.evict()
		}
		if h.Released != nil {
			h.Released(vers)
		}
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
		return vers
	}
	blocks := func(o *Holder[F, R]) bool { return t.blockedBy(h, o) }
	for _, n := range names {
		for {
			t.mu.Lock()
			if !slices.ContainsFunc(t.holders[n], blocks) {
				t.holders[n] = append(t.holders[n], h)
				held = append(held, n)
				t.mu.Unlock()
				break
			}
			h.waits = n
			t.waiting[h] = struct{}{}
			if o, w := t.deadlock(h); o != nil {
				d := &Deadlock[F, R]{Entity: n, Holder: o, Waiter: w, Waiting: w.waits,
					Shown: [2]string{h.show(n), w.show(w.waits)}}
				delete(t.waiting, h)
				t.mu.Unlock()
				release(false)
				return nil, d
			}
			ch := t.changed
			t.mu.Unlock()
			var halt <-chan struct{}
			var zero R
			if h.Undoes != zero {
				halt = t.halt(h.Undoes)
			}
			var stop error
			select {
			case <-ch:
			case <-ctx.Done():
				stop = context.Cause(ctx)
			case <-halt:
				stop = ErrHalted
			}
			t.mu.Lock()
			delete(t.waiting, h)
			t.mu.Unlock()
			if stop != nil {
				release(false)
				return nil, stop
			}
		}
	}
	return release, nil
}

// deadlock reports whether h, about to wait, closes a cycle of calls that
// wait for each other; it returns the first holder h would wait for and
// the call that holder waits for. A holder waits for a waiting call that
// runs beneath it (on its stack, see on), and, as a whole request, for a
// call of its root request that waits for another request's entity: a
// request that waits may be holding up any of its calls.
func (t *Table[F, R]) deadlock(h *Holder[F, R]) (*Holder[F, R], *Holder[F, R]) {
	type hop struct{ w, o1, w1 *Holder[F, R] } // a waiter, and the first holder and waiter on the path to it
	seen := map[*Holder[F, R]]bool{h: true}
	stack := []hop{{w: h}}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, o := range t.holders[cur.w.waits] {
			if !t.blockedBy(cur.w, o) {
				continue
			}
			for w := range t.waiting {
				if !t.holdsUp(w, o) {
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
func (t *Table[F, R]) holdsUp(w, o *Holder[F, R]) bool {
	if t.on(w, o.Frame) {
		return true
	}
	hs := t.holders[w.waits]
	return w.Root == o.Root && len(hs) > 0 && hs[0].Root != w.Root
}

// Words writes an entity's name as words: "order:7" is "order 7".
func Words(n string) string { return strings.Replace(n, ":", " ", 1) }

// Seen remembers, per request tree, the version of each entity when it
// was last read or written by that tree. The zero Seen is empty and ready;
// safe for concurrent use.
type Seen struct {
	mu sync.Mutex
	v  map[string]uint64
}

// Get returns the version the tree last saw of entity n, if it saw it.
func (s *Seen) Get(n string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.v[n]
	return v, ok
}

// Set records that the tree saw entity n at version v.
func (s *Seen) Set(n string, v uint64) {
	s.mu.Lock()
	if s.v == nil {
		s.v = map[string]uint64{}
	}
	s.v[n] = v
	s.mu.Unlock()
}

// Claim is one entity of a write that runtimes sharing a store give a new
// version (store.Entities.ClaimEntities): with Check, only if the entity
// is still at From, the version its request read it at (0: never
// written); without, whatever it is at.
type Claim struct {
	Name  string
	From  uint64
	Check bool
}
