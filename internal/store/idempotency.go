package store

import (
	"bytes"
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
	"github.com/agentreach/reach/internal/idempotency"
	"github.com/agentreach/reach/internal/jsonscan"
)

// IdempotencyOptions configure NewIdempotency. A nil *IdempotencyOptions
// means all defaults.
type IdempotencyOptions struct {
	// TTL is how long a recorded result answers a repeated key; if zero, 24h.
	TTL time.Duration
	// Lease is the lease of a claim whose caller gives none
	// (reach.IdemClaim.Lease); if zero, 1h. Once a claim's lease has ended,
	// whoever waits for it settles it (see Claim).
	Lease time.Duration
	// Poll is how often a waiting Claim re-reads a key held by a claim it
	// is not told about (another process's); if zero, 50ms. Claims of the
	// same Idempotency wake their waiters at once.
	Poll time.Duration
	// Instance names this instance among those that share the records; if
	// empty, "reach". Claims are owned by "<Instance>/<life>", where life is
	// drawn at random by NewIdempotency, once per process: Recover knows
	// the claims of this instance's earlier lives for those of a process
	// that is gone.
	Instance string
	// SweepEvery is how many completions pass between sweeps of expired
	// records; if zero, 1024.
	SweepEvery int
	// Owner, if not empty, is the name this life claims keys under,
	// "<Instance>/<life>": on a store that several instances share, the
	// life that heartbeats (internal/cluster's Owner), which Alive and a
	// recovery of dead lives (RecoverOwners) know by that name. If empty,
	// Instance and a random life.
	Owner string
	// Alive, if not nil, says whether the life that owns a claim (made at
	// claimed) may still be running its call: on a store that several
	// instances share, a claim of a life that died is settled at once,
	// without waiting for its lease to end (internal/cluster).
	Alive func(owner string, claimed time.Time) bool
	// Checkpoint, if not nil, turns a claim's "executing" checkpoint
	// (reach.IdemClaim.Checkpoint) into the frame that the records write
	// with the claim, in one commit (IdemRecord.Executing); it must be the
	// row the runtime's Checkpointer would write (durable.Checkpoints'
	// ExecutingFrame). If nil, the runtime writes the checkpoint itself.
	Checkpoint func(*reach.Checkpoint) *Frame
	// Logger reports records that could not be written (Complete has no
	// error result); if nil, logs are discarded.
	Logger *slog.Logger
}

// Idempotency is a reach.IdempotencyStore over durable records (R7): a
// repeated key returns the recorded result, concurrent claims of one key run
// once, a released key runs again, a key is not reused for other
// arguments, and records expire after a TTL. A claim whose owner cannot be
// running its call any more (its lease ended, or its process is gone) is
// settled by what the call's checkpoint says, never simply taken over:
// see Claim. Safe for concurrent use. Make one with NewIdempotency.
type Idempotency struct {
	recs   IdemRecords
	frames Frames // the checkpoints, when recs keeps them too
	o      IdempotencyOptions
	owner  string
	log    *slog.Logger

	mu    sync.Mutex
	waits map[string]*waiters
	held  map[string]holding // keys this instance claims, or is claiming, and has not completed

	// kept holds the completions the store refused (it was down): written
	// again by keeper until the store takes them (see Complete).
	kept    *idempotency.Kept
	keeping bool // a keeper runs
	// ends holds the ended checkpoints the store refused (KeepEnded), by
	// request and frame: written by keeper before the completions.
	ends map[string]*Frame

	// With KeepFile: the file each kept completion and ended checkpoint
	// is appended to as it is kept, the lines it holds, and whether one
	// could not be written (SaveKept writes them all then).
	fmu        sync.Mutex
	file       string
	fileLines  int
	fileBroken bool
	// journaled is file while every line kept is in it (file set, not
	// fileBroken), nil otherwise: SaveKept reads it without fmu, which a
	// rewrite of the file holds while it copies its last lines and renames
	// its copy, for as long as a stalled disk makes that take.
	journaled  atomic.Pointer[string]
	reserve    string         // KeptReserve(file), while it is there (keptends.go)
	compaction keptCompaction // its rewrite (keptcompact.go)

	completes atomic.Int64
}

var _ reach.IdempotencyStore = (*Idempotency)(nil)

