// Package store keeps what Agent-Reach must not forget across a restart:
// requests, frame checkpoints, idempotency records, the audit log and dead
// letters (E7), and what several gateway instances share (issue 17).
//
//	st, err := sqlite.Open(ctx, ".reach", nil) // SQLite in .reach/reach.db (internal/store/sqlite)
//	if err != nil { ... }
//	defer st.Close()
//	log, _ := audit.New(ctx, st, nil)     // an audit.Log over st's AuditLog
//	idem := store.NewIdempotency(st, nil) // a reach.IdempotencyStore
//
// # Interfaces and implementations
//
// Each user of the store sees one small interface: [Requests], [Frames],
// [IdemRecords], [AuditLog], [DeadLetters] and the others. [Store] is all
// of them plus Close. This package holds the interfaces, [Memory] (for
// unit tests and short-lived runtimes) and [Idempotency], which works over
// any of them. The engines have packages of their own, so that each stays
// readable and none pulls the other's driver into its tests:
// internal/store/sqlite, the embedded default, and internal/store/postgres,
// for several instances on one PostgreSQL database (store: postgres://...),
// each an adapter under internal/store/sqlcore, which implements their
// operations and their group-commit writer once.
// All three pass the same contract tests, internal/store/storetest, each
// run by the package of its implementation.
//
// The methods are written so that a server database fits: every method
// takes a context, writes that belong together are one call (one
// transaction), and the audit log is appended with an expected sequence
// number, so that two writers that race for the same number get
// [ErrConflict] instead of forking the chain.
//
// # Times
//
// Times are stored as Unix nanoseconds; a zero [time.Time] is stored as 0
// and read back as the zero time.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentreach/reach/internal/entities"
)

// Sentinel errors. Implementations wrap them, so match with errors.Is.
var (
	// ErrNotFound is returned when a row asked for by its key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned when a write lost a race: an audit sequence
	// number that is already taken, or an idempotency claim held by
	// another owner.
	ErrConflict = errors.New("conflict")
	// ErrClosed is returned by a store that has been closed.
	ErrClosed = errors.New("store closed")
)

// Store is every interface of the package together: what NewMemory,
// sqlite.Open and postgres.Open return.
type Store interface {
	Requests
	Ledger
	Refusals
	Frames
	IdemRecords
	Approvals
	Entities
	Pins
	AuditLog
	DeadLetters
	Tasks
	Sessions
	ResponseOwners
	HandedTasks
	Close() error
}

// Request is the durable record of a request (C1).
type Request struct {
	ID        string
	Parent    string // the parent request, for a delegation
	Principal string
	Tenant    string            // the principal's tenant
	Roles     []string          // the principal's roles
	Attrs     map[string]string // the principal's attributes
	Trace     string            // the W3C trace id of its tree, 32 hex digits ("" if unknown)
	Scene     string
	Agent     string
	State     string    // running, ended, stopped, interrupted (final: see PutRequest)
	Budget    []byte    // JSON: the request's limits
	Usage     []byte    // JSON: what it has spent
	Cause     []byte    // JSON: why it stopped, if it did
	Started   time.Time // when it began
	Ended     time.Time // zero while running
	Updated   time.Time // set by PutRequest
	// Unreadable says what of the stored row could not be read (its roles
	// or attributes are not JSON: a disk error, a hand edit), "" if all
	// could; Roles and Attrs are then empty, and nothing may act as the
	// request's principal from this record (recovery leaves it as it is).
	// Not stored.
	Unreadable string
	// Carried is, for a root request named again, what its earlier runs
	// spent (JSON, as Usage): read by a PostgreSQL join of a run another
	// instance began (schema 29), nil otherwise.
	Carried []byte
}

// RequestFilter selects requests for ListRequests. The zero value selects
// the newest 100 requests in any state.
type RequestFilter struct {
	State  string    // if not empty, only requests in this state
	Parent string    // if not empty, only the sub-requests of this request
	Roots  bool      // only root requests (no sub-requests)
	Before time.Time // if not zero, only requests started before it (paging)
	// IDPrefix, if not empty, keeps the requests whose id begins with it:
	// a request's compensations ("<request>/compensate/"), which a
	// recovery reads to know the undos that ran. Read through the table,
	// not an index: for a few requests at a start.
	IDPrefix string
	Limit    int // if zero, 100
}

