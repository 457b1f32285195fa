// Package audit is the append-only, tamper-evident record of every
// decision Agent-Reach makes (A1, A2).
//
//	st, _ := sqlite.Open(ctx, ".reach", nil)
//	log, _ := audit.New(ctx, st, nil)
//	defer log.Close()
//	rt := reach.New(&reach.Options{Recorder: log}) // every frame is recorded
//	...
//	seq, err := log.Append(ctx, &audit.Event{Request: "r1", Kind: "approval", ...}) // durable when it returns
//	rep, err := audit.Verify(ctx, st) // a *ChainError names the first bad event
//
// # The chain
//
// Every event carries the hash of the event before it (PrevHash) and its
// own Hash: SHA-256 over PrevHash and the canonical encoding of the event
// (see [Hash]). Editing, deleting, reordering or inserting a row breaks the
// chain at that row, and [Verify] names it. Every CheckpointEvery events,
// and when the log is closed, the head hash is also written to the
// checkpoints table, so that deleting the newest events back past a
// checkpoint is caught too (deleting only events after the last one is
// not: see docs/AUDIT.md).
//
// # Group commit
//
// Appends go through one writer goroutine: callers enqueue, the writer
// takes everything queued into one transaction, assigns sequence numbers
// and hashes, commits, and then wakes the callers. [Log.Append] returns only
// after its event committed; [Log.Record] (the reach.Recorder) enqueues and
// returns at once, dropping the event (and counting it) when the queue is
// full rather than slowing the call path.
//
// # Redaction
//
// The log stores what it is given: it masks nothing itself. The runtime
// masks an event's texts where it makes them, with the one redactor
// (internal/redact), before they reach [Log.Record]; whoever calls
// [Log.Append] gives an event masked the same way. The log only makes what
// it stores storable: valid UTF-8 without NUL, texts and the result
// preview capped, arguments compacted (and cut when large).
package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/strview"
)

// Event is one audit event (A1). Seq, PrevHash and Hash are set by the log.
// In the store, Time and Request are columns and the rest is one JSON
// object with the fields' json names (see [Event.MarshalJSON]).
type Event struct {
	Seq       int64           `json:"-"`
	Time      time.Time       `json:"-"`
	Request   string          `json:"-"`
	Root      string          `json:"root,omitempty"`   // the root request, when Request is a delegation's sub-request
	Frame     string          `json:"frame,omitempty"`  // 16 hex digits, or "" for a request-level event
	Parent    string          `json:"parent,omitempty"` // the parent frame, or ""
	Agent     string          `json:"agent,omitempty"`
	Principal string          `json:"principal,omitempty"`
	Tenant    string          `json:"tenant,omitempty"` // the principal's tenant
	Kind      string          `json:"kind,omitempty"`   // tool, model, delegate, stop, approval, ...
	Name      string          `json:"name,omitempty"`   // tool name, model name, receiving agent
	CallID    string          `json:"call_id,omitempty"`
	Why       string          `json:"why,omitempty"`      // the caller's reason for the call
	Decision  string          `json:"decision,omitempty"` // the final state: completed, refused, failed, ...
	Guard     string          `json:"guard,omitempty"`    // the stage that decided a refusal
	Reason    string          `json:"reason,omitempty"`   // the class of a refusal or failure (an error type)
	Code      string          `json:"code,omitempty"`
	Message   string          `json:"message,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`   // the arguments, masked
	Result    string          `json:"result,omitempty"` // a masked, capped preview of the result
	Tokens    int64           `json:"tokens,omitempty"`
	Latency   time.Duration   `json:"latency,omitempty"` // nanoseconds
	Budget    json.RawMessage `json:"budget,omitempty"`  // the budget left, as JSON
	// Instance names the instance that recorded a stop (Options.Instance):
	// with several on one store, each that applies a stop records it.
	Instance string `json:"instance,omitempty"`
	// Upstream names the upstream a tool call was dispatched to
	// (Options.Upstreams; the gateway's tools carry it): its configured name, whatever
	// prefix its tools' names carry. "" for a tool of none, and in the
	// logs written before it was recorded.
	Upstream string `json:"upstream,omitempty"`
	// Priority is the priority of the event's request (R8), when it is
	// not the default, 0; left out otherwise, and in the logs written
	// before it was recorded.
	Priority int `json:"priority,omitempty"`
	// Once, if not empty, is a key no other event of the log holds: an
	// event that happens once whoever records it (an approval's action,
	// which two instances may both audit). On a store that keeps the keys
	// (store.AuditOnces), an event whose key the log holds already is not
	// appended (Append returns seq 0). Not part of the event's JSON.
	Once     string `json:"-"`
	PrevHash []byte `json:"-"`
	Hash     []byte `json:"-"`
}