type waiters struct {
	ch chan struct{} // closed when the key's claim ends here
	n  int
}

// NewIdempotency returns an Idempotency over recs (a Store, or its
// IdemRecords). When recs keeps the calls' checkpoints too (it is a
// Frames, as a Store is), a stale claim whose call has no checkpoint is
// released; otherwise every stale claim is answered as "may have run".
func NewIdempotency(recs IdemRecords, opts *IdempotencyOptions) *Idempotency {
	s := &Idempotency{recs: recs, waits: map[string]*waiters{}, held: map[string]holding{},
		kept: idempotency.NewKept(keptEntries, keptBytes)}
	s.frames, _ = recs.(Frames)
	if opts != nil {
		s.o = *opts
	}
	if s.o.TTL == 0 {
		s.o.TTL = 24 * time.Hour
	}
	if s.o.Lease == 0 {
		s.o.Lease = time.Hour
	}
	if s.o.Poll == 0 {
		s.o.Poll = 50 * time.Millisecond
	}
	if s.o.Instance == "" {
		s.o.Instance = "reach"
	}
	s.owner = s.o.Owner
	if s.owner == "" {
		var b [8]byte
		rand.Read(b[:])
		s.owner = s.o.Instance + "/" + hex.EncodeToString(b[:])
	}
	if s.o.SweepEvery == 0 {
		s.o.SweepEvery = 1024
	}
	s.log = s.o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Owner returns the name this instance claims keys under in this life:
// "<instance>/<life>".
func (s *Idempotency) Owner() string { return s.owner }

// idemResult is the stored form of a recorded result. It is the package's
// own type so that the records stay readable whatever reach.Result becomes.
type idemResult struct {
	Status  reach.Status    `json:"status"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   *reach.Error    `json:"error,omitempty"`
	Summary string          `json:"summary,omitempty"`
	Notes   []string        `json:"notes,omitempty"`
	CallID  string          `json:"call_id,omitempty"`
}

// Claim implements reach.IdempotencyStore. A key held by a claim that
// cannot be running its call any more is settled before it is claimed
// again: a claim of this Idempotency that it no longer holds (its result
// could not be written), or anyone's whose lease has ended. A claim is
// settled by what its call's checkpoint says (c.Request, c.Frame):
//
//   - no checkpoint: the call never started; the key is released, and
//     this call runs;
//   - a checkpoint: the call started; the key records an error that says
//     what happened ("interrupted": it may have run, or "result_lost": it
//     completed but its result was not recorded), and every later call
//     with the key gets it. Nothing runs again.
//
// A call that is not checkpointed (no c.Frame) counts as started. Claim
// returns an error that is not the context's only when the records cannot
// be read or settled, or (matching reach.ErrIdempotencyKeyReused) when
// the key was claimed for other arguments.
func (s *Idempotency) Claim(ctx context.Context, c *reach.IdemClaim) (*reach.Result, bool, error) {
	lease := c.Lease
	if lease <= 0 {
		lease = s.o.Lease
	}
	// A claim subscribes to the key's news only once it found the key
	// held (most claims never do), and then reads the key again before it
	// waits: a completion between the first read and the subscription
	// would not wake it.
	var sub *waiters
	defer func() {
		if sub != nil {
			s.unsubscribe(c.Key, sub)
		}
	}()
	for {
		now := time.Now()
		want := &IdemRecord{Key: c.Key, Owner: s.owner, Args: c.Args, Request: c.Request, Claimed: now, Expires: now.Add(lease), CutOff: c.CutOff, CutRoot: c.Root}
		if c.Checkpoint != nil && s.o.Checkpoint != nil {
			want.Executing = s.o.Checkpoint(c.Checkpoint)
		}
		switch {
		case c.Frame == 0:
		case want.Executing != nil && c.Frame == c.Checkpoint.Frame:
			want.Frame = want.Executing.Frame // the checkpoint's id, spelled once
		default:
			want.Frame = c.Frame.String()
		}
		if s.kept.Len() > 0 {
			if res, ok, err := s.fromKept(ctx, c); ok {
				return res, false, err
			}
		}
		s.hold(c.Key, 1, c.Args) // before the claim is visible: a waiter here must not find it stale
		rec, claimed, err := s.recs.ClaimKey(ctx, want)
		if err != nil || !claimed {
			s.hold(c.Key, -1, "")
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, context.Cause(ctx)
			}
			return nil, false, err
		}
		if claimed {
			c.CutOffRead, c.CutOffLive = want.CutOffRead, want.CutOffLive
			c.InFlight, c.InFlightRoot, c.InFlightRequest, c.InFlightAt = want.InFlight, want.InFlightRoot, want.InFlightRequest, want.InFlightAt
			crashpoint.Reached("claimed")
			if want.Executing != nil {
				c.Checkpointed = true
				crashpoint.Reached("executing")
			}
			return nil, true, nil
		}
		if rec.Args != "" && c.Args != "" && rec.Args != c.Args {
			return nil, false, fmt.Errorf("idempotency key %q: %w", c.Key, reach.ErrIdempotencyKeyReused)
		}
		if rec.State == IdemDone {
			res, _, err := decodeResult(rec)
			if err != nil {
				s.log.Warn("idempotency: a stored record could not be read: it is kept in the store as it is, and its key's calls are refused "+
					"(the call it records may have run); inspect the row in its table, then fix or delete it by hand",
					"table", "idempotency", "key", rec.Key, "err", err)
			}
			return res, false, err
		}
		if sub == nil {
			sub = s.subscribe(c.Key)
			continue // read the key again, now that a completion wakes this claim
		}
		if s.stale(rec, now) {
			if _, err := s.settle(ctx, rec, nil); err != nil {
				if ctx.Err() != nil {
					return nil, false, context.Cause(ctx)
				}
				return nil, false, err
			}
			sub = s.resubscribe(c.Key, sub) // settling told the key's waiters, this one too
			continue
		}
		wait := s.o.Poll
		if !rec.Expires.IsZero() && rec.Owner != s.owner {
			// Another's claim is stale once its lease ends; this
			// instance's is not while it holds it, however long its call
			// runs (its completion wakes this claim).
			wait = max(0, min(wait, rec.Expires.Sub(now)))
		}
		t := time.NewTimer(wait)
		select {
		case <-sub.ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			return nil, false, context.Cause(ctx)
		}
		sub = s.resubscribe(c.Key, sub)
	}
}

// encodeResult is res as a record keeps it: an idemResult, as
// json.Marshal writes one, but for its data, which is written compact
// without HTML escaping (the same JSON value, and the bytes the call
// returned when they were compact). A result without an error, as every
// recorded success is, is written here, in one allocation; one with an
// error by json.Marshal.
func encodeResult(res *reach.Result) ([]byte, error) {
	if res.Error != nil {
		return json.Marshal(idemResult{Status: res.Status, Data: res.Data, Error: res.Error,
			Summary: res.Summary, Notes: res.Notes, CallID: res.CallID})
	}
	n := len(`{"status":"","data":,"summary":"","notes":[],"call_id":""}`) + len(res.Status) + len(res.Data) +
		len(res.Summary) + len(res.CallID)
	for _, s := range res.Notes {
		n += len(s) + 3
	}
	var b bytes.Buffer
	b.Grow(n + n/8) // and room for a few escapes
	b.WriteString(`{"status":`)
	b.Write(jsonscan.AppendQuoted(b.AvailableBuffer(), string(res.Status)))
	if len(res.Data) > 0 {
		b.WriteString(`,"data":`)
		if err := json.Compact(&b, res.Data); err != nil {
			return nil, fmt.Errorf("the result's data: %w", err)
		}
	}
	if res.Summary != "" {
		b.WriteString(`,"summary":`)
		b.Write(jsonscan.AppendQuoted(b.AvailableBuffer(), res.Summary))
	}
	if len(res.Notes) > 0 {
		b.WriteString(`,"notes":[`)
		for i, s := range res.Notes {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonscan.AppendQuoted(b.AvailableBuffer(), s))
		}
		b.WriteByte(']')
	}
	if res.CallID != "" {
		b.WriteString(`,"call_id":`)
		b.Write(jsonscan.AppendQuoted(b.AvailableBuffer(), res.CallID))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeResult reads the result a done record keeps.
func decodeResult(rec *IdemRecord) (*reach.Result, bool, error) {
	var r idemResult
	if err := json.Unmarshal(rec.Result, &r); err != nil {
		return nil, false, fmt.Errorf("reading the result recorded for idempotency key %q: %w: %w", rec.Key, idempotency.ErrBadRecord, err)
	}
	return &reach.Result{CallID: r.CallID, Status: r.Status, Data: r.Data, Error: r.Error,
		Summary: r.Summary, Notes: r.Notes}, false, nil
}

// holding is a key this instance claims: how many claims, and the
// arguments' digest of the one that holds it.
type holding struct {
	n    int
	args string
}

// hold counts one more (d = 1, with the claim's arguments' digest) or one
// fewer (d = -1) claim of key by this instance in flight, and returns the
// digest the key was held with.
func (s *Idempotency) hold(key string, d int, args string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[key]
	h.n += d
	if d > 0 {
		h.args = args
	}
	if h.n > 0 {
		s.held[key] = h
	} else {
		delete(s.held, key)
	}
	return h.args
}

// stale reports whether the claim r cannot be running its call any more,
// as a waiter sees it: a claim of this life that this instance does not
// hold (one it holds is not stale, however long its call runs), or
// another's whose lease has ended or whose owner Options.Alive says died.
func (s *Idempotency) stale(r *IdemRecord, now time.Time) bool {
	if r.Owner == s.owner {
		if _, kept := s.kept.Get(r.Key); kept {
			return false // its completion is being written
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.held[r.Key].n == 0
	}
	if s.o.Alive != nil && !s.o.Alive(r.Owner, r.Claimed) {
		return true
	}
	return !r.Expires.IsZero() && !now.Before(r.Expires)
}

// Outcomes of a settled claim (Settled.Outcome).
const (
	// SettledReleased: the call never started (it has no checkpoint); the
	// key is free, and a retry runs the call.
	SettledReleased = "released"
	// SettledInterrupted: the call started and did not complete; a retry
	// gets an error saying it may have run.
	SettledInterrupted = "interrupted"
	// SettledResultLost: the call completed, but its result was not
	// recorded; a retry gets an error saying so.
	SettledResultLost = "result_lost"
)

// Settled is a claim that could not be in flight any more, and what
// settling it did.
type Settled struct {
	Claim   *IdemRecord
	Outcome string // SettledReleased, SettledInterrupted or SettledResultLost
}

// BeforeSettle is told of a claim c that a recovery is about to settle
// interrupted, its checkpoint f still open (its call may have run),
// before the settle is written: what it writes of the call (the note of a
// write cut off, reach.Runtime.NoteCutOff) is durable while the claim is
// still there, so that a kill between the two leaves the claim, which the
// next recovery finds, tells of again and settles. Told after, a kill in
// between lost it: the next recovery found no claim.
type BeforeSettle func(ctx context.Context, c *IdemRecord, f *Frame)

// settle settles the stale claim r, by what its call's checkpoint says
// (see Claim), and returns the outcome; before, it tells before (if not
// nil) of a claim it settles interrupted whose checkpoint is open. A claim
// settled, completed or released by someone else meanwhile is left as it
// is, and so is the key.
func (s *Idempotency) settle(ctx context.Context, r *IdemRecord, before BeforeSettle) (string, error) {
	state := "" // the checkpoint's state; "" for none
	var cp *Frame
	if r.Frame == "" || r.Request == "" || s.frames == nil {
		state = "unknown"
	} else {
		frames, err := s.frames.RequestFrames(ctx, r.Request)
		if err != nil {
			return "", fmt.Errorf("settling idempotency key %q: %w", r.Key, err)
		}
		for _, f := range frames {
			if f.Frame == r.Frame {
				state, cp = f.State, f
			}
		}
	}
	defer s.notify(r.Key)
	if state == "" {
		if err := s.recs.SettleClaim(ctx, r, nil, time.Time{}); err != nil && !errors.Is(err, ErrConflict) {
			return "", err
		}
		return SettledReleased, nil
	}
	outcome, e := SettledInterrupted, &reach.Error{Guard: "idempotency", Type: reach.TypeInterrupted, Code: "interrupted",
		Message:    "The gateway stopped while this call ran, so it may have taken effect.",
		Suggestion: "Check whether it did (read what it changes) before you call it again with a new idempotency key."}
	switch state {
	case "completed":
		outcome = SettledResultLost
		e = &reach.Error{Guard: "idempotency", Type: reach.TypeInterrupted, Code: "result_lost",
			Message:    "This call completed before the gateway stopped, but its result was not recorded, so it is not run again under this key.",
			Suggestion: "Read what it changed to learn its outcome; call it with a new idempotency key only if it must run again."}
	case "failed", "refused", "cancelled":
		e.Message = fmt.Sprintf("This call ended (%s) as the gateway stopped, before its outcome was recorded, so it may have taken effect.", state)
	}
	b, _ := json.Marshal(idemResult{Status: reach.StatusError, Error: e})
	if before != nil && cp != nil && !FrameDone(state) {
		before(ctx, r, cp)
	}
	if err := s.recs.SettleClaim(ctx, r, b, time.Now().Add(s.o.TTL)); err != nil && !errors.Is(err, ErrConflict) {
		return "", err
	}
	crashpoint.Reached("claim.settled") // a kill here: the claim settled, its checkpoint not marked, its cut-off not noted
	return outcome, nil
}

// Recover settles the claims that cannot be in flight any more: every
// claim of this instance's earlier lives (a process that stopped, or
// crashed, left them) and every other instance's claim whose lease has
// ended, each as Claim settles a stale claim. Call it once at start,
// before serving, while no other process of this instance runs.
func (s *Idempotency) Recover(ctx context.Context) ([]Settled, error) {
	return s.RecoverTelling(ctx, nil)
}

// RecoverTelling is Recover, telling before (if not nil) of each claim it
// settles interrupted whose checkpoint is open, before it settles it.
func (s *Idempotency) RecoverTelling(ctx context.Context, before BeforeSettle) ([]Settled, error) {
	return s.settleClaims(ctx, before, func(r *IdemRecord) bool {
		i := strings.LastIndexByte(r.Owner, '/')
		// An owner without a life is a record of an older binary: this instance's.
		return r.Owner != s.owner && (i < 0 || r.Owner[:i] == s.o.Instance)
	})
}

// RecoverOwners settles the claims that owners (lives that died, of any
// instance sharing the records) left, and every claim that is stale (its
// lease ended, or Options.Alive says its owner died), each as Claim
// settles a stale claim. It may run while this instance serves: a claim
// it holds is never stale.
func (s *Idempotency) RecoverOwners(ctx context.Context, owners []string) ([]Settled, error) {
	return s.RecoverOwnersTelling(ctx, owners, nil)
}

// RecoverOwnersTelling is RecoverOwners, telling before (if not nil) of
// each claim it settles interrupted whose checkpoint is open, before it
// settles it.
func (s *Idempotency) RecoverOwnersTelling(ctx context.Context, owners []string, before BeforeSettle) ([]Settled, error) {
	return s.settleClaims(ctx, before, func(r *IdemRecord) bool { return slices.Contains(owners, r.Owner) })
}

// settleClaims settles every claim that gone says its owner left, and
// every stale one, as Claim settles a stale claim, telling before.
func (s *Idempotency) settleClaims(ctx context.Context, before BeforeSettle, gone func(*IdemRecord) bool) ([]Settled, error) {
	claims, err := s.recs.ClaimedKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Settled
	for _, r := range claims {
		if !gone(r) && !s.stale(r, now) {
			continue
		}
		outcome, err := s.settle(ctx, r, before)
		if err != nil {
			return out, err
		}
		out = append(out, Settled{Claim: r, Outcome: outcome})
	}
	return out, nil
}

// Settle records e as the answer to key, in place of whatever its record
// holds (a claim, or a result), for as long as a result would be kept:
// every later call with the key gets e, and nothing runs. Recovery uses it
// for a call it undid.
func (s *Idempotency) Settle(ctx context.Context, key string, e *reach.Error) error {
	b, err := json.Marshal(idemResult{Status: reach.StatusError, Error: e})
	if err != nil {
		return err
	}
	defer s.notify(key)
	return s.recs.SettleKey(ctx, key, b, time.Now().Add(s.o.TTL))
}

// subscribe returns the waiters of key, with this one counted: their
// channel is closed when this instance completes or releases key. Call
// unsubscribe when no longer waiting.
func (s *Idempotency) subscribe(key string) *waiters {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waits[key]
	if w == nil {
		w = &waiters{ch: make(chan struct{})}
		s.waits[key] = w
	}
	w.n++
	return w
}

// unsubscribe counts one waiter of key fewer in w (subscribe's).
func (s *Idempotency) unsubscribe(key string, w *waiters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.n--; w.n == 0 && s.waits[key] == w {
		delete(s.waits, key)
	}
}

// resubscribe ends the subscription w and returns a new one, whose
// channel is closed by the key's next completion or release.
func (s *Idempotency) resubscribe(key string, w *waiters) *waiters {
	s.unsubscribe(key, w)
	return s.subscribe(key)
}

func (s *Idempotency) notify(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.waits[key]; w != nil {
		close(w.ch)
		delete(s.waits, key)
	}
}

// Complete implements reach.IdempotencyStore. The result (or the release,
// for a nil res) is queued, not waited for: it takes effect before any
// claim made after it, and is durable with the store's next commit. A
// crash before that leaves the claim, which recovery settles by the call's
// checkpoint (docs/STATE.md). A completion the store refuses (it is down)
// is kept in memory, bounded, and written again until the store takes it:
// meanwhile a retry through this instance gets the kept result, and the
// claim is not stale to this instance's recovery (see keep).
func (s *Idempotency) Complete(key string, res *reach.Result) {
	defer s.notify(key)
	s.mu.Lock()
	args := s.held[key].args // for a completion kept (keep)
	s.mu.Unlock()
	defer s.hold(key, -1, "") // after the write is queued, as before
	q, then := s.recs.(thenQueuer)
	if res == nil {
		if then {
			q.QueueReleaseKeyThen(key, s.owner, func(committed bool) {
				if !committed {
					s.keep(key, idempotency.KeptEntry{Args: args})
				}
			})
			return
		}
		s.recs.QueueReleaseKey(key, s.owner)
		return
	}
	b, err := encodeResult(res)
	if err != nil {
		s.log.Error("idempotency: encoding a result; the key is released", "key", key, "err", err)
		s.recs.QueueReleaseKey(key, s.owner)
		return
	}
	expires := time.Now().Add(s.o.TTL)
	if then {
		q.QueueCompleteKeyThen(key, s.owner, b, expires, func(committed bool) {
			if !committed {
				s.keep(key, idempotency.KeptEntry{Args: args, Result: b, Expires: expires})
			}
		})
	} else {
		s.recs.QueueCompleteKey(key, s.owner, b, expires)
	}
	if s.completes.Add(1)%int64(s.o.SweepEvery) == 0 {
		// The call whose completion this is returns its answer now: on a
		// store that queues writes, the sweep is queued with them (no
		// answer waits for its commit: one call in SweepEvery waited for a
		// commit of its own, under a crowd a held batch of up to 5 ms).
		if q, ok := s.recs.(sweepQueuer); ok {
			q.QueueSweepKeys(time.Now())
		} else if _, err := s.Sweep(context.Background()); err != nil {
			s.log.Error("idempotency: sweeping expired records", "err", err)
		}
	}
}

// sweepQueuer is IdemRecords whose sweep can be queued, as
// QueueCompleteKey is CompleteKey queued: it returns at once, and the
// store logs a failure (sqlcore's stores).
type sweepQueuer interface {
	QueueSweepKeys(now time.Time)
}

// Sweep deletes the records that have expired and returns how many.
func (s *Idempotency) Sweep(ctx context.Context) (int, error) {
	return s.recs.SweepKeys(ctx, time.Now())
}

// thenQueuer is IdemRecords whose queued completions and releases say
// whether they were committed (sqlcore's stores): then runs in the store's
// writer, once, and must not wait for the store.
type thenQueuer interface {
	QueueCompleteKeyThen(key, owner string, result []byte, expires time.Time, then func(committed bool))
	QueueReleaseKeyThen(key, owner string, then func(committed bool))
}

// The bounds of the completions kept while the store refuses them: past
// them a completion is lost, as every one was before they were kept (a
// retry is then answered "interrupted": it may have run).
const (
	keptEntries = 10000
	keptBytes   = 64 << 20
	keptRetry   = 250 * time.Millisecond // the first wait before writing them again
	keptBackoff = 5 * time.Second        // the longest
)

// keep keeps the completion e of key, which the store refused, and starts
// the keeper that writes it again. It runs in the store's writer: it does
// not wait.
func (s *Idempotency) keep(key string, e idempotency.KeptEntry) {
	s.mu.Lock()
	kept := s.kept.Keep(key, e)
	start := kept && !s.keeping
	if start {
		s.keeping = true
	}
	s.mu.Unlock()
	if !kept {
		s.log.Error("idempotency: a call's completion could not be written and too many are kept already: it is lost, and a retry of its key will be answered that it may have run",
			"key", key, "kept", s.kept.Len())
		return
	}
	s.journal(keptLine{Owner: s.owner, Key: key, Args: e.Args, Result: e.Result, Expires: e.Expires})
	if start {
		s.log.Warn("idempotency: the store did not take a call's completion; the completions it refuses are kept in memory (a retry through this instance gets them) and written once it answers again",
			"key", key)
		go s.keeper()
	}
}

// keeper writes the kept completions until none is left, waiting longer
// after each round the store refused (up to keptBackoff).
func (s *Idempotency) keeper() {
	wait, written := keptRetry, 0
	for {
		time.Sleep(wait)
		ctx, cancel := context.WithTimeout(context.Background(), keptBackoff)
		err := s.writeEnds(ctx) // an undo is recorded before its call's key is settled
		cancel()
		for _, key := range s.kept.Keys() {
			if err != nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), keptBackoff)
			err = s.writeKept(ctx, key)
			cancel()
			if err == nil {
				written++
			}
		}
		s.mu.Lock()
		if errors.Is(err, ErrClosed) {
			// The store closed as the gateway stopped: what is kept stays
			// kept, and in the data folder's file for the next start.
			s.keeping = false
			s.mu.Unlock()
			return
		}
		if s.kept.Len() == 0 && len(s.ends) == 0 {
			s.keeping = false
			s.mu.Unlock()
			s.journalDone()
			s.log.Info("idempotency: the completions kept while the store refused them are written", "written", written)
			return
		}
		s.mu.Unlock()
		wait = keptRetry
		if err != nil {
			wait = min(2*wait, keptBackoff)
		}
	}
}

// writeKept writes the completion kept for key, durably, and forgets it
// once the store took it, or once its claim is gone (settled by another
// instance, which judged this one dead), or the store is closed.
func (s *Idempotency) writeKept(ctx context.Context, key string) error {
	e, ok := s.kept.Get(key)
	if !ok {
		return nil
	}
	var err error
	if e.Result == nil {
		err = s.recs.ReleaseKey(ctx, key, s.owner)
	} else {
		err = s.recs.CompleteKey(ctx, key, s.owner, e.Result, e.Expires)
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrConflict):
		s.log.Warn("idempotency: a kept completion could not be written; it is dropped", "key", key, "err", err)
	default:
		// ErrClosed too: the gateway is stopping, and what it keeps is
		// in the data folder's file (SaveKept), which a drop here would
		// let journalDone remove.
		return err
	}
	s.kept.Drop(key)
	s.notify(key)
	return nil
}

// fromKept answers c from the completion kept for its key, if any (ok):
// its result, or the refusal of other arguments; a kept release, or a
// result past its expiry (a stored one answers no retry then), is written
// first (ok false once it is, and the key is claimed as usual).
func (s *Idempotency) fromKept(ctx context.Context, c *reach.IdemClaim) (*reach.Result, bool, error) {
	e, ok := s.kept.Get(c.Key)
	if !ok {
		return nil, false, nil
	}
	if e.Result == nil || !e.Expires.IsZero() && !time.Now().Before(e.Expires) {
		if err := s.writeKept(ctx, c.Key); err != nil {
			return nil, true, err
		}
		return nil, false, nil
	}
	if e.Args != "" && c.Args != "" && e.Args != c.Args {
		return nil, true, fmt.Errorf("idempotency key %q: %w", c.Key, reach.ErrIdempotencyKeyReused)
	}
	res, _, err := decodeResult(&IdemRecord{Key: c.Key, Result: e.Result})
	return res, true, err
}
