// Package cluster is what several gateway instances on one PostgreSQL
// store need (issue 17): each has a name, heartbeats, and shares with the
// others the requests they run, their budgets, their stops and the stacks
// of their calls. The store is the truth; a notification is only a
// wake-up.
//
//	c, err := cluster.New(ctx, &cluster.Options{Store: pg, Instance: "gw-1"})
//	rec := c.Recorder(durable.New(pg, nil, log)) // the runtime's Checkpoints, Requests, DeadLetters
//	rt := reach.New(&reach.Options{Requests: rec, Checkpoints: rec, Middleware: []reach.Middleware{c.Admission()}, ...})
//	c.Start(rt, onApproval) // heartbeats, stops from the others, recovery of the dead ones' work
//	defer c.Close()
//
// # What each instance shares
//
//   - A request: the first instance that gets a call of it begins it
//     (postgres.Store.JoinRequest); any other joins it, as it was begun
//     (principal, budget, trace, start), so that both count one budget and
//     one wall clock; it ends when the last instance leaves it.
//   - Its budget: before each tool call runs, Admission debits the call
//     from the request's ledger (and its ancestors'), under the ledger's
//     lock: two instances together never pass a budget.
//   - Its end by its client (End): stored and woken like a stop; each
//     instance ends its part (one that did not listen then ends it when it
//     listens again), and a recovery ends such a request without undoing
//     anything (postgres.Store.SettleRequest). An end that an instance
//     hears while its part is being begun, or just before a call joins the
//     request there, finds nothing to end yet: the instance remembers the
//     ends it heard for a TTL, and a part registered whose end it heard
//     asks the store; if its client ended it, the part leaves at once and
//     its begin is refused (request_ended).
//   - Its stop: Request.Stop stores the stop (raised, never lowered) under
//     the same lock and wakes every instance (LISTEN/NOTIFY); each stops
//     its part of the request. An instance that missed the wake-up sees the
//     stop at the request's next call, whose admission refuses it, or
//     within Options.Backstop, when it reads the stops and ends of the
//     requests it runs (backstop); one that was cut off reads the stops it
//     missed when it connects again.
//   - The stack of a call: each checkpoint keeps its call's ancestors, so
//     that a call another instance places under it (traceparent,
//     reach/parent) is checked against them (Parent).
//   - Liveness: each life heartbeats; a life whose heartbeat stops for the
//     TTL is dead: its idempotency claims are settled by their
//     checkpoints, its open checkpoints marked, and the requests whose
//     every instance is dead are interrupted by one live instance, which
//     claims them first (SKIP LOCKED) and runs their undos, each once
//     under its idempotency key (internal/durable).
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// Options configure New.
type Options struct {
	// Store is the store the instances share.
	Store *postgres.Store
	// Instance is this instance's name; no other running instance has it.
	Instance string
	// TTL is how long a life may go without a heartbeat before the others
	// take it for dead; if zero, 10s. Heartbeats come every TTL/5.
	TTL time.Duration
	// Logger; if nil, logs are discarded.
	Logger *slog.Logger
	// Backstop is how often the requests running here are read from the
	// store for their stops and ends (postgres.Store.Marks), whatever
	// became of the notifications that wake the instances (a lost one, a
	// listening connection dead without a word): a stop issued on any
	// instance stops the calls running here within about this long. If
	// zero, 1s. Nothing is read while no request runs here.
	Backstop time.Duration
	// StopsFile, if not "", is a file in this instance's data folder
	// where a stop the store refused is kept (appended, synced) until
	// the store takes it, so that a life killed before then has its
	// next start store it (Start), and the other instances stop their
	// parts: without it that stop died with the process.
	StopsFile string
}