// Requests stores the request registry.
type Requests interface {
	// PutRequest inserts or replaces the request with r.ID and sets
	// r.Updated; it is durable when PutRequest returns. Two states are
	// final for an id, so that no new work runs under it: a request stored
	// as "interrupted" (a restart cut it off) is never replaced, and one
	// stored as "stopped" only by a "stopped" one (its own end, or its
	// recovery, with its cause). A hand-off's sub-request (Parent set)
	// stored "ended" is not replaced by one with another Parent (or none):
	// begun again it would run outside its parent's budget and stops.
	// PutRequest returns an error matching ErrConflict for them.
	PutRequest(ctx context.Context, r *Request) error
	// QueueRequest is PutRequest that returns at once: r is written with a
	// later batch, in the order of the writes queued or waited for (a
	// failure, such as a final state's conflict, is logged). For a record
	// that nothing durable written before it needs, and that a crash may
	// lose until then: the begin of a request whose id was made for it.
	QueueRequest(r *Request)
	// GetRequest returns the request, or an error matching ErrNotFound.
	GetRequest(ctx context.Context, id string) (*Request, error)
	// ListRequests returns the requests that match f, newest first.
	ListRequests(ctx context.Context, f RequestFilter) ([]*Request, error)
}

// Frame is a checkpoint of one step of a request (C5): written before the
// step executes and again when it ends, so that a restarted gateway knows
// what ran, what may have run (State still "executing"), and what must be
// compensated.
type Frame struct {
	Request string
	Frame   string // the frame id, 16 hex digits
	Parent  string // the parent frame id, or ""
	Kind    string // tool, model, delegate
	Name    string // tool, model or receiving agent
	CallID  string
	IdemKey string // the idempotency key the step runs under, if any
	State   string // a reach.State name: executing, completed, failed, ...
	Args    []byte // redacted JSON arguments
	Undo    []byte // JSON: the registered compensation, if any
	Error   []byte // JSON: the step's error, if any
	Started time.Time
	Updated time.Time // set by PutFrame
	// Owner and Stack are kept by a store that several instances share
	// (Postgres), and left empty by SQLite: the life of the instance that
	// wrote the checkpoint ("<instance>/<life>"), for the recovery of a
	// dead instance's calls, and the call's ancestors as JSON (see
	// Postgres.FindFrame), so that a call that another instance places
	// under this one sees them. A hand-off's delegate frame is kept so
	// too (Kind "delegate", no Owner, filed under its sub-request:
	// durable.Checkpoints.Delegated), for its stack alone.
	Owner string
	Stack []byte
	// Entities, kept by a store that several instances share (Postgres),
	// are the keys of the entities the call writes in the shared entity
	// store (reach.Checkpoint.Entities), plain or "sha256:" digests, never
	// a secret: the recovery of the call moves them on. Empty for a
	// checkpoint written before they were kept: its arguments name them.
	Entities []string
	// EndOnly, on a final frame, says that its columns but State, Undo and
	// Error are those of the checkpoint of (Request, Frame) put before it
	// (its "executing" one, as the call's claim wrote it): a store may then
	// write those three and Updated only (an SQLite row is rewritten
	// whole either way; the other columns are not bound and converted
	// again). If no such checkpoint is stored, the frame is written whole.
	EndOnly bool
}

// FrameDone reports whether a frame state is final.
func FrameDone(state string) bool {
	switch state {
	case "completed", "failed", "refused", "cancelled":
		return true
	}
	return false
}

// Frames stores frame checkpoints.
type Frames interface {
	// PutFrame inserts or replaces the checkpoint of (f.Request, f.Frame)
	// and sets f.Updated. It is durable when PutFrame returns.
	PutFrame(ctx context.Context, f *Frame) error
	// QueueFrame is PutFrame for a checkpoint that need not be durable
	// when it returns: it is written after every write made or queued
	// before it, and is durable with a later commit. A failure is logged
	// by the store. f and its slices must not be modified afterwards.
	QueueFrame(f *Frame)
	// RequestFrames returns a request's frames in the order they started;
	// frames that started at the same instant, in the order they were
	// first written (a frame written again keeps its place, whatever its
	// states), so that the calls of a clock that did not move between
	// them are listed as they ran.
	RequestFrames(ctx context.Context, request string) ([]*Frame, error)
	// OpenFrames returns the frames of every request whose state is not
	// final, in the order of RequestFrames: after a crash, the steps that
	// may have run.
	OpenFrames(ctx context.Context) ([]*Frame, error)
}

// Idempotency record states.
const (
	IdemClaimed = "claimed" // a call holds the key and is running
	IdemDone    = "done"    // the call completed; Result answers repeats
)