// MarshalJSON writes the event's JSON object as the log stores it: the
// fields in declaration order, empty ones left out, Args and Budget as
// they are (the log stores them compacted), no HTML escaping. Seq, Time,
// Request and the hashes are not part of it.
func (e *Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends the event's JSON object, as MarshalJSON writes it,
// to dst: the form that cannot fail, for a caller that has no error to
// handle (MarshalJSON's is always nil).
func (e *Event) AppendJSON(dst []byte) []byte { return appendData(dst, e) }

// appendData appends the JSON object of e. It is the canonical encoding
// that the chain hashes: the same event always gives the same bytes.
func appendData(dst []byte, e *Event) []byte {
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	for _, f := range [...]struct{ k, v string }{{"root", e.Root}, {"frame", e.Frame}, {"parent", e.Parent},
		{"agent", e.Agent}, {"principal", e.Principal}, {"tenant", e.Tenant}, {"kind", e.Kind}, {"name", e.Name}, {"call_id", e.CallID},
		{"why", e.Why}, {"decision", e.Decision}, {"guard", e.Guard}, {"reason", e.Reason}, {"code", e.Code},
		{"message", e.Message}} {
		if f.v != "" {
			key(f.k)
			dst = append(dst, '"')
			dst = jsonscan.AppendEscaped(dst, f.v)
			dst = append(dst, '"')
		}
	}
	if len(e.Args) > 0 {
		key("args")
		dst = append(dst, e.Args...)
	}
	if e.Result != "" {
		key("result")
		dst = append(dst, '"')
		dst = jsonscan.AppendEscaped(dst, e.Result)
		dst = append(dst, '"')
	}
	if e.Tokens != 0 {
		key("tokens")
		dst = strconv.AppendInt(dst, e.Tokens, 10)
	}
	if e.Latency != 0 {
		key("latency")
		dst = strconv.AppendInt(dst, int64(e.Latency), 10)
	}
	if len(e.Budget) > 0 {
		key("budget")
		dst = append(dst, e.Budget...)
	}
	if e.Instance != "" {
		// Last, and only when set: an event without it is encoded as
		// before, so that the logs written before it verify.
		key("instance")
		dst = append(dst, '"')
		dst = jsonscan.AppendEscaped(dst, e.Instance)
		dst = append(dst, '"')
	}
	if e.Upstream != "" {
		// Likewise: only when set, so that the older logs verify.
		key("upstream")
		dst = append(dst, '"')
		dst = jsonscan.AppendEscaped(dst, e.Upstream)
		dst = append(dst, '"')
	}
	if e.Priority != 0 {
		// Likewise: only when not the default, so that the older logs
		// verify.
		key("priority")
		dst = strconv.AppendInt(dst, int64(e.Priority), 10)
	}
	return append(dst, '}')
}

// decode reads a stored record back into an Event.
func decode(r *store.AuditRecord) (*Event, error) {
	e := &Event{}
	if err := json.Unmarshal(r.Data, e); err != nil {
		return nil, fmt.Errorf("reading audit event %d: %w", r.Seq, err)
	}
	e.Seq, e.Time, e.Request, e.PrevHash, e.Hash = r.Seq, r.Time, r.Request, r.PrevHash, r.Hash
	return e, nil
}

// ErrClosed is returned by Append and Flush on a closed Log.
var ErrClosed = errors.New("audit log closed")

// Options configure a Log. A nil *Options means all defaults; every zero
// field has the default its comment states.
type Options struct {
	// QueueSize bounds the events waiting for the writer; if zero, 16384
	// (a slot is 24 bytes, all of them touched as the queue turns over;
	// at 3,000 events a second, 5 s of a stalled commit).
	// Append waits for room; Record drops.
	QueueSize int
	// MaxBatch bounds the events in one transaction; if zero, 8192.
	MaxBatch int
	// CheckpointEvery is how many events pass between checkpoints of the
	// head hash; if zero, 1024.
	CheckpointEvery int64
	// MaxResult caps the stored result preview, in bytes; if zero, 512.
	MaxResult int
	// MaxMessage caps the stored message, in bytes; if zero, 1024.
	MaxMessage int
	// MaxArgs caps the stored arguments, in bytes; if zero, 16 KiB. Larger
	// arguments are stored as {"truncated": <size>, "preview": "<start>"}.
	MaxArgs int
	// Logger reports failed commits of recorded events; if nil, logs are
	// discarded.
	Logger *slog.Logger
	// Linger is how long the writer waits, after taking a recorded event
	// while nothing waits for a commit, for more to join its transaction:
	// one commit for the events of several calls, not one each, and no
	// wake-up of the writer per event meanwhile. Append, Flush, Close and
	// a queue half full end the wait at once. If zero, DefaultLinger;
	// negative, no wait.
	Linger time.Duration
	// Instance, if set, names this instance in the stop events it records
	// (Event.Instance): several instances on one store each record the
	// stop they apply, which were otherwise the same event twice.
	Instance string
	// Upstreams records, in the event of each tool frame, the upstream
	// its call was dispatched to (reach.Event.Upstream: the tool's
	// Upstream then), or none for a tool of none. The writer once looked
	// the tool up as it wrote the event, milliseconds after the call: a
	// reload in between recorded the new placement.
	Upstreams bool
}

// DefaultLinger is Options.Linger's default. A recorded event is in memory
// only (lost to a kill -9) until its batch commits, at most this long after
// the first of it, under light load; under heavy load batches commit as
// soon as the one before them has.
const DefaultLinger = 5 * time.Millisecond

// Log is an append-only audit log over a store.AuditLog. It implements
// reach.Recorder. Safe for concurrent use. Make one with New and Close it.
type Log struct {
	st  store.AuditLog
	o   Options
	log *slog.Logger

	mu     sync.RWMutex // held (read) while sending on q; Close takes it to close q
	closed bool
	q      chan item
	wake   chan struct{} // something waits for a commit (or the log closed): stop lingering
	exited chan struct{}

	dropped  atomic.Int64
	failed   atomic.Int64
	appended atomic.Int64
	batches  atomic.Int64

	// Owned by the writer goroutine.
	notedDropped, notedFailed int64 // the losses the log's last loss note covered (lossNote)
	seq                       int64
	head                      []byte
	lastCp                    int64
	recs                      []*store.AuditRecord
	hasher                    *hasher
	raw                       rawEvent // a recorded event's conversion (see encode)
}

// rawEvent is a recorded event converted for prepare by the writer: its
// frame ids are written into its own arrays, its strings are views, not
// copies. It is valid until the next conversion.
type rawEvent struct {
	ev            Event
	frame, parent [16]byte
}

var (
	_ reach.Recorder = (*Log)(nil)
	_ reach.Keeper   = (*Log)(nil)
)

// item is one entry of the queue: a prepared record (Append), a raw
// reach.Event (Record), or neither (a flush marker).
type item struct {
	rec  *store.AuditRecord
	raw  *reach.Event
	done chan error    // nil for Record
	kept reach.Receipt // Keep's, or nil
}

// New reads the head of the chain in st and starts the writer.
func New(ctx context.Context, st store.AuditLog, opts *Options) (*Log, error) {
	l := &Log{st: st}
	if opts != nil {
		l.o = *opts
	}
	o := &l.o
	o.QueueSize = cmp.Or(o.QueueSize, 16384)
	o.MaxBatch = cmp.Or(o.MaxBatch, 8192)
	o.CheckpointEvery = cmp.Or(o.CheckpointEvery, 1024)
	o.MaxResult = cmp.Or(o.MaxResult, 512)
	o.MaxMessage = cmp.Or(o.MaxMessage, 1024)
	o.MaxArgs = cmp.Or(o.MaxArgs, 16<<10)
	o.Linger = cmp.Or(o.Linger, DefaultLinger)
	l.log = o.Logger
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	seq, head, err := st.AuditHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	l.seq, l.head = seq, head
	if l.head == nil {
		l.head = make([]byte, HashSize)
	}
	cps, err := st.AuditCheckpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	if len(cps) > 0 {
		l.lastCp = cps[len(cps)-1].Seq
	}
	l.hasher = newHasher()
	l.q = make(chan item, o.QueueSize)
	l.wake = make(chan struct{}, 1)
	l.exited = make(chan struct{})
	go l.run()
	return l, nil
}

// Append appends e (masked already: see the package doc) and returns its sequence number once the
// transaction that holds it has committed: from then on it survives a crash
// of the process (and, with synchronous FULL, of the machine). e itself is
// not modified; its Seq, PrevHash and Hash are ignored. If ctx ends first,
// Append returns its cause and the event may or may not be appended.
func (l *Log) Append(ctx context.Context, e *Event) (int64, error) {
	rec := l.prepare(e)
	done := make(chan error, 1)
	if err := l.send(ctx, item{rec: rec, done: done}); err != nil {
		return 0, err
	}
	select {
	case err := <-done:
		if err != nil {
			return 0, err
		}
		return rec.Seq, nil
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

// send enqueues it, waiting for room.
func (l *Log) send(ctx context.Context, it item) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	select {
	case l.q <- it:
		l.poke()
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// poke ends the writer's linger, if it lingers.
func (l *Log) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Record implements reach.Recorder: it enqueues e and returns at once. The
// writer converts it. When the queue is full, or the log is
// closed, the event is dropped and counted (see Stats).
func (l *Log) Record(ctx context.Context, e *reach.Event) { l.Keep(ctx, e, nil) }

// Keep implements reach.Keeper: it records e as Record does, and tells
// kept (if not nil) true once the transaction that holds e committed, or
// false when e is dropped (queue full, log closed: at once) or its commit
// failed. kept is told on the log's writer goroutine: it must be fast.
func (l *Log) Keep(_ context.Context, e *reach.Event, kept reach.Receipt) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		if kept != nil {
			kept.Kept(false)
		}
		return
	}
	select {
	case l.q <- item{raw: e, kept: kept}:
		if len(l.q) >= cap(l.q)/2 {
			l.poke() // no lingering while the queue fills: Record would drop
		}
	default:
		l.dropped.Add(1)
		if kept != nil {
			kept.Kept(false)
		}
	}
}

// Flush returns when every event enqueued before it has been committed (or
// has failed).
func (l *Log) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	if err := l.send(ctx, item{done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Close stops taking events, commits everything queued, writes a
// checkpoint of the head, and stops the writer. It does not close the store.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.q)
		l.poke()
	}
	l.mu.Unlock()
	<-l.exited
	return nil
}

// Stats counts what the log has done since it was made.
type Stats struct {
	Appended int64 // events committed
	Batches  int64 // transactions committed
	Dropped  int64 // recorded events dropped: queue full or log closed
	Failed   int64 // recorded events lost to a failed commit
	Queued   int   // events waiting for the writer now
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	return Stats{Appended: l.appended.Load(), Batches: l.batches.Load(), Dropped: l.dropped.Load(),
		Failed: l.failed.Load(), Queued: len(l.q)}
}

// Dropped returns how many recorded events were dropped because the queue
// was full or the log closed.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Verify checks the whole chain; see the package function Verify.
func (l *Log) Verify(ctx context.Context) (*Report, error) { return Verify(ctx, l.st) }

// Show returns a request's events in order; see the package function Show.
func (l *Log) Show(ctx context.Context, request string) ([]*Event, error) {
	return Show(ctx, l.st, request)
}

// Show returns the events of a request in sequence order.
func Show(ctx context.Context, src store.AuditLog, request string) ([]*Event, error) {
	recs, err := src.RequestAudit(ctx, request)
	if err != nil {
		return nil, err
	}
	return decodeAll(recs)
}

// ShowBefore returns the newest limit events of request with Seq < before
// (0: any), in Seq order, and true, when src is a store.RequestAuditPager
// (it reads the page alone); false, and nothing read, otherwise.
func ShowBefore(ctx context.Context, src store.AuditLog, request string, before int64, limit int) ([]*Event, bool, error) {
	rp, ok := src.(store.RequestAuditPager)
	if !ok {
		return nil, false, nil
	}
	recs, err := rp.RequestAuditBefore(ctx, request, before, limit)
	if err != nil {
		return nil, true, err
	}
	evs, err := decodeAll(recs)
	return evs, true, err
}

// Matching returns the newest limit events with Seq < before (0: any)
// whose tenant, principal and name are m's (an empty one: any), in Seq
// order, and true, when src is a store.AuditMatcher (false, and nothing
// read, otherwise).
func Matching(ctx context.Context, src store.AuditLog, m store.AuditMatch, before int64, limit int) ([]*Event, bool, error) {
	am, ok := src.(store.AuditMatcher)
	if !ok {
		return nil, false, nil
	}
	recs, err := am.MatchAudit(ctx, m, before, limit)
	if err != nil {
		return nil, true, err
	}
	evs, err := decodeAll(recs)
	return evs, true, err
}

// ShowRequests returns up to limit events of the requests with after < Seq
// <= upTo, in Seq order: a page of a tree of requests. A store that is a
// store.RequestsAuditor reads the page alone; another, every event of
// every request.
func ShowRequests(ctx context.Context, src store.AuditLog, requests []string, after, upTo int64, limit int) ([]*Event, error) {
	if ra, ok := src.(store.RequestsAuditor); ok {
		recs, err := ra.RequestsAudit(ctx, requests, after, upTo, limit)
		if err != nil {
			return nil, err
		}
		return decodeAll(recs)
	}
	var recs []*store.AuditRecord
	for _, r := range requests {
		more, err := src.RequestAudit(ctx, r)
		if err != nil {
			return nil, err
		}
		for _, rec := range more {
			if rec.Seq > after && rec.Seq <= upTo {
				recs = append(recs, rec)
			}
		}
	}
	slices.SortFunc(recs, func(x, y *store.AuditRecord) int { return cmp.Compare(x.Seq, y.Seq) })
	return decodeAll(recs[:min(len(recs), limit)])
}

// KindUnreadable is the kind of an event whose stored record could not be
// read (a disk error, a hand edit): its Message says why. The record is
// kept as it is (Verify checks its hash); the views show the other events.
const KindUnreadable = "unreadable"

// decodeAll decodes stored records into events; a record that does not
// decode is an event of KindUnreadable, so that one bad record hides none
// of the others.
func decodeAll(recs []*store.AuditRecord) ([]*Event, error) {
	out := make([]*Event, len(recs))
	for i, r := range recs {
		var err error
		if out[i], err = decode(r); err != nil {
			out[i] = &Event{Seq: r.Seq, Time: r.Time, Request: r.Request, PrevHash: r.PrevHash, Hash: r.Hash, Kind: KindUnreadable, Code: KindUnreadable,
				Message: err.Error() + "; the record is kept in the log as it is (reach audit verify checks it)"}
		}
	}
	return out, nil
}

// run is the writer: it takes what is queued, commits it as one batch, and
// wakes the callers.
func (l *Log) run() {
	defer close(l.exited)
	batch := make([]item, 0, 64)
	open := true
	// drain takes what is queued, up to MaxBatch, and reports how many.
	drain := func() int {
		n := 0
		for open && len(batch) < l.o.MaxBatch {
			select {
			case it, ok := <-l.q:
				if !ok {
					open = false
					return n
				}
				batch = append(batch, it)
				n++
			default:
				return n
			}
		}
		return n
	}
	var linger *time.Timer
	for open {
		it, ok := <-l.q
		if !ok {
			break
		}
		batch = append(batch[:0], it)
		if l.o.Linger > 0 {
			// Recorded events only: wait for more (a caller that waits
			// pokes wake after it enqueued, so its item is taken here or
			// its poke ends the wait).
			select {
			case <-l.wake:
			default:
			}
			drain()
			if open && len(batch) < l.o.MaxBatch && !waited(batch) {
				if linger == nil {
					linger = time.NewTimer(l.o.Linger)
				} else {
					linger.Reset(l.o.Linger)
				}
				select {
				case <-linger.C:
				case <-l.wake:
					linger.Stop()
				}
			}
		}
		drain()
		// Callers woken by the last commit are about to enqueue again: let
		// them, while that makes the batch grow, so that one commit carries
		// them all instead of one each.
		for range yields {
			runtime.Gosched()
			if drain() == 0 {
				break
			}
		}
		l.commit(batch)
		clear(batch) // let the events go
	}
	if l.seq > l.lastCp {
		cp := store.AuditCheckpoint{Seq: l.seq, Hash: l.head, Time: time.Now()}
		if err := l.st.AppendAudit(context.Background(), nil, []store.AuditCheckpoint{cp}); err != nil {
			l.log.Error("audit: writing the closing checkpoint", "seq", l.seq, "err", err)
		}
	}
}

// waited reports whether a caller waits for batch's commit.
func waited(batch []item) bool {
	for i := range batch {
		if batch[i].done != nil {
			return true
		}
	}
	return false
}

// yields bounds how often the writer yields to let a batch grow.
const yields = 4

// commitTries bounds the retries of a batch whose seq numbers another
// writer took (each retry means that writer made progress).
const commitTries = 64

func (l *Log) commit(batch []item) {
	l.recs = l.recs[:0]
	dropped, failed := l.dropped.Load(), l.failed.Load()
	if dropped > l.notedDropped || failed > l.notedFailed {
		// Recorded events were lost since the last note: the chain says
		// so where they would have been, before this batch.
		l.recs = append(l.recs, l.prepare(lossNote(dropped-l.notedDropped, failed-l.notedFailed)))
	}
	for i := range batch {
		it := &batch[i]
		if it.raw != nil {
			it.rec = l.encode(it.raw)
			it.raw = nil
		}
		if it.rec != nil {
			l.recs = append(l.recs, it.rec)
		}
	}
	var err error
	ch, chained := l.st.(store.AuditChainer)
	if len(l.recs) > 0 && chained {
		// The store hands the head it holds: no other writer appends
		// meanwhile, so the batch is chained once.
		var seq int64
		var head []byte
		var cps []store.AuditCheckpoint
		err = ch.AppendAuditChained(context.Background(), l.recs, func(s int64, h []byte) []store.AuditCheckpoint {
			if h == nil {
				h = make([]byte, HashSize)
			}
			l.seq, l.head = s, h
			seq, head, cps = l.chain()
			return cps
		})
		if err == nil {
			crashpoint.Reached("audit.appended")
			l.committed(seq, head, cps)
		} else {
			err = fmt.Errorf("appending to the audit log: %w", err)
		}
	} else if len(l.recs) > 0 {
		for try := 1; ; try++ {
			if err = l.holdOnces(); err != nil {
				break
			}
			seq, head, cps := l.chain()
			err = l.st.AppendAudit(context.Background(), l.recs, cps)
			if err == nil {
				crashpoint.Reached("audit.appended")
				l.committed(seq, head, cps)
				break
			}
			if !errors.Is(err, store.ErrConflict) || try == commitTries {
				break
			}
			// Another writer appended: continue from its head.
			s, h, herr := l.st.AuditHead(context.Background())
			if herr != nil {
				err = errors.Join(err, herr)
				break
			}
			if h == nil {
				h = make([]byte, HashSize)
			}
			l.seq, l.head = s, h
		}
		if err != nil {
			err = fmt.Errorf("appending to the audit log: %w", err)
		}
	}
	if err == nil {
		l.notedDropped, l.notedFailed = dropped, failed
	}
	for i := range batch {
		it := &batch[i]
		if it.done != nil {
			it.done <- err
		} else if err != nil {
			l.failed.Add(1)
		}
		if it.kept != nil {
			it.kept.Kept(err == nil)
		}
	}
	if err != nil {
		l.log.Error("audit: a batch failed", "events", len(l.recs), "err", err)
	}
	clear(l.recs)
}

// Loss notes: the event the log writes, before the next batch it
// commits, when recorded events were lost since its last one (dropped
// because the queue was full or the log closed, or lost to a failed
// commit), so that the chain itself says that events are missing where
// they are: Verify counts them (Report.Lost).
const (
	LossKind     = "audit"             // its Kind
	LossDecision = "lost"              // its Decision
	LossCode     = "audit_events_lost" // its Code
)

// Loss is what a loss note's Args hold: the recorded events lost since
// the previous note.
type Loss struct {
	Dropped int64 `json:"dropped"` // the queue was full, or the log closed
	Failed  int64 `json:"failed"`  // lost to a failed commit
}

func lossNote(dropped, failed int64) *Event {
	args, _ := json.Marshal(Loss{Dropped: dropped, Failed: failed})
	return &Event{Time: time.Now(), Kind: LossKind, Decision: LossDecision, Code: LossCode, Args: args,
		Message: fmt.Sprintf("%d recorded events were lost before they were written (%d dropped: the audit queue was full or the log closed; %d lost to a failed commit): the log holds none of them; the requests they belong to count them (audit_lost)",
			dropped+failed, dropped, failed)}
}

// lossOf reports the events a loss note says were lost, if data (a
// stored event) is one.
func lossOf(data []byte) (int64, bool) {
	if !bytes.Contains(data, []byte(`"code":"`+LossCode+`"`)) {
		return 0, false
	}
	var e struct {
		Kind, Code, Frame string
		Args              Loss
	}
	if json.Unmarshal(data, &e) != nil || e.Kind != LossKind || e.Code != LossCode || e.Frame != "" {
		return 0, false
	}
	return e.Args.Dropped + e.Args.Failed, true
}

// committed moves the chain's head past the batch just appended: seq and
// head are its last record's, cps its checkpoints.
func (l *Log) committed(seq int64, head []byte, cps []store.AuditCheckpoint) {
	l.seq, l.head = seq, head
	if len(cps) > 0 {
		l.lastCp = cps[len(cps)-1].Seq
	}
	n := 0
	for _, r := range l.recs {
		if !r.Held {
			n++
		}
	}
	l.appended.Add(int64(n))
	l.batches.Add(1)
}

// holdOnces sets Held on the records of l.recs whose Once key the log
// holds already, or an earlier record of l.recs holds, when the store
// keeps the keys (store.AuditOnces) and does not chain the records itself
// (where it sets them under the head's lock): this writer, the log's one,
// appends nothing between the question and its append.
func (l *Log) holdOnces() error {
	ho, ok := l.st.(store.AuditOnces)
	if !ok {
		return nil
	}
	var onces []string
	for _, r := range l.recs {
		if r.Once != "" {
			onces = append(onces, r.Once)
		}
	}
	if len(onces) == 0 {
		return nil
	}
	held, err := ho.HeldOnces(context.Background(), onces)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range l.recs {
		if r.Once != "" {
			r.Held = held[r.Once] || seen[r.Once]
			seen[r.Once] = true
		}
	}
	return nil
}

// chain assigns seq numbers, prev hashes and hashes to l.recs after the
// current head, and returns the new head and the checkpoints due.
func (l *Log) chain() (int64, []byte, []store.AuditCheckpoint) {
	seq, prev := l.seq, l.head
	hashes := make([]byte, 0, HashSize*len(l.recs))
	h := l.hasher
	var cps []store.AuditCheckpoint
	for _, r := range l.recs {
		if r.Held {
			// Its key's event is in the log already (store.AuditOnces):
			// not chained, and nothing kept of a try before it was held
			// (a retry after a conflict).
			r.Seq, r.PrevHash, r.Hash = 0, nil, nil
			continue
		}
		seq++
		start := len(hashes)
		hashes = chainHash(h, hashes, prev, seq, r.Time, r.Request, r.Data)
		r.Seq, r.PrevHash, r.Hash = seq, prev, hashes[start:len(hashes):len(hashes)]
		prev = r.Hash
		if seq%l.o.CheckpointEvery == 0 {
			cps = append(cps, store.AuditCheckpoint{Seq: seq, Hash: r.Hash, Time: r.Time})
		}
	}
	return seq, prev, cps
}

// prepare caps a copy of e and encodes it as a record. e's texts are
// masked already (see the package doc).
func (l *Log) prepare(e *Event) *store.AuditRecord {
	c := *e
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	if c.Kind == "stop" && c.Instance == "" {
		c.Instance = l.o.Instance
	}
	for _, f := range [...]*string{&c.Request, &c.Root, &c.Frame, &c.Parent, &c.Agent, &c.Principal, &c.Tenant, &c.Kind,
		&c.Name, &c.CallID, &c.Decision, &c.Guard, &c.Reason, &c.Code, &c.Instance, &c.Upstream} {
		*f = clean(*f)
	}
	c.Why = clip(clean(c.Why), l.o.MaxMessage)
	c.Message = clip(clean(c.Message), l.o.MaxMessage)
	c.Result = clip(clean(c.Result), l.o.MaxResult)
	if len(c.Args) > 0 {
		a := []byte(c.Args)
		if len(a) > l.o.MaxArgs {
			a = truncatedArgs(a, l.o.MaxArgs)
		}
		c.Args = compactJSON(a)
	}
	if len(c.Budget) > 0 {
		c.Budget = compactJSON(c.Budget)
	}
	data := appendData(make([]byte, 0, 256+len(c.Args)+len(c.Result)+len(c.Message)+len(c.Budget)), &c)
	if !utf8.Valid(data) {
		data = []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	return &store.AuditRecord{Time: time.Unix(0, c.Time.UnixNano()), Request: c.Request, Data: data, Once: c.Once}
}

// compactJSON returns b compacted if it is JSON, or else b as a JSON
// string, so that the stored object stays valid JSON and reads back as the
// same bytes.
func compactJSON(b []byte) json.RawMessage {
	if compactValid(b) {
		return b
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if json.Compact(buf, b) == nil {
		if bytes.Equal(buf.Bytes(), b) {
			return b
		}
		return bytes.Clone(buf.Bytes())
	}
	return appendQuoted(nil, []byte(clean(string(b))))
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// clean makes s storable as text in any database: valid UTF-8, no NUL.
func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "…"
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

func truncatedArgs(a []byte, n int) []byte {
	p := clip(string(a), n/2)
	out, _ := json.Marshal(struct {
		Truncated int    `json:"truncated"`
		Preview   string `json:"preview"`
	}{len(a), p})
	return out
}

// ReplayedCode marks the event of a call answered from the idempotency
// record of an earlier run (reach.Event.Replayed): the tool did not run
// again.
const ReplayedCode = "replayed"

const replayedMessage = "answered from the idempotency record of an earlier run of the same call; the tool did not run again"

// FromReach converts a reach.Event (masked by the runtime) into an audit
// Event.
// The result preview is the start of the data returned to the model, or
// the summary when there is none.
func FromReach(e *reach.Event) *Event {
	ev := &Event{}
	fromReach(e, ev)
	if len(e.Result) > 0 {
		ev.Result = string(e.Result)
	}
	if e.Frame != 0 {
		ev.Frame = e.Frame.String()
	}
	if e.Parent != 0 {
		ev.Parent = e.Parent.String()
	}
	return ev
}

// encode is prepare(FromReach(e)) for the writer, without FromReach's
// allocations: the event, its frame ids and a copy of its result (a
// recorded call's event is converted, encoded, and dropped). The record
// is all it allocates, as prepare does (TestEncodeAllocations).
func (l *Log) encode(e *reach.Event) *store.AuditRecord {
	r := &l.raw
	ev := &r.ev
	*ev = Event{}
	fromReach(e, ev)
	if len(e.Result) > 0 {
		// The frame's result, which nothing changes: read, not kept.
		ev.Result = strview.Of(e.Result)
	}
	if e.Frame != 0 {
		r.frame = e.Frame.Hex()
		ev.Frame = strview.Of(r.frame[:])
	}
	if e.Parent != 0 {
		r.parent = e.Parent.Hex()
		ev.Parent = strview.Of(r.parent[:])
	}
	if l.o.Upstreams && e.Kind == reach.ToolFrame {
		ev.Upstream = e.Upstream
	}
	rec := l.prepare(ev)
	*ev = Event{} // keeps nothing of e
	return rec
}

// fromReach fills ev from e, but for its result and its frame ids (see
// FromReach and encode).
func fromReach(e *reach.Event, ev *Event) {
	*ev = Event{Time: e.Time, Request: e.Request, Agent: e.Agent, Principal: e.Principal, Tenant: e.Tenant, Priority: e.Priority,
		Kind: e.Kind.String(), Name: e.Name, CallID: e.CallID, Why: e.Why, Decision: e.State.String(),
		Args: e.Args, Result: e.Summary, Tokens: e.Tokens, Latency: e.Latency}
	if e.Root != e.Request {
		ev.Root = e.Root
	}
	if e.Error != nil {
		ev.Guard, ev.Reason, ev.Code, ev.Message = e.Error.Guard, e.Error.Type, e.Error.Code, e.Error.Message
	}
	if e.Replayed {
		// Answered from the record of an earlier run: an auditor reading
		// two completed calls must see that the tool ran once.
		if ev.Code == "" {
			ev.Guard, ev.Code, ev.Message = "idempotency", ReplayedCode, replayedMessage
		} else {
			ev.Message += " (" + replayedMessage + ")"
		}
	}
	if e.Stop != nil {
		ev.Kind, ev.Name = "stop", e.Stop.Mode.String()
		if ev.Guard == "" {
			ev.Guard = e.Stop.By
		}
		if ev.Message == "" {
			ev.Message = e.Stop.Reason
		}
	}
	if b := e.Breaker; b != nil {
		// A circuit breaker's change of state: request-level (no frame),
		// in the request of the call that moved it, if one did.
		ev.Kind, ev.Name, ev.Decision, ev.Guard, ev.Code = "breaker", e.Name, b.To.String(), "breaker", "breaker_"+b.To.String()
		ev.Message = "from " + b.From.String() + ": " + b.Reason
		if !b.RetryAt.IsZero() {
			ev.Message += "; a probe may go at " + b.RetryAt.UTC().Format(time.RFC3339)
		}
		return
	}
	if e.Remaining == (reach.Budget{}) {
		return // no budget set: nothing to encode (as "{}", left out)
	}
	if b, err := json.Marshal(e.Remaining); err == nil && string(b) != "{}" {
		ev.Budget = b
	}
}

// FormatHash writes a hash as "sha256:" and hex.
func FormatHash(h []byte) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	b.WriteString("sha256:")
	for _, c := range h {
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&15])
	}
	return b.String()
}

// Recent returns up to limit of the newest events of the whole log, oldest
// first.
func Recent(ctx context.Context, src store.AuditLog, limit int) ([]*Event, error) {
	head, _, err := src.AuditHead(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := src.ScanAudit(ctx, max(head-int64(limit), 0), limit)
	if err != nil {
		return nil, err
	}
	return decodeAll(recs)
}

// appendQuoted appends s as a JSON string.
func appendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = jsonscan.AppendEscaped(dst, string(s))
	return append(dst, '"')
}