// Cluster is this instance among those that share a store. Make one with
// New, then Start it with the runtime.
type Cluster struct {
	st      *postgres.Store
	name    string
	owner   string // "<name>/<life>"
	started time.Time
	ttl     time.Duration
	every   time.Duration // Options.Backstop
	log     *slog.Logger

	rt         *reach.Runtime
	onApproval func(id string)
	onEnd      func(id string)
	recover    func(ctx context.Context) error
	sessions   atomic.Pointer[SessionEnds] // OnSessionEnd

	mu    sync.Mutex
	local map[string]*reach.Request // the requests running here, by id
	// above holds, for a sub-request another instance began and this one
	// joined (its part here has no parent), the requests above it as the
	// store has them, nearest first: its calls and turns here are debited
	// from their ledgers too (ledgerChain).
	above map[string][]ledgerLink
	// heard holds the ends heard lately (endLocal), by request, when heard:
	// a part of one registered here within the TTL asks the store whether
	// its client ended it (Recorder.register). At most maxHeard; when more
	// come within a TTL they are forgotten, and until deaf every part
	// registered asks.
	heard map[string]time.Time
	deaf  time.Time
	// joins counts the joins in flight (JoinRequest written, its part not
	// registered yet), by request; stray holds the requests whose join was
	// refused after it may have written a part (its bound fired as it
	// committed, say), to leave (leaveStrays); leaving, those being left:
	// a join of one waits for it.
	joins map[string]int
	// seq counts the joins this life began (enterJoin): a join carries its
	// number to the store, and a leave of a stray part the count when it
	// was decided, so that a join begun before the leave and reaching the
	// server after it writes nothing (postgres.Store.JoinRequestAfter).
	seq     int64
	stray   map[string]bool
	leaving map[string]chan struct{}
	// unstored holds the stops applied here that the store did not take
	// (Recorder.RequestStopped), by request: stored again after each
	// heartbeat the store takes (storeStops), and until then the part
	// does not leave its request (its other parts, which the stop has not
	// reached, would end it with no stop). storing is set while
	// storeStopsApart's goroutine runs.
	unstored map[string]*unstoredStop
	storing  atomic.Bool
	// stopsFile is Options.StopsFile; filed holds the stops an earlier
	// life left in it that the store has not taken yet (restoreStops).
	stopsFile string
	filed     []filedStop
	// fileMu orders the stops file's appends (keepStop), reading
	// (restoreStops) and removal (unfileStops); it is taken before c.mu,
	// never while c.mu is held.
	fileMu sync.Mutex
	// unleft holds the parts whose leave the store did not take
	// (Recorder.RequestEnded), by request: left again after each
	// heartbeat the store takes (leaveAgain). Before, such a part stayed
	// in the store for the life of this instance, and its request never
	// ended.
	unleft map[string]*unleftPart
	// strayLeave is set while leaveStraysApart's goroutine runs, and
	// recovering while a recovery of dead lives (Start's recover) does.
	strayLeave, recovering atomic.Bool
	// orphaned is set when this instance left a request without ending
	// it (stopped, here or through another instance not heard yet, it
	// holds undos of a dead part, or handed over by a part that left):
	// the next recovery comes at the next heartbeat that may recover, not
	// up to 10 TTLs later.
	orphaned atomic.Bool
	// afterJoin, in tests, stands for what the store's answer to a join
	// became (a bound that fired as its commit landed).
	afterJoin func(error) error
	// sendJoin, in tests, sends a join to the store instead of joinStore
	// (one held on its way, say).
	sendJoin func(ctx context.Context, rec *store.Request, seq int64) (*store.Request, postgres.JoinOutcome, error)

	view    atomic.Pointer[liveView]
	healthy atomic.Int64 // unix ns since when heartbeats succeed without a break; 0 after one failed
	beatOK  atomic.Int64 // unix ns of the last heartbeat that succeeded
	lost    atomic.Bool  // another process took this instance's name (Lost)

	// The lease (Leased): base is the monotonic origin, lease the time
	// since it until which this life may act (the send time of its last
	// heartbeat the store accepted, plus the TTL less leaseMargin),
	// renewed is closed and replaced at each renewal, fenced is set once
	// a heartbeat found this life forgotten by the others (Fenced).
	base    time.Time
	lease   atomic.Int64
	renewed atomic.Pointer[chan struct{}]
	fenced  atomic.Bool
	beaten  bool // beat went through once (the first inserts the row)
	// lastSent is when (since base) the last heartbeat the store took
	// was sent.
	lastSent atomic.Int64
	caught   atomic.Int64 // unix ns of the newest stop read (catchUp)
	catchMu  sync.Mutex   // one catchUp at a time (the listener's, the backstop's again)
	recatch  atomic.Bool  // a read of the last catchUp failed: the backstop runs it again

	holdWaits holdWaits // model turns waiting for a hold to be let go (holdwake.go)

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	// early ends the heartbeats New begins (beatEarly), earlyDone is
	// closed once they ended: Start's loop heartbeats from then on.
	early, earlyDone chan struct{}
	startOnce        sync.Once
}

// liveView is who was alive at a heartbeat.
type liveView struct {
	at    time.Time
	alive map[string]bool // by owner
	dead  []string        // owners whose heartbeat stopped
}