// IdemRecord is the record of one idempotency key (R7).
type IdemRecord struct {
	Key   string
	Owner string // who claimed it: one value per process life or store instance
	State string // IdemClaimed or IdemDone
	// Args identifies the call the key was claimed for (a digest of its
	// arguments); "" if unknown. A key is not reused for other arguments.
	Args string
	// Request and Frame name the checkpoint of the call that claimed the
	// key (a Frame of Frames), when the call is checkpointed: a claim left
	// by a dead owner whose call has no checkpoint never started.
	Request string
	Frame   string
	// Executing, if not nil on a ClaimKey, is the call's "executing"
	// checkpoint: written with the claim, in the same transaction, when
	// the claim is taken, and not at all when it is not. The call then
	// waits for one commit that holds both.
	Executing *Frame
	Result    []byte // the recorded result (JSON), when done
	Claimed   time.Time
	// Expires is when the record stops counting: for a done record, its
	// TTL; for a claim, its lease (zero: never, until completed or released).
	Expires time.Time
	// CutOff, if not "", on a ClaimKey, is the key of a cut-off write
	// (reach.CutOffStore) to look for in the claim's statement, if the
	// store can: it then sets CutOffRead, and CutOffLive if the write of
	// that key was unexpired at Claimed, when the claim is taken.
	CutOff                 string
	CutOffRead, CutOffLive bool
	// CutRoot is, with CutOff, the claim's root request: where the store
	// can, the claim keeps CutOff and CutRoot while it is held (its write
	// in flight), and a taken claim reads the oldest other claim of CutOff
	// held by a live owner: InFlight, and its root request, claim instant
	// and request.
	CutRoot                       string
	InFlight                      bool
	InFlightRoot, InFlightRequest string
	InFlightAt                    time.Time
}

// IdemRecords stores idempotency records. [NewIdempotency] builds a
// reach.IdempotencyStore on top of it.
type IdemRecords interface {
	// ClaimKey claims c.Key for c.Owner, with c's Args, Request, Frame,
	// Claimed (now) and Expires (the lease; zero for none), when the key
	// has no record or its result has expired (as of c.Claimed), and
	// returns (nil, true). Otherwise it returns the record that holds the
	// key and false: a result, or a claim, even one whose lease has
	// ended. A claim is never taken over here: its call may have run, so
	// whoever finds it stale settles it (SettleClaim), knowing what its
	// checkpoint says.
	ClaimKey(ctx context.Context, c *IdemRecord) (*IdemRecord, bool, error)
	// CompleteKey records result for a key that owner claimed, to expire
	// at expires. It returns an error matching ErrConflict if owner does
	// not hold the claim (it was settled by another, or never was).
	CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error
	// ReleaseKey deletes owner's claim on key so that a later call runs
	// again. Releasing a claim that owner does not hold does nothing.
	ReleaseKey(ctx context.Context, key, owner string) error
	// QueueCompleteKey and QueueReleaseKey are CompleteKey and ReleaseKey
	// queued, as QueueFrame is PutFrame: they return at once, take effect
	// after every write made or queued before them (a ClaimKey after them
	// sees their effect), and their failure is logged by the store.
	QueueCompleteKey(key, owner string, result []byte, expires time.Time)
	QueueReleaseKey(key, owner string)
	// SettleClaim settles the claim c, whose owner will never complete it:
	// it records result in its place (to expire at expires), or, if result
	// is nil, deletes it so that the key is free. It returns an error
	// matching ErrConflict if the key no longer holds that very claim (the
	// same owner, claimed at the same time): it was completed, released or
	// settled meanwhile, and may have been claimed again.
	SettleClaim(ctx context.Context, c *IdemRecord, result []byte, expires time.Time) error
	// SettleKey records result for key, to expire at expires, in place of
	// whatever its record holds (a claim of any owner, or another result),
	// or as a new record. It is for recovery, which knows better than the
	// record: a call it undid must not answer a retry with its old result.
	SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error
	// ClaimedKeys returns every claim (records in state IdemClaimed),
	// oldest first: after a crash, the keys whose calls may be in flight.
	ClaimedKeys(ctx context.Context) ([]*IdemRecord, error)
	// SweepKeys deletes the results that expired before now and returns
	// how many. Claims are never swept, whatever their lease: they are
	// settled.
	SweepKeys(ctx context.Context, now time.Time) (int, error)
}

// AuditRecord is one row of the append-only audit log (A1): the columns a
// store indexes, and the event itself as a JSON document that the package
// audit writes and reads (the store never looks inside it). Seq, PrevHash
// and Hash are assigned by the audit log's single writer.
type AuditRecord struct {
	Seq      int64
	Time     time.Time
	Request  string
	Data     []byte // the event: a JSON object
	PrevHash []byte // the previous record's Hash (zeros for seq 1)
	Hash     []byte
	// Once, if not empty, is a key no other record of the log may hold:
	// the event happens once (an approval's action), whoever writes it.
	// A store that keeps the keys (AuditOnces) appends a record whose key
	// the log holds already as none: it sets Held, and the record takes
	// no seq number, no place in the chain.
	Once string
	// Held is set for a record whose Once the log holds already: it is
	// not appended (AuditOnces).
	Held bool
}

// AuditOnces is an AuditLog that keeps the records' Once keys (table
// audit_once), each held by one record. An AuditChainer's
// AppendAuditChained sets Held, under the head's lock, on the records
// whose key the log holds already (or an earlier record of recs holds)
// before it calls chain, which skips them, and appends the others with
// their keys. A store without the chainer has its one writer ask
// HeldOnces first and set Held, and AppendAudit skips the Held ones.
type AuditOnces interface {
	// HeldOnces reports which of onces the log holds.
	HeldOnces(ctx context.Context, onces []string) (map[string]bool, error)
}