// New registers this instance on the store: it takes its name
// (postgres.Store.HoldInstance: a second process of the same name is
// refused) and heartbeats, once and then every TTL/5 until Start (whose
// loop goes on with it) or Close. Its earlier lives are dead once their
// heartbeats are older than the TTL (one that lost its lock's connection
// may still run until it finds the name taken: see Lost).
func New(ctx context.Context, o *Options) (*Cluster, error) {
	if o == nil || o.Store == nil || o.Instance == "" {
		return nil, errors.New("cluster.New: a store and an instance name are needed")
	}
	if strings.Contains(o.Instance, "/") {
		return nil, fmt.Errorf("cluster.New: the instance name %q has a '/'", o.Instance)
	}
	c := &Cluster{st: o.Store, name: o.Instance, ttl: o.TTL, every: o.Backstop, log: o.Logger, started: time.Now(),
		local: map[string]*reach.Request{}, heard: map[string]time.Time{}, stop: make(chan struct{}), base: time.Now(),
		joins: map[string]int{}, stray: map[string]bool{}, leaving: map[string]chan struct{}{},
		unstored: map[string]*unstoredStop{}, unleft: map[string]*unleftPart{}, stopsFile: o.StopsFile}
	ch := make(chan struct{})
	c.renewed.Store(&ch)
	if c.ttl == 0 {
		c.ttl = 10 * time.Second
	}
	if c.every <= 0 {
		c.every = time.Second
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	rand.Read(b[:])
	c.owner = c.name + "/" + hex.EncodeToString(b[:])
	if err := c.st.HoldInstance(ctx, c.name); err != nil {
		if errors.Is(err, postgres.ErrInstanceRunning) {
			return nil, fmt.Errorf("instance %s runs already on this store: give this gateway another name (instance: in the configuration)", c.name)
		}
		return nil, err
	}
	if err := c.beat(ctx); err != nil {
		return nil, err
	}
	if earlyBeats {
		c.early, c.earlyDone = make(chan struct{}), make(chan struct{})
		c.wg.Add(1)
		go c.beatEarly()
	}
	return c, nil
}

// earlyBeats says New begins the heartbeats (beatEarly); the tests of this
// package that drive a life's heartbeats themselves until Start, or hold
// them (a paused process), turn it off.
var earlyBeats = true

// beatEarly heartbeats from New until Start (or Close). What a gateway
// does between the two (it connects its upstreams and recovers its earlier
// life's work) may take longer than the TTL, on a loaded machine or with a
// slow upstream: with New's one heartbeat, the others took the new life
// for dead and recovered its (empty) work, and its first heartbeat after
// Start fenced it: it admitted no work until restarted. Its lease lapsed
// too, for a recovery that waits for it.
func (c *Cluster) beatEarly() {
	defer c.wg.Done()
	defer close(c.earlyDone)
	t := time.NewTicker(max(c.ttl/5, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.early:
			return
		case <-c.stop:
			return
		case <-c.st.NameLost(): // Start's loop says so
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl)
		err := c.beat(ctx)
		cancel()
		if errors.Is(err, errFenced) || errors.Is(err, errLost) {
			return
		}
		if err != nil {
			c.log.Warn("cluster: a heartbeat failed", "instance", c.name, "err", err)
		}
	}
}

// endEarly ends the heartbeats New began, and waits for the last one.
func (c *Cluster) endEarly() {
	if c.early == nil { // not made by New
		return
	}
	c.startOnce.Do(func() { close(c.early) })
	<-c.earlyDone
}

// Owner returns this life's name, "<instance>/<life>": what its
// idempotency claims and checkpoints are owned by.
func (c *Cluster) Owner() string { return c.owner }

// Instance returns the instance's name.
func (c *Cluster) Instance() string { return c.name }

// TTL returns how long a life may go without a heartbeat.
func (c *Cluster) TTL() time.Duration { return c.ttl }

// errLost refuses the work of an instance that lost its name.
var errLost = errors.New("this instance lost its name on the store to another process of the same name, and stops")

// Lost is closed when another process took this instance's name on the
// store (its lock's connection dropped, and the other was let in): from
// then on this instance heartbeats no more, admits no call nor model turn,
// and should shut down, so that two processes never run under one name;
// the others take its life for dead once its last heartbeat is older than
// the TTL.
func (c *Cluster) Lost() <-chan struct{} { return c.st.NameLost() }

// beat heartbeats and reads who is alive.
func (c *Cluster) beat(ctx context.Context) error {
	if c.lost.Load() {
		return errLost
	}
	if c.fenced.Load() {
		return errFenced
	}
	sent := time.Since(c.base)
	judged, inserted, err := c.st.Beat(ctx, c.owner, c.name, c.started)
	if err != nil {
		c.healthy.Store(0)
		return err
	}
	if judged || (inserted && c.beaten) {
		c.fence(ctx, inserted)
		return errFenced
	}
	if last := time.Duration(c.lastSent.Load()); c.beaten && sent-last > c.ttl/2 {
		// A break (a pause, a stall, an outage): the others may have taken
		// this life for dead. One that marks it first (Judge) fences it
		// above; an older recoverer does not mark (nor forget a life that
		// heartbeats again, Forget): the requests that run here, stored
		// interrupted, say it recovered them.
		recovered, err := c.recoveredHere(ctx)
		if err != nil {
			c.healthy.Store(0)
			return err
		}
		if recovered {
			c.fence(ctx, true) // and its row, just made alive, goes
			return errFenced
		}
	}
	c.beaten = true
	c.lastSent.Store(int64(sent))
	c.renew(sent)
	lives, err := c.st.Lives(ctx, c.ttl)
	if err != nil {
		c.healthy.Store(0)
		return err
	}
	v := &liveView{at: time.Now(), alive: map[string]bool{}}
	for _, l := range lives {
		// A life with a fresh heartbeat is alive, even an earlier life of
		// this instance's name: holding the name does not prove it dead
		// (its lock's connection may have dropped while it ran on, and
		// stops only when it fails to take its name again).
		if l.Alive {
			v.alive[l.Owner] = true
		} else {
			v.dead = append(v.dead, l.Owner)
		}
	}
	c.view.Store(v)
	now := time.Now().UnixNano()
	if prev := c.beatOK.Swap(now); prev != 0 && time.Duration(now-prev) > c.ttl/2 {
		// A break none of whose heartbeats failed: they stalled (the
		// store held them, a lock, a network that retransmitted, this
		// process paused). The others' may have stalled as long, and come
		// after this view: as after a failed one, judge no one for a TTL.
		c.healthy.Store(now)
	} else {
		c.healthy.CompareAndSwap(0, now)
	}
	return nil
}

// leaseMargin is what a lease keeps short of the TTL: the others take a
// life for dead once its last heartbeat, by the store's clock, is a TTL
// old; it was received after it was sent, so a lease counted from the
// send lapses before then, by the margin too (clock rates, a heartbeat
// the store took long to answer).
func leaseMargin(ttl time.Duration) time.Duration { return ttl / 4 }

// errFenced refuses the heartbeats of a life the others forgot.
var errFenced = errors.New("this instance's life was taken for dead by the others and its work recovered: it admits no more work until restarted")

// renew extends the lease to a TTL (less the margin) after sent, the
// monotonic time since base at which an accepted heartbeat was sent, and
// wakes the calls that wait for it.
func (c *Cluster) renew(sent time.Duration) {
	until := int64(sent + c.ttl - leaseMargin(c.ttl))
	for {
		cur := c.lease.Load()
		if cur >= until || c.lease.CompareAndSwap(cur, until) {
			break
		}
	}
	ch := make(chan struct{})
	if old := c.renewed.Swap(&ch); old != nil {
		close(*old)
	}
}

// Leased returns nil if this life holds its lease, so that a call may be
// dispatched (or a durable step taken) in its name: its last heartbeat
// the store accepted was sent less than the TTL, less a margin, ago. This
// costs an atomic load and a monotonic clock read. A life whose lease
// lapsed (the store did not answer its heartbeats, or the process was
// paused: stopped, a VM paused, a stall) waits for its next heartbeat, at
// most until ctx's deadline or a TTL, then refuses store_unavailable:
// the others may have taken it for dead and recovered its work. A life
// the others forgot (Fenced) refuses at once.
func (c *Cluster) Leased(ctx context.Context) error {
	if time.Since(c.base) < time.Duration(c.lease.Load()) {
		return nil
	}
	return c.waitLease(ctx)
}

func (c *Cluster) waitLease(ctx context.Context) error {
	t := time.NewTimer(c.ttl)
	defer t.Stop()
	for {
		if c.fenced.Load() {
			return fencedError(c.name)
		}
		if c.lost.Load() {
			return lostError(c.name)
		}
		ch := c.renewed.Load()
		if time.Since(c.base) < time.Duration(c.lease.Load()) {
			return nil
		}
		var wait <-chan struct{}
		if ch != nil {
			wait = *ch
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return leaseError(c.name)
		case <-t.C:
			return leaseError(c.name)
		}
	}
}

// StoreDown reports whether the store failed this life's last heartbeat
// (it did not answer within a TTL, or refused it), until one succeeds
// again: every call is then refused store_unavailable, so /readyz sends
// the traffic elsewhere. It costs an atomic load: the heartbeats, every
// TTL/5, are what ask the store.
func (c *Cluster) StoreDown() bool {
	return c.healthy.Load() == 0 && !c.lost.Load() && !c.fenced.Load()
}

// Fenced reports whether a heartbeat of this life found its row gone:
// the others took it for dead (its heartbeats stopped for a TTL: the
// process was paused, or cut off from the store) and recovered its work.
// It then stopped its parts of requests, admits no call nor model turn,
// and heartbeats no more: the process must be restarted (a new life).
func (c *Cluster) Fenced() bool { return c.fenced.Load() }

// fence is what a life does when it finds itself judged dead or
// forgotten: it does not re-create itself (a row its heartbeat inserted,
// or made alive again after an older recoverer recovered its work without
// judging it, inserted true, is deleted again; a judged one is left for
// its recoverer to forget), and
// stops the parts of requests that run here, which the others recover.
func (c *Cluster) fence(ctx context.Context, inserted bool) {
	if !c.fenced.CompareAndSwap(false, true) {
		return
	}
	c.healthy.Store(0)
	c.lease.Store(0)
	if inserted {
		if err := c.st.Depart(ctx, c.owner); err != nil {
			c.log.Warn("cluster: forgetting this life again failed", "life", c.owner, "err", err)
		}
	}
	if old := c.renewed.Swap(nil); old != nil {
		close(*old)
	}
	c.mu.Lock()
	var running []*reach.Request
	for _, r := range c.local {
		running = append(running, r)
	}
	c.mu.Unlock()
	c.log.Error("cluster: this instance's heartbeats stopped for longer than instance_ttl (the process was paused, or cut off from the store), and the other instances took it for dead and recovered its work: it stops the parts of requests it ran, admits no more work, and must be restarted (restart reach serve)",
		"instance", c.name, "life", c.owner, "requests", len(running))
	for _, r := range running {
		r.StopWith(reach.Cause{Mode: reach.Isolate, By: "instance " + c.name,
			Reason: "this gateway instance was taken for dead (no heartbeat for instance_ttl) and its part of the request was recovered by another instance",
			At:     time.Now(), Request: r.ID()})
	}
	crashpoint.Reached("cluster.fenced")
}

// Alive reports whether the life owner may still run a call it claimed
// at claimed: false once a heartbeat read after the claim no longer
// finds it alive (store.IdempotencyOptions.Alive).
func (c *Cluster) Alive(owner string, claimed time.Time) bool {
	if owner == c.owner {
		return true
	}
	v := c.view.Load()
	if v == nil || v.alive[owner] {
		return true
	}
	if !c.judges(v.at) {
		return true
	}
	// A life the view finds dead (its heartbeat older than the TTL, by
	// the store's clock) is dead if the view was read well after its
	// claim. One the view does not know at all may have begun after it
	// was read (its claim follows its first heartbeat, which the next view
	// will find): claimed is read on its clock, v.at on this one's, so it
	// is taken for dead only once the view is a TTL newer than its claim,
	// whatever their clocks' skew below that; a life that heartbeats is in
	// every view read within a TTL of its claims.
	margin := time.Second
	if !slices.Contains(v.dead, owner) {
		margin = c.ttl
	}
	return !v.at.After(claimed.Add(margin))
}

// judges reports whether a view of who is alive read at is one to take
// lives for dead by: not one read less than a TTL after this instance's
// own heartbeats began again (the store was unreachable: restarted, cut
// off; or stalled: two heartbeats that succeeded more than half a TTL
// apart), as the others could not heartbeat either, and a life that runs
// on looks dead until its next heartbeat. As for recovery (Start).
func (c *Cluster) judges(at time.Time) bool {
	h := c.healthy.Load()
	return h != 0 && at.Sub(time.Unix(0, h)) >= c.ttl
}

// Dead implements durable.Shared: the lives that died, as of the last
// heartbeat, judged so on the store (postgres.Store.Judge) before their
// work is recovered: one whose heartbeat came since is alive and left be,
// and one judged heartbeats no more (its next heartbeat finds it judged:
// Fenced), so that no life runs on whose work is recovered.
func (c *Cluster) Dead(ctx context.Context) ([]string, error) {
	v := c.view.Load()
	if v == nil || len(v.dead) == 0 {
		return nil, nil
	}
	return c.st.Judge(ctx, v.dead, c.ttl)
}

// Earlier implements durable.Earlier: this instance's earlier lives (its
// name's, not this life), alive by their heartbeat or not. A kill -9 and
// a restart leave one whose heartbeat is still fresh: it is not judged
// dead before the TTL, since one whose lock's connection dropped may run
// on, but what its open writes may have moved can be said at once.
func (c *Cluster) Earlier(ctx context.Context) ([]string, error) {
	lives, err := c.st.Lives(ctx, c.ttl)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range lives {
		if l.Name == c.name && l.Owner != c.owner {
			out = append(out, l.Owner)
		}
	}
	return out, nil
}

// OpenFramesOf implements durable.Shared.
func (c *Cluster) OpenFramesOf(ctx context.Context, owners []string) ([]*store.Frame, error) {
	return c.st.OpenFramesOf(ctx, owners)
}

// ClaimOrphans implements durable.Shared.
func (c *Cluster) ClaimOrphans(ctx context.Context, n int) ([]string, error) {
	return c.st.ClaimOrphans(ctx, c.owner, c.ttl, n)
}

// Release implements durable.Shared.
func (c *Cluster) Release(ctx context.Context, id string) error {
	return c.st.Release(ctx, id, c.owner)
}

// Forget implements durable.Shared.
func (c *Cluster) Forget(ctx context.Context, owner string) error {
	return c.st.Forget(ctx, owner, c.ttl)
}

var _ durable.Shared = (*Cluster)(nil)

// Start begins the instance's background work with rt (built with
// Recorder and Admission): heartbeats every TTL/5; the stops and ends
// (End) of the other instances applied to the requests running here (and
// those missed while cut off or before it listened, read again on each
// connection); onApproval (if not nil) told
// of every approval written by any instance; and, once its heartbeats
// have gone on for a TTL, recover run every TTL/2 (durable.Recover with
// this cluster as its Shared), for the work of instances that died.
func (c *Cluster) Start(rt *reach.Runtime, onApproval func(id string), recover func(ctx context.Context) error) error {
	c.endEarly() // its loop below heartbeats from now on, one beat at a time
	c.rt, c.onApproval, c.recover = rt, onApproval, recover
	c.caught.Store(time.Now().Add(-c.ttl).UnixNano())
	// Before any recovery (the loop below): a dead life's part of a
	// stopped request is recovered as stopped, and the others stop theirs.
	rctx, rcancel := context.WithTimeout(context.Background(), c.ttl)
	c.restoreStops(rctx)
	rcancel()
	if err := c.st.Watch(c.signal, c.catchUp); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		<-c.stop
		cancel()
	}()
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if c.recatch.Load() {
				c.catchUp(ctx) // what the listener's last catch-up could not read
			}
			c.backstop(ctx)
		}
	}()
	go func() {
		defer c.wg.Done()
		every := max(c.ttl/5, 10*time.Millisecond)
		t := time.NewTicker(every)
		defer t.Stop()
		lastRecover, lastSweep := time.Now(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.st.NameLost():
				c.lost.Store(true)
				c.healthy.Store(0)
				c.log.Error("cluster: another process of this instance's name runs on the store: this one stops heartbeating and admitting work",
					"instance", c.name, "life", c.owner)
				return
			case <-t.C:
			}
			bctx, bcancel := context.WithTimeout(ctx, c.ttl)
			err := c.beat(bctx)
			bcancel()
			if err == nil {
				c.leaveStraysApart(ctx)
				c.storeStopsApart(ctx)
			}
			if errors.Is(err, errFenced) {
				return
			}
			if err != nil && ctx.Err() == nil {
				c.log.Warn("cluster: a heartbeat failed", "instance", c.name, "err", err)
			}
			// Recover only after heartbeats went on for a TTL: after a
			// break (the database restarted, say) the others need that long
			// to be seen alive again (judges).
			if c.recover == nil || !c.judges(time.Now()) || time.Since(lastRecover) < c.ttl/2 {
				continue
			}
			lastRecover = time.Now()
			// When lives died; and now and then, for orphans a recovery
			// cut short left (their recoverer died in turn).
			if v := c.view.Load(); (v == nil || len(v.dead) == 0) && time.Since(lastSweep) < 10*c.ttl && !c.orphaned.Load() {
				continue
			}
			// On a goroutine of its own, one at a time: a recovery runs
			// the undos of the calls it finds cut off, on their upstreams,
			// for up to minutes, and the heartbeats go on meanwhile (held,
			// the others took this instance for dead in turn).
			if !c.recovering.CompareAndSwap(false, true) {
				continue
			}
			lastSweep = time.Now()
			c.orphaned.Store(false)
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				defer c.recovering.Store(false)
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
				defer rcancel()
				if err := c.recover(rctx); err != nil && ctx.Err() == nil {
					c.log.Error("cluster: recovering the work of dead instances failed", "err", err)
				}
			}()
		}
	}()
	return nil
}

// Close stops the background work and says this life departs: the others
// do not wait for it as for a dead one. The requests it runs should have
// ended (their last instance stores them ended).
func (c *Cluster) Close() error {
	c.once.Do(func() {
		close(c.stop)
		c.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.st.Depart(ctx, c.owner); err != nil {
			c.log.Warn("cluster: departing", "err", err)
		}
	})
	return nil
}

// signal handles a wake-up from any instance.
func (c *Cluster) signal(s postgres.Signal) {
	switch s.Kind {
	case "stop":
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl)
		defer cancel()
		c.applyStop(ctx, s.ID)
	case "end":
		c.endLocal(s.ID)
	case "approval":
		if c.onApproval != nil {
			c.onApproval(s.ID)
		}
	case "session", "idle":
		if e := c.sessions.Load(); e != nil && e.Ended != nil {
			e.Ended(s.ID, s.Kind == "idle")
		}
	case "unhold":
		c.holdWaits.letGo(s.ID)
	}
}

// SessionEnds are what an instance does when the record of an MCP session
// ends on the store, through any instance: Ended ends the session if this
// instance holds it (hash, its id's SHA-256; idle when its idle gap
// ended it, not its DELETE), and Recheck, called each time the listener
// connects again, ends the sessions held here whose record ended while it
// did not listen.
type SessionEnds struct {
	Ended   func(hash string, idle bool)
	Recheck func(ctx context.Context)
}