// AuditCheckpoint records the chain's head hash at a sequence number.
type AuditCheckpoint struct {
	Seq  int64
	Hash []byte
	Time time.Time
}

// AuditLog stores the audit log. Records are only ever appended.
type AuditLog interface {
	// AppendAudit appends records, whose Seq numbers follow the current
	// head without a gap, and the checkpoints, in one transaction. If a Seq
	// is already taken it appends nothing and returns an error matching
	// ErrConflict. A checkpoint whose Seq already has one is skipped: the
	// first one written stays.
	AppendAudit(ctx context.Context, recs []*AuditRecord, cps []AuditCheckpoint) error
	// AuditHead returns the last record's Seq and Hash, or (0, nil) for an
	// empty log.
	AuditHead(ctx context.Context) (seq int64, hash []byte, err error)
	// ScanAudit returns up to limit records with Seq > after, in Seq order.
	ScanAudit(ctx context.Context, after int64, limit int) ([]*AuditRecord, error)
	// RequestAudit returns a request's records in Seq order.
	RequestAudit(ctx context.Context, request string) ([]*AuditRecord, error)
	// AuditCheckpoints returns every checkpoint in Seq order.
	AuditCheckpoints(ctx context.Context) ([]AuditCheckpoint, error)
}

// Follows checks that recs number on from head, the log's last Seq, without
// a gap, as AppendAudit requires. A Seq already taken (by the log or earlier
// in recs) is ErrConflict: the writer lost a race and may go on from the new
// head. A Seq past the next free one is an error of its own.
func Follows(recs []*AuditRecord, head int64) error {
	next := head
	for _, r := range recs {
		if r.Held {
			continue // not appended: no seq number (AuditOnces)
		}
		next++
		switch {
		case r.Seq < next:
			return fmt.Errorf("appending audit event %d: sequence number taken: %w", r.Seq, ErrConflict)
		case r.Seq > next:
			return fmt.Errorf("appending audit event %d: the log ends at %d", r.Seq, next-1)
		}
	}
	return nil
}

// Spend is an amount of a request's budget: what it has spent, what a
// step costs, or a cap.
type Spend struct {
	Turns     int64
	ToolCalls int64
	Tokens    int64
	CostNano  int64 // cost in billionths of the price unit
}

// Ledger keeps what each request has spent: one ledger a request, debited
// by an atomic conditional update, so that several writers sharing the
// store (the instances of issue 17) never pass a budget together.
type Ledger interface {
	// Debit adds d to what request has spent if every sum stays within
	// its cap in limit (a zero cap is no cap), in one atomic update, and
	// returns what it has spent after, and true. If a sum would pass its
	// cap, nothing is debited, and Debit returns what it has spent, and
	// false. A request never debited has spent nothing. Durable when it
	// returns.
	Debit(ctx context.Context, request string, d, limit Spend) (Spend, bool, error)
	// Spent returns what request has spent.
	Spent(ctx context.Context, request string) (Spend, error)
}

// Refusals keeps, for each request, the count of its agent's refusals
// in a row (reach.RefusalCounter), in the request's ledger row: every
// instance that shares the store counts on it, and the next life of one
// that restarts finds it. A step admitted on the shared ledger (the
// PostgreSQL store's Admit of a tool call) sets it back to zero in the
// same statement; a request begun again by its id keeps it.
type Refusals interface {
	// NoteRefused adds one to request's count, after setting it back to
	// zero when reset is true (a call was let through since the caller
	// last counted), and returns the count after. Durable when it returns.
	NoteRefused(ctx context.Context, request string, reset bool) (int64, error)
	// ResetRefused sets request's count back to zero, if it is not (a
	// step let through that no admission debited: a hand-off, a call
	// answered from its idempotency record). Durable when it returns.
	ResetRefused(ctx context.Context, request string) error
}

// Within reports whether s is within every non-zero cap of limit.
func (s Spend) Within(limit Spend) bool {
	ok := func(v, cap int64) bool { return cap == 0 || v <= cap }
	return ok(s.Turns, limit.Turns) && ok(s.ToolCalls, limit.ToolCalls) && ok(s.Tokens, limit.Tokens) && ok(s.CostNano, limit.CostNano)
}

func (s Spend) plus(d Spend) Spend {
	return Spend{s.Turns + d.Turns, s.ToolCalls + d.ToolCalls, s.Tokens + d.Tokens, s.CostNano + d.CostNano}
}

// Approval statuses a store keeps live (package approval defines them all).
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
)