// OnSessionEnd sets what ends the MCP sessions held here whose record
// ended (the gateway's MCP server, made after Start: it may be set any
// time, and the ends before it find no session to end).
func (c *Cluster) OnSessionEnd(e *SessionEnds) { c.sessions.Store(e) }

// OnEnd sets what ends this instance's part of a request its client ended
// through another instance (End): the gateway's end of the request it
// owns. Call it before Start. Without it, the request running here is
// ended.
func (c *Cluster) OnEnd(f func(id string)) { c.onEnd = f }

// End stores that request id's client ended it (POST
// /v1/requests/{id}/end, on this instance): every instance ends its part,
// and no recovery undoes its calls, even if an instance that ran some of
// them dies before it ended its part. may says whether the caller may end
// a request of principal and tenant (nil: it may). found is false when the
// store knows no such request.
func (c *Cluster) End(ctx context.Context, id string, may func(principal, tenant string) bool) (found bool, err error) {
	if found, err := c.mayAct(ctx, id, may); !found || err != nil {
		return found, err
	}
	found, err = c.st.SettleRequest(ctx, id)
	if found && err == nil {
		crashpoint.Reached("request.settled") // a kill here: the recovery of this life ends the request, undoing nothing
	}
	return found, err
}

// RunningElsewhere returns, of the requests ids, those the store holds
// running on another instance, each with the names of the instances
// running it: a request whose part here ended (its idle gap) while
// another's runs on. For the views only (the API, the UI): one query of
// the store, never on a call's path.
func (c *Cluster) RunningElsewhere(ctx context.Context, ids []string) (map[string][]string, error) {
	return c.st.RunningOn(ctx, ids, c.owner)
}

// endLocal ends this instance's part of request id, which its client
// ended through another instance. The end is remembered (heard): a part
// of id that is not registered yet (its JoinRequest written, its
// RequestBegan to come, or its call about to join) finds it there when it
// registers, as the lookup here and the registration are one step each
// under mu. Both come before onEnd, which may wait for a begin under way
// (the gateway's begins and ends of the requests it owns take one lock).
func (c *Cluster) endLocal(id string) {
	c.mu.Lock()
	c.hear(id, time.Now())
	r := c.local[id]
	c.mu.Unlock()
	if c.onEnd != nil {
		c.onEnd(id)
	}
	if r != nil {
		r.End()
	}
}

// maxHeard bounds the ends an instance remembers (heard).
const maxHeard = 4096

// hear remembers that the end of request id was heard at now. c.mu is
// held.
func (c *Cluster) hear(id string, now time.Time) {
	if len(c.heard) >= maxHeard {
		for k, at := range c.heard {
			if now.Sub(at) >= c.ttl {
				delete(c.heard, k)
			}
		}
		if len(c.heard) >= maxHeard {
			// Too many to remember: forget them all, and let every part
			// registered within the TTL ask the store instead.
			clear(c.heard)
			c.deaf = now.Add(c.ttl)
		}
	}
	c.heard[id] = now
}

// heardLately reports whether an end of request id may have been heard
// within the TTL. c.mu is held.
func (c *Cluster) heardLately(id string) bool {
	at, ok := c.heard[id]
	if !ok && c.deaf.IsZero() {
		return false
	}
	now := time.Now()
	if ok && now.Sub(at) >= c.ttl {
		delete(c.heard, id)
		ok = false
	}
	return ok || now.Before(c.deaf)
}

// applyStop stops the request id here, if it runs here, as the store says.
func (c *Cluster) applyStop(ctx context.Context, id string) {
	c.mu.Lock()
	r := c.local[id]
	var under []*reach.Request
	if r == nil {
		under = c.underLocked()[id]
	}
	c.mu.Unlock()
	if r == nil && len(under) > 0 {
		rec, err := c.st.GetRequest(ctx, id)
		if err != nil {
			c.log.Error("cluster: reading a stop", "request", id, "err", err)
			return
		}
		for _, q := range under {
			c.stopUnder(q, id, rec.State, int(durable.DecodeCause(rec.Cause).Mode), rec.Cause)
		}
		return
	}
	if r == nil {
		c.noteStop(ctx, id, nil)
		return
	}
	rec, err := c.st.GetRequest(ctx, id)
	if err != nil {
		c.log.Error("cluster: reading a stop", "request", id, "err", err)
		return
	}
	c.stopLocal(r, rec.State, rec.Cause)
}

// noteStop shows request id stopped here, as stored (rec, or read if
// nil), if this instance keeps it ended: its part here ended before
// another instance stopped it, and its views (the API, the UI, reach
// requests) showed it completed while the others show it stopped.
func (c *Cluster) noteStop(ctx context.Context, id string, rec *store.Request) {
	kept := c.rt.KeptEnded(id)
	if kept == nil {
		return
	}
	if rec == nil {
		var err error
		if rec, err = c.st.GetRequest(ctx, id); err != nil {
			c.log.Warn("cluster: reading a stop of a request whose part here ended", "request", id, "err", err)
			return
		}
	}
	if rec.State != "stopped" {
		return
	}
	cs := durable.DecodeCause(rec.Cause)
	if cs.Mode == reach.Running {
		cs.Mode = reach.Cancel
	}
	kept.NoteStop(cs)
}

// stopLocal stops r here as the stored state and cause say.
func (c *Cluster) stopLocal(r *reach.Request, state string, cause []byte) {
	cs := durable.DecodeCause(cause)
	if cs.Mode == reach.Running {
		cs.Mode = reach.Cancel
		if state == "interrupted" {
			cs.Mode = reach.Isolate
		}
	}
	r.StopWith(cs)
}

// catchUp reads what the listener missed, as its connection is made
// (again): the stops written since the newest one read, the MCP sessions
// held here whose record ended (SessionEnds.Recheck), and the requests
// this instance runs that their client ended through another instance
// (End): their wake-ups came while it did not listen. It runs on the
// listener's goroutine, which hears nothing meanwhile: each read is
// bounded by the TTL, as a pool connection dead without a word would be
// waited on until TCP gave up on it (no stops, ends, approvals or
// wake-ups heard meanwhile: TestCatchUpCutStallsNoListener). A read that
// failed has the backstop run the whole catch-up again, at its next tick.
func (c *Cluster) catchUp(ctx context.Context) {
	c.catchMu.Lock()
	defer c.catchMu.Unlock()
	c.holdWaits.all() // a hold let go while the listener was cut off: its turns ask again
	ok := c.catchUpStops(ctx)
	if e := c.sessions.Load(); e != nil && e.Recheck != nil {
		rctx, cancel := context.WithTimeout(ctx, c.ttl)
		e.Recheck(rctx)
		cancel()
	}
	sctx, cancel := context.WithTimeout(ctx, c.ttl)
	ended, err := c.st.Settled(sctx, c.owner)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("cluster: reading the requests ended through other instances", "err", err)
		}
		c.recatch.Store(true)
		return
	}
	for _, id := range ended {
		c.endLocal(id)
	}
	c.recatch.Store(!ok)
}

// catchUpStops reads the stops written since the newest one read, and
// reports whether it could.
func (c *Cluster) catchUpStops(ctx context.Context) bool {
	since := time.Unix(0, c.caught.Load()).Add(-time.Minute) // margin for the writers' clocks
	rctx, cancel := context.WithTimeout(ctx, c.ttl)
	stops, err := c.st.Stops(rctx, since)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("cluster: reading the stops missed", "err", err)
		}
		return false
	}
	for _, s := range stops {
		c.mu.Lock()
		r := c.local[s.Request]
		c.mu.Unlock()
		if r != nil {
			c.stopLocal(r, s.State, s.Cause)
		} else {
			c.noteStop(ctx, s.Request, &store.Request{ID: s.Request, State: s.State, Cause: s.Cause})
		}
		if n := s.Updated.UnixNano(); n > c.caught.Load() {
			c.caught.Store(n)
		}
	}
	return true
}