// ApprovalRecord is one approval (P4) as the store keeps it: the columns
// it selects by, and the approval itself as a JSON document that package
// approval writes and reads (the store never looks inside it).
type ApprovalRecord struct {
	ID      string
	Key     string // the call it approves, across retries
	Alt     string // another key of the call (its caller's idempotency key), or ""
	Status  string // pending, approved, used, denied, expired
	Version int64  // the number of its last write: see PutApproval
	Created time.Time
	Expires time.Time
	Updated time.Time // set by PutApproval
	Data    []byte    // the approval, JSON
}

// ApprovalFilter selects approvals for ListApprovals. The zero value
// selects the newest 1000 in any status.
type ApprovalFilter struct {
	Live  bool     // only pending and approved ones
	Keys  []string // if not empty, only those whose Key or Alt is one of them
	Limit int      // if zero, 1000
	// Unaudited, if true, selects only those whose Data holds the mark of
	// an action not audited yet, `"unaudited":true` as package approval
	// writes it (the one look inside Data a store takes), however old.
	Unaudited bool
}

// UnauditedMark is the text of Data that ApprovalFilter.Unaudited selects by.
const UnauditedMark = `"unaudited":true`

// UnauditedCondition is the SQL condition on an approval's row that
// ApprovalFilter.Unaudited selects by, and the predicate of the SQL
// stores' partial index of the marked rows (approvals_unaudited).
const UnauditedCondition = `data LIKE '%` + UnauditedMark + `%'`

// ApprovalOnce is the audit log's key (AuditRecord.Once) of an
// approval's action under a requirement (package approval's
// Event.Once): the action is audited once, whoever audits it.
func ApprovalOnce(id, action, requires string) string {
	return "approval " + id + " " + action + " (" + requires + ")"
}

// ApprovalOnceActions and ApprovalOnceRequires are every action and
// requirement an approval's key (ApprovalOnce) names: the retention
// sweep removes the keys of the approvals it removes, each by its name
// (the table's index finds them).
var (
	ApprovalOnceActions  = []string{"requested", "voted", "approved", "denied", "expired", "used"}
	ApprovalOnceRequires = []string{"user", "user+reviewer"}
)

// Approvals stores approvals: a pending one survives a restart with its
// votes and expiry.
type Approvals interface {
	// PutApproval stores a, durably when it returns, and sets a.Version
	// and a.Updated. A new approval has Version 0 and must not exist; an
	// existing one is replaced only if its stored version is a.Version.
	// Otherwise PutApproval writes nothing and returns an error matching
	// ErrConflict: someone else changed it meanwhile (read it again).
	PutApproval(ctx context.Context, a *ApprovalRecord) error
	// GetApproval returns an approval, or an error matching ErrNotFound.
	GetApproval(ctx context.Context, id string) (*ApprovalRecord, error)
	// ListApprovals returns the approvals that match f, newest first.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]*ApprovalRecord, error)
}

// RequestsAuditor is an AuditLog that reads a page of the records of a set
// of requests without the rest of their records: a page of an audit tree
// (GET /v1/audit?tree=1) costs the page, not the tree's whole log.
type RequestsAuditor interface {
	// RequestsAudit returns up to limit records of the requests, with
	// after < Seq <= upTo, in Seq order, read in one snapshot.
	RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*AuditRecord, error)
}

// AuditMatch names the values that the events MatchAudit reads have in
// their fields tenant, principal and name; an empty one matches any.
// After, if set, keeps the read to the records with Seq > After: with a
// before, it bounds the rows read to before-After-1, whatever matches
// (the log has no index on the events' fields).
type AuditMatch struct {
	Tenant, Principal, Name string
	After                   int64
}

// AuditMatcher is an AuditLog that reads the newest records whose events
// match, filtered in its query: a page of a tenant's events (GET /v1/audit
// of a tenant's operator) is full while the log holds that many of them,
// never short because other tenants' events were read first and dropped.
type AuditMatcher interface {
	// MatchAudit returns the newest limit records with Seq < before (0:
	// any) whose events match m, in Seq order, read in one snapshot.
	MatchAudit(ctx context.Context, m AuditMatch, before int64, limit int) ([]*AuditRecord, error)
}

// AuditTenantIndexer is an AuditMatcher whose log has an index on the
// events' tenant (SQLite schema 18, PostgreSQL 27): a match on the tenant
// alone reads the records it returns, not the other tenants' after them,
// so a page of it needs no bound on the records read (AuditMatch.After).
// AuditTenantIndexed says whether the index was there when the store
// opened (a database whose index was dropped by hand has none).
type AuditTenantIndexer interface {
	AuditMatcher
	AuditTenantIndexed() bool
}

// RequestAuditPager is an AuditLog that reads a request's newest records
// without the rest of them: a page of one request's events (GET
// /v1/audit?request=ID) costs the page, not the request's whole log.
type RequestAuditPager interface {
	// RequestAuditBefore returns the newest limit records of request with
	// Seq < before (0: any), in Seq order, read in one snapshot.
	RequestAuditBefore(ctx context.Context, request string, before int64, limit int) ([]*AuditRecord, error)
}