// backstop reads the requests running here (and the requests above them)
// from the store, and stops those stopped there, and ends those their
// client ended: the notifications are only wake-ups, and one may be lost
// (the listening connection dead or cut off without a word, the
// notification dropped) while the listener does not know it; this bounds
// the time to see a stop by Options.Backstop, whatever became of them. It
// reads nothing while no request runs here.
func (c *Cluster) backstop(ctx context.Context) {
	c.mu.Lock()
	if len(c.local) == 0 {
		c.mu.Unlock()
		return
	}
	chain := make(map[string]*reach.Request, len(c.local))
	parts := make(map[string]bool, len(c.local))
	for id, r := range c.local {
		parts[id] = true
		for q := r; q != nil; q = q.Parent() {
			chain[q.ID()] = q
		}
	}
	under := c.underLocked()
	c.mu.Unlock()
	ids := make([]string, 0, len(chain)+len(under))
	for id := range chain {
		ids = append(ids, id)
	}
	for id := range under {
		if chain[id] == nil {
			ids = append(ids, id)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.ttl)
	marks, err := c.st.Marks(rctx, ids)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("cluster: reading the stops of the requests running here", "err", err)
		}
		return
	}
	for _, m := range marks {
		q := chain[m.Request]
		if q == nil { // a request above a sub-request joined here
			if m.Mode > 0 || m.State == "stopped" || m.State == "interrupted" {
				for _, r := range under[m.Request] {
					c.stopUnder(r, m.Request, m.State, m.Mode, m.Cause)
				}
			}
			continue
		}
		if m.Mode > 0 || m.State == "stopped" || m.State == "interrupted" {
			if cs := q.StopCause(); cs == nil || int(cs.Mode) < m.Mode {
				c.stopLocal(q, m.State, m.Cause)
			}
		}
		if m.Ended && parts[m.Request] {
			c.endLocal(m.Request)
		}
	}
}

// underLocked returns, for each request above a sub-request joined here
// (c.above) that does not run here, the parts here under it. c.mu is held.
func (c *Cluster) underLocked() map[string][]*reach.Request {
	var under map[string][]*reach.Request
	for id, up := range c.above {
		r := c.local[id]
		if r == nil {
			continue
		}
		for _, l := range up {
			if under == nil {
				under = map[string][]*reach.Request{}
			}
			under[l.id] = append(under[l.id], r)
		}
	}
	return under
}

// stopUnder stops r, a sub-request joined here, because the request above
// it (another instance's) was stopped or interrupted, as stored (state,
// mode, cause): a request whose root was interrupted or stopped starts no
// new work, and its calls running here are cancelled as the root's own
// would be. The cause names the request above (the one stopped), as a
// stop of a parent running here names it for its children.
func (c *Cluster) stopUnder(r *reach.Request, above, state string, mode int, cause []byte) {
	if cs := r.StopCause(); cs != nil && int(cs.Mode) >= mode {
		return
	}
	cs := durable.DecodeCause(cause)
	if cs.Request == "" {
		cs.Request = above
	}
	if cs.Mode == reach.Running {
		cs.Mode = reach.Cancel
		if state == "interrupted" {
			cs.Mode = reach.Isolate
		}
	}
	r.StopWith(cs)
}

// untrack forgets a request that ran here (Recorder.register tracks it).
func (c *Cluster) untrack(r *reach.Request) {
	c.mu.Lock()
	if c.local[r.ID()] == r {
		delete(c.local, r.ID())
		delete(c.above, r.ID())
	}
	c.mu.Unlock()
}

// ledgerLink is one request whose shared ledger a call or a turn is
// debited from: its id, its budget, and whether it is a sub-request.
type ledgerLink struct {
	id     string
	budget reach.Budget
	sub    bool
}

// ledgerChain is req and every request above it, nearest first: those
// running here (req's parents), then, when the topmost of them is a
// sub-request begun on another instance, the requests the store has above
// it (c.above). Without the latter, the calls a sub-agent makes through
// another instance than the one that handed it its task would be debited
// from its own ledger only, and a tree could spend past its root's budget.
func (c *Cluster) ledgerChain(req *reach.Request) []ledgerLink {
	var chain []ledgerLink
	top := req
	for q := req; q != nil; q = q.Parent() {
		chain = append(chain, ledgerLink{id: q.ID(), budget: q.Budget(), sub: q.Parent() != nil})
		top = q
	}
	c.mu.Lock()
	up := c.above[top.ID()]
	c.mu.Unlock()
	if len(up) > 0 {
		chain[len(chain)-1].sub = true
		chain = append(chain, up...)
	}
	return chain
}

// storedAbove reads request id as the store has it, then the requests
// above it, its parent first, up to 64.
func (c *Cluster) storedAbove(ctx context.Context, id string) ([]ledgerLink, error) {
	var up []ledgerLink
	for id != "" && len(up) < 65 {
		rec, err := c.st.GetRequest(ctx, id)
		if err != nil {
			return nil, err
		}
		l := ledgerLink{id: rec.ID, sub: rec.Parent != ""}
		if b := decodeBudget(rec.Budget); b != nil {
			l.budget = *b
		}
		up = append(up, l)
		id = rec.Parent
	}
	return up, nil
}

// mayAct reports whether the store knows request id, and refuses
// (errNotYours) when may says the caller may not act on a request of its
// root's principal and tenant.
func (c *Cluster) mayAct(ctx context.Context, id string, may func(principal, tenant string) bool) (found bool, err error) {
	rec, err := c.st.GetRequest(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	root := rec
	for range 64 {
		if root.Parent == "" {
			break
		}
		p, err := c.st.GetRequest(ctx, root.Parent)
		if err != nil {
			break
		}
		root = p
	}
	if may != nil && !may(root.Principal, root.Tenant) {
		return true, errNotYours
	}
	return true, nil
}

// Stop stops request id, which another instance may run, as an operator's
// stop through this instance's API: stored with its cause, every instance
// woken. A request that ended with no stop (completed, or ended by its
// client) is not stopped: Stop returns an error for which Ended is true. may says whether the caller may stop a request of principal and
// tenant. found is false when the store knows no such request.
func (c *Cluster) Stop(ctx context.Context, id string, mode reach.StopMode, by, reason string, may func(principal, tenant string) bool) (found bool, cause *reach.Cause, err error) {
	if found, err := c.mayAct(ctx, id, may); !found || err != nil {
		return found, nil, err
	}
	cs := reach.Cause{Mode: mode, By: by, Reason: reason, At: time.Now(), Request: id}
	_, ended, err := c.st.StopOpenRequest(ctx, id, int(mode), durable.EncodeCause(cs))
	if err != nil {
		return true, nil, err
	}
	if ended {
		// Over, on every instance (or ending, its client's end stored):
		// a stop now would undo writes of a request that completed.
		return true, nil, errEnded
	}
	rec, err := c.st.GetRequest(ctx, id)
	if err != nil {
		return true, nil, err
	}
	stored := durable.DecodeCause(rec.Cause)
	return true, &stored, nil
}

var errNotYours = errors.New("the request belongs to another principal")

var errEnded = errors.New("the request ended")

// Ended reports whether err is Stop's refusal of a request that ended
// (with no stop: completed, or ended by its client).
func (c *Cluster) Ended(err error) bool { return errors.Is(err, errEnded) }

// ErrNotYours is what Stop returns for a request of another principal.
func ErrNotYours(err error) bool { return errors.Is(err, errNotYours) }

// decodeBudget reads a stored budget; a missing one is nil.
func decodeBudget(b []byte) *reach.Budget {
	if len(b) == 0 {
		return nil
	}
	var out reach.Budget
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return &out
}

// NotYours reports whether err is Stop's refusal of a request of another
// principal.
func (c *Cluster) NotYours(err error) bool { return ErrNotYours(err) }

// enterJoin counts a join of request id in flight, once a leave of its
// stray part (leaveStrays) is over, and returns its number (seq).
func (c *Cluster) enterJoin(id string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		ch, ok := c.leaving[id]
		if !ok {
			break
		}
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
	}
	c.joins[id]++
	c.seq++
	return c.seq
}

// joinDone ends the count of a join of request id: its part is
// registered (register), or it wrote nothing.
func (c *Cluster) joinDone(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.doneJoin(id)
}

func (c *Cluster) doneJoin(id string) {
	if n := c.joins[id]; n > 1 {
		c.joins[id] = n - 1
	} else {
		delete(c.joins, id)
	}
}

// joinFailed ends the count of a join of request id that was refused
// after it may have written a part of this life (its bound fired as the
// store committed it, or what it read refused the call): the part is
// left after the next heartbeat the store takes (leaveStrays), so that it
// is not held until this life ends (the request would not end when its
// other parts leave). Not here: the refusal does not wait for a store
// that just failed to answer. A part that another join of id in flight,
// or a part of id running here, holds too is not left.
func (c *Cluster) joinFailed(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.doneJoin(id)
	c.stray[id] = true
}

// leaveStrays leaves the parts refused joins may have written (joinFailed)
// whose request no join in flight and no part running here holds; those
// the store does not take are tried again after the next heartbeat.
func (c *Cluster) leaveStrays(ctx context.Context) {
	c.mu.Lock()
	if len(c.stray) == 0 {
		c.mu.Unlock()
		return
	}
	var ids []string
	seq := c.seq // every join of these begun so far is over (joins 0)
	for id := range c.stray {
		switch {
		case c.local[id] != nil:
			delete(c.stray, id) // its part runs here, and is left when it ends
		case c.joins[id] == 0 && c.leaving[id] == nil:
			c.leaving[id] = make(chan struct{})
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		held, err := c.st.LeavePartAt(ctx, id, c.owner, c.ttl, seq)
		c.mu.Lock()
		close(c.leaving[id])
		delete(c.leaving, id)
		if err == nil {
			delete(c.stray, id)
		}
		c.mu.Unlock()
		if err != nil {
			c.log.Warn("cluster: leaving the part a refused join may have written failed; tried again after the next heartbeat", "request", id, "err", err)
			continue
		}
		if held {
			c.log.Info("cluster: a refused join had written its part; it is left", "request", id)
		}
	}
}

// leaveStraysApart runs leaveStrays on a goroutine of its own, one at a
// time: a leave waits for the request's ledger lock and for a connection
// of the store's pool, and the heartbeat, on its own connection, must not
// wait behind them (a busy pool, the very thing that makes a join's bound
// fire, held the next heartbeat for up to the TTL, and the others took
// this life for dead).
func (c *Cluster) leaveStraysApart(ctx context.Context) {
	c.mu.Lock()
	n := len(c.stray)
	c.mu.Unlock()
	if n == 0 || !c.strayLeave.CompareAndSwap(false, true) {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.strayLeave.Store(false)
		lctx, cancel := context.WithTimeout(ctx, c.ttl)
		defer cancel()
		c.leaveStrays(lctx)
	}()
}

// recoveredHere reports whether a request that runs here is stored
// interrupted: a recovery took every instance that ran it for dead, this
// one too, and undid its writes. One query, and none when nothing runs
// here.
func (c *Cluster) recoveredHere(ctx context.Context) (bool, error) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.local))
	for id := range c.local {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	if len(ids) == 0 {
		return false, nil
	}
	marks, err := c.st.Marks(ctx, ids)
	if err != nil {
		return false, err
	}
	for _, m := range marks {
		if m.State == "interrupted" {
			c.log.Error("cluster: a request running here was recovered by another instance (it is stored interrupted) while this one's heartbeats had stopped, by a recoverer that did not mark this life dead (an older reach)",
				"request", m.Request, "life", c.owner)
			return true, nil
		}
	}
	return false, nil
}