// RequestTreer is a request registry that lists a tree of requests in one
// read: a page of an audit tree walks the tree before its events.
type RequestTreer interface {
	// RequestTree returns root and the ids of its sub-requests, theirs and
	// so on, each once, up to limit ids: the ids only (root is one though the registry
	// does not hold it).
	RequestTree(ctx context.Context, root string, limit int) ([]string, error)
}

// AuditChainer is an AuditLog whose appends can be chained by the store,
// after the head it holds locked: for several writers on one log (the
// instances on one PostgreSQL store), whose heads would otherwise race.
type AuditChainer interface {
	// AppendAuditChained appends recs after the log's head: it calls chain
	// with the head's Seq and Hash (0 and nil for an empty log), while no
	// other writer can append, to set every record's Seq, PrevHash and
	// Hash and return the checkpoints due; then it appends them, in one
	// transaction. A checkpoint whose Seq already has one is skipped.
	AppendAuditChained(ctx context.Context, recs []*AuditRecord, chain func(seq int64, hash []byte) []AuditCheckpoint) error
}

// Entities keeps entity versions (S3), for runtimes that share the store:
// one counter for all entities, so that a write always gives its entities
// a version greater than any seen before.
type Entities interface {
	// BumpEntities gives every entity of names a new version, greater
	// than any stored, and returns it. Durable when it returns.
	BumpEntities(ctx context.Context, names []string) (uint64, error)
	// EntityVersions returns the version of each entity of names; an
	// entity never written has none (0, and no entry).
	EntityVersions(ctx context.Context, names []string) (map[string]uint64, error)
	// ClaimEntities gives the entities of claims one new version, greater
	// than any stored, and returns it, in one transaction: a claim with
	// Check only if its entity is still at its From (0: never written);
	// one that is not is left as it is, and its name returned in stale.
	// Durable when it returns. A write of several runtimes claims what it
	// read before it runs, so that two of them never both write on one
	// read (a stale read), and again after, so that what others read
	// while it ran is stale too.
	ClaimEntities(ctx context.Context, claims []entities.Claim) (version uint64, stale []string, err error)
}

// Pins keeps the pinned definitions of upstream tools (P7), each as a
// JSON document package pin writes and reads.
type Pins interface {
	// PutPin stores the pin of tool, durably when it returns, moves the
	// pins' version on, and returns it.
	PutPin(ctx context.Context, tool string, data []byte) (int64, error)
	// PutPins stores the pins of many tools (data by tool) as PutPin
	// does (a nil data deletes the tool's pin), all or none, in one write
	// that moves the pins' version on once, and returns it.
	PutPins(ctx context.Context, data map[string][]byte) (int64, error)
	// ListPins returns every pin, by tool, and the pins' version.
	ListPins(ctx context.Context) (map[string][]byte, int64, error)
	// PinsVersion returns the pins' version: it changes with every
	// PutPin, so that a reader knows when to read them again.
	PinsVersion(ctx context.Context) (int64, error)
}

// TaskRecord is an A2A task as the gateway records it (internal/a2a): the
// columns it is found by, and its latest view as JSON that package a2a
// writes and reads.
type TaskRecord struct {
	Agent     string // the agent it was sent to
	ID        string // the task's id
	Principal string // who owns it, and the tenant
	Tenant    string
	Request   string    // the hand-off's sub-request
	State     string    // the task's state at reach
	Final     bool      // State is terminal: it never changes again
	Data      []byte    // the task (a2a.Task) as JSON
	Created   time.Time // set when first stored
	Updated   time.Time // set by PutTask
}

// Tasks keeps A2A tasks, so that the instances that share a store answer
// for each other's tasks, and a task's state at reach never goes back.
type Tasks interface {
	// PutTask stores t, unless the stored task is final: a task that
	// reached a terminal state keeps it, whoever writes later (an instance
	// with an older view). It reports whether it wrote, and sets
	// t.Updated.
	PutTask(ctx context.Context, t *TaskRecord) (bool, error)
	// GetTask returns agent's task id, or an error matching ErrNotFound.
	GetTask(ctx context.Context, agent, id string) (*TaskRecord, error)
	// ListTasks returns agent's tasks of principal and tenant, newest
	// first, at most limit (if zero, 100).
	ListTasks(ctx context.Context, agent, principal, tenant string, limit int) ([]*TaskRecord, error)
}

// SessionRecord is an MCP session (Streamable HTTP, Mcp-Session-Id) as
// the gateway records it, so that a restarted gateway, or another
// instance on the same store, takes it over when its client comes back
// with its id (internal/front). The id itself is never stored: a record
// read from the store does not give anyone a session.
type SessionRecord struct {
	Hash      string // the session id's SHA-256, in hex
	Principal string // who opened it, and the tenant ("" without auth)
	Tenant    string
	Protocol  string    // the protocol version it began with
	Init      []byte    // JSON: the initialize params its client sent (clientInfo, capabilities)
	Request   string    // the request its calls ran in last ("" before its first call)
	Created   time.Time // when it was opened
	Used      time.Time // its last use, as the gateway last wrote it (TouchSessions)
}

// SessionUse is a session used since the gateway last said so, and the
// request its calls run in.
type SessionUse struct {
	Hash    string
	Request string
}

// Sessions keeps the records of MCP sessions. A record lives until its
// session ends: its client's DELETE, or its idle timeout (SweepSessions).
type Sessions interface {
	// StoreSession stores r, replacing the record of r.Hash; durable
	// when it returns nil, so that a session's initialize is answered
	// only once its record would outlive a kill.
	StoreSession(ctx context.Context, r *SessionRecord) error
	// GetSession returns the record of hash, or an error matching
	// ErrNotFound.
	GetSession(ctx context.Context, hash string) (*SessionRecord, error)
	// TouchSessions sets the last use of each session of uses to used,
	// and its request; a session without a record is skipped.
	TouchSessions(ctx context.Context, used time.Time, uses []SessionUse) error
	// DeleteSession deletes the record of hash, if there is one; durable
	// when it returns.
	DeleteSession(ctx context.Context, hash string) error
	// SweepSessions deletes the records last used before the time given
	// and returns how many.
	SweepSessions(ctx context.Context, before time.Time) (int64, error)
}

// ResponseOwner is who a Responses API answer that the model proxy passed
// on belongs to, so that another principal's turn that names it
// (previous_response_id) is refused, on any instance and after a restart:
// the endpoint, asked with the one key of the gateway, would go on with
// that answer's conversation for whoever names it. As with a session, the
// id itself is never stored.
type ResponseOwner struct {
	Hash      string // the answer id's SHA-256, in hex
	Principal string
	Tenant    string
	// Endpoint names the model endpoint that gave the answer (the model's
	// or a fallback's), which alone keeps its history.
	Endpoint string
	Created  time.Time // when the answer was passed on
	Expires  time.Time // when the record stops counting, and may be deleted
}

// ResponseOwners keeps the owners of Responses API answers, each until it
// expires.
type ResponseOwners interface {
	// PutResponseOwner stores r, replacing the record of r.Hash, and
	// deletes the records that expired at r.Created or before, in one
	// write (the table stays as large as the answers of one expiry
	// period). Durable when it returns. A record of r.Hash that another
	// principal (or tenant) holds and that has not expired at r.Created
	// is kept, the first writer's, and an error matching ErrConflict is
	// returned: an id is never taken over.
	PutResponseOwner(ctx context.Context, r *ResponseOwner) error
	// GetResponseOwner returns the record of hash, expired or not, or an
	// error matching ErrNotFound.
	GetResponseOwner(ctx context.Context, hash string) (*ResponseOwner, error)
}

// HandedTask records that a model turn chose a tool call given a string
// (a task a sub-agent in the agent's own process may be handed), so that
// the sub-agent's first model turn, reaching another instance, finds the
// turn that handed it its task. The task itself is never stored: only its
// digest, which the principal and tenant it belongs to are part of.
type HandedTask struct {
	Digest    string // SHA-256 of the principal, the tenant and the task, in hex
	Principal string
	Tenant    string
	Request   string // the request of the turn that chose the call
	Frame     string // the turn's model frame
	Tool      string // the function the model called
	// Nth counts the turn's calls that handed the same task before this
	// one's (0 for the first): each call is a record of its own, so that
	// two sub-agents handed one task by one turn each begin their own
	// sub-request.
	Nth int
	// Stack is the turn's ancestry as JSON (reach.Frame.Ancestry), for the
	// instance that adopts it: its frames' ids, kinds, names and the
	// hashes of their arguments, never the arguments.
	Stack   []byte
	Created time.Time
	Expires time.Time // when the record stops counting, and may be deleted
	// Sub is the sub-request begun from the record (SetHandedSub), ""
	// before one is; ClaimHandedTask returns it.
	Sub string

	used bool // a claim took it (Memory's record)
}

// HandedTasks keeps the tasks model turns handed, by their digest, each
// until it expires, and no more than a bound of each principal's.
type HandedTasks interface {
	// PutHandedTasks stores ts (one principal's and tenant's, of one
	// turn: the same Created), replacing a record of the same digest,
	// request and Nth, and deleting those of the same digest and request
	// put by another turn (Frame), deletes the records that expired at their Created or
	// before, and the oldest of that principal's past the newest most,
	// in one write. Durable when it returns.
	PutHandedTasks(ctx context.Context, ts []*HandedTask, most int) error
	// HandedTasks returns up to 8 records of digest held by principal and
	// tenant that have not expired at at, whose request is running (its
	// record's state), the newest first.
	HandedTasks(ctx context.Context, principal, tenant, digest string, at time.Time) ([]*HandedTask, error)
	// ClaimHandedTask marks used, and returns, the record of digest
	// (principal's, tenant's, unexpired at at, its request running) that
	// a sub-agent given the task joins, in one write: of the one request
	// whose turn handed the task, else of the one request whose records
	// are not all used yet, else none (nil), the record not used yet of
	// the lowest Nth, or the Nth 0 when all are used, as one instance's
	// memory decides (link.ModelChoices.Handed) for every instance. Two
	// claims at once take one record not used yet once. A record put again (a later turn
	// of its request handing the task) is not used, with no Sub.
	ClaimHandedTask(ctx context.Context, principal, tenant, digest string, at time.Time) (*HandedTask, error)
	// SetHandedSub records sub as the sub-request begun from the record
	// of digest, request and nth, if the one recorded is still prev; it
	// reports whether it did.
	SetHandedSub(ctx context.Context, digest, request string, nth int, prev, sub string) (bool, error)
	// HandedSubs returns the sub-requests begun from the records of
	// request's model turn frame.
	HandedSubs(ctx context.Context, request, frame string) ([]string, error)
}

// Dead letter states.
const (
	DeadOpen     = "open"     // waiting for an operator
	DeadTaken    = "taken"    // an operator's action (a retry, a dismissal) holds it
	DeadRetried  = "retried"  // the compensation ran again and succeeded
	DeadResolved = "resolved" // an operator settled it by hand
)

// DeadLetter is a compensation that failed (S1), kept for an operator.
type DeadLetter struct {
	ID       int64 // assigned by AddDeadLetter
	Request  string
	Frame    string
	Tool     string // the compensating tool
	Args     []byte // its redacted JSON arguments
	Error    string // the last failure
	Attempts int
	State    string // DeadOpen, DeadTaken, DeadRetried, DeadResolved
	Note     string // the operator's note when it was settled
	Created  time.Time
	Updated  time.Time
	// Taker is, while it is DeadTaken, the instance's life whose action
	// took it (TakeDeadLetter's taker), so that the recovery of a dead
	// life gives it back at once; "" if none was recorded (taken before
	// the store kept it, or by a store of one process). Any later change
	// of the dead letter drops it.
	Taker string
	// Principal and Tenant are the owner of the root of the request whose
	// undo failed, as it was when the dead letter was added: whose the
	// dead letter is, and in which tenant an operator sees and acts on it,
	// after its request is gone too (retention keeps a settled dead letter
	// longer than its request, and a later request may take the id). Both
	// "" for one added before the store kept them (or of a request of no
	// owner).
	Principal string
	Tenant    string
}

// DeadLetters stores failed compensations.
type DeadLetters interface {
	// AddDeadLetter stores d in state DeadOpen, sets d.ID, d.Created and
	// d.Updated, and returns the id.
	AddDeadLetter(ctx context.Context, d *DeadLetter) (int64, error)
	// ListDeadLetters returns the dead letters in state (all if ""), oldest first.
	ListDeadLetters(ctx context.Context, state string) ([]*DeadLetter, error)
	// UpdateDeadLetter sets the state, note, last error and attempts of the
	// dead letter d.ID; it returns an error matching ErrNotFound if there is none.
	UpdateDeadLetter(ctx context.Context, d *DeadLetter) error
	// TakeDeadLetter claims the open dead letter id for one operator's
	// action: it moves it to DeadTaken and returns it, in one step, so
	// that of two actions (in two processes, say) one takes it and the
	// other gets an error matching ErrConflict. A dead letter that is not
	// open, or none, is an error matching ErrNotFound. taker (the
	// instance's life that acts, or "") is recorded with the take, in the
	// same step, as the dead letter's Taker.
	TakeDeadLetter(ctx context.Context, id int64, taker string) (*DeadLetter, error)
}

// UnixNano is t as the stores keep it: nanoseconds since 1970, 0 for the
// zero time.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNano is the time UnixNano kept as n.
func FromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// WriterStats counts what a store's writer has done since the store was
// opened (SQLite's and PostgreSQL's group commits).
type WriterStats struct {
	Batches      int64 // transactions committed
	Writes       int64 // writes committed in them
	QueuedFailed int64 // queued writes that failed (each is logged)
	// Commit is how long the committed transactions took, from their
	// beginning to their commit: what a durable write waits for once the
	// writer takes it.
	Commit DurationCounts
}

// CommitBuckets are the upper bounds of DurationCounts.Buckets, in
// seconds: a commit of one machine's store takes from tens of
// microseconds (SQLite) to milliseconds (PostgreSQL over a network).
var CommitBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// DurationCounts is a histogram of durations: Buckets[i] counts those of
// at most CommitBuckets[i] seconds and more than the bound before it (not
// cumulative); longer ones are counted in Count only.
type DurationCounts struct {
	Buckets [len(CommitBuckets)]int64
	Count   int64
	Sum     time.Duration
}
