// Package approval is the confirmation queue (P4): calls the policies say
// need a human wait here until the user who made the request (and, for
// high-risk calls, a reviewer) approves them.
//
//	q := approval.New(&approval.Options{Tool: rt.Tool, Requires: eng.Requirement, Store: st})
//	q.Load(ctx) // the approvals st kept, after a restart
//	rt := reach.New(&reach.Options{Authorizer: eng, Approver: q.Approver(), ApprovalKey: q.ApprovalKey})
//	mux.Handle("/v1/approvals", q.Handler(nil)) // and /v1/approvals/...
//
// # How a call is approved
//
// A call that needs approval gets the status pending, with an error naming
// the approval and who must give it. Its approval is keyed by the call:
// (root request, tool, canonical arguments), or, for a call that carries
// its caller's idempotency key, (idempotency key, tool, canonical
// arguments), so that a retry in another request (after a restart, say)
// finds it; both within the root request's principal and tenant. The same
// call made again while it is pending returns the same approval, never a
// second one. Once approved (the user;
// for "user+reviewer", the user and a different principal with the role
// reviewer), the next identical call runs, once: the approval is used up,
// and an identical call after that asks again. A denial answers identical
// calls with the denial until the approval would have expired. Approvals
// expire (default 15 minutes) if nobody decides, or if the approved call is
// not made again in that time.
//
// With Options.Wait the call is held that long for a decision before it is
// answered pending, so a human at a console can approve without the agent
// retrying.
//
// # Durability
//
// With Options.Store every change (a new approval, a vote, a decision, a
// use, an expiry) is written to the store before it is answered, and Load
// reads the approvals back after a restart: a pending one keeps its votes
// and expiry, and an approved call runs once however often it is retried
// (its run's idempotency key names the approval).
package approval

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/idempotency"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/store"
)

// Status is where an approval stands.
type Status string

// Statuses.
const (
	Pending  Status = "pending"  // waiting for a decision
	Approved Status = "approved" // every approval given; the next identical call runs
	Used     Status = "used"     // the approved call was let through
	Denied   Status = "denied"   // denied; identical calls are refused until it expires
	Expired  Status = "expired"  // nobody decided, or the approved call did not come, in time
)

// Requirements: who must approve.
const (
	User            = "user"          // the user who made the request
	UserAndReviewer = "user+reviewer" // the user, and a different principal with the reviewer role
)

// Errors of Approve and Deny, matched with errors.Is.
var (
	ErrNotFound     = errors.New("no such approval")
	ErrNotAllowed   = errors.New("not allowed to decide this approval")
	ErrDecided      = errors.New("approval already decided")
	ErrAlreadyVoted = errors.New("already approved by this principal")
	// ErrNotRecorded: the store did not take the decision (its write
	// failed or timed out, and reading the approval back did not find it
	// there). The approval stays as it was: look at it again, and decide
	// it again if it still waits.
	ErrNotRecorded = errors.New("decision not recorded")
)

// Actor is who approves or denies.
type Actor struct {
	Principal string
	Roles     []string
	Tenant    string
}

// Vote is one approval or denial.
type Vote struct {
	By     string    `json:"by"`
	As     string    `json:"as"` // "user" or "reviewer"
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Approval is one call waiting for (or decided by) humans: what it does,
// to what, with what impact, and who asked.
type Approval struct {
	ID       string `json:"id"`
	Status   Status `json:"status"`
	Requires string `json:"requires"` // "user" or "user+reviewer"

	// Operation is what the tool does (its description's first line).
	Operation string `json:"operation"`
	// Target: the tool and its arguments.
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Impact: the access level, the entities it writes (templates filled
	// from the arguments), and the tool that undoes it, if any.
	Access reach.Access `json:"access"`
	Writes []string     `json:"writes,omitempty"`
	Undo   string       `json:"undo,omitempty"`
	// Who asked, and why.
	// Principal and Tenant stay next to each other, in this order: a
	// shared store finds a principal's pending approvals by the two as
	// their JSON spells them (pendingShared).
	Principal   string `json:"principal"`
	Tenant      string `json:"tenant,omitempty"`
	Scene       string `json:"scene,omitempty"`
	Agent       string `json:"agent,omitempty"`
	Request     string `json:"request"`
	RootRequest string `json:"root_request"`
	Why         string `json:"why,omitempty"`

	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Votes   []Vote    `json:"votes,omitempty"`
	Denial  *Vote     `json:"denial,omitempty"`
	// Note says what a human should know, e.g. that an identical call was
	// approved and ran before.
	Note string `json:"note,omitempty"`
	// Late is set on the approval Approve or Deny returns when the
	// decision's write answered an error (it timed out, or conflicted)
	// and the store was found to hold it all the same: the decision
	// stands. Never stored.
	Late bool `json:"-"`
	// Frames are the frames of the calls answered pending for it (16 hex
	// digits each, the asking call's first), and RanIn the frame of the
	// call that ran under it once used: the graph shows what became of a
	// waiting frame once its approval is decided, expired or used. Up
	// to 16, then one of each other root request, up to 256 (keepsFrame).
	Frames []string `json:"frames,omitempty"`
	RanIn  string   `json:"ran_in,omitempty"`
	// FrameRoots is the root request of each of Frames, in their order: a
	// call repeated with its idempotency key waits in a request of its
	// own. An approval stored before it was kept has none: its frames are
	// Request's (FrameRoot).
	FrameRoots []string `json:"frame_roots,omitempty"`
}

// FrameRoot returns the root request of a.Frames[i]: the request whose
// graph (or a sub-request's) shows it.
func (a *Approval) FrameRoot(i int) string {
	if i < len(a.FrameRoots) && a.FrameRoots[i] != "" {
		return a.FrameRoots[i]
	}
	return a.Request
}

// addFrame adds frame f, of the root request root, to a's waiting frames.
func (a *Approval) addFrame(f, root string) {
	for len(a.FrameRoots) < len(a.Frames) { // kept before FrameRoots was
		a.FrameRoots = append(a.FrameRoots, a.Request)
	}
	a.Frames, a.FrameRoots = append(a.Frames, f), append(a.FrameRoots, root)
}

// maxFrames and maxRoots bound Approval.Frames: an agent that repeats a
// pending call without end lists its first maxFrames calls, and then the
// first call of each other root request, up to maxRoots in all. They are
// what the running gateway settles, with every other waiting frame of
// those requests (its error names the approval, WaitsFor); a graph read
// back from the store settles every waiting frame by the approval its
// error names, listed or not. Before, the frames past the 16th stayed
// awaiting_approval.
const (
	maxFrames = 16
	maxRoots  = 256
)

// keepsFrame reports whether a's waiting frames take frame f of the root
// request root (maxFrames, maxRoots).
func (a *Approval) keepsFrame(f, root string) bool {
	switch {
	case f == "" || slices.Contains(a.Frames, f):
		return false
	case len(a.Frames) < maxFrames:
		return true
	case len(a.Frames) >= maxRoots:
		return false
	}
	for i := range a.Frames {
		if a.FrameRoot(i) == root {
			return false // a frame of its request is kept: the others there are found by it
		}
	}
	return true
}

// Settled is what becomes of a frame that waited for a (its call
// answered pending) after the action on it: the state it ends in, its
// error and summary, and whether the action ends it at all (denied,
// expired and used do; requested, voted and approved leave it waiting for
// the decision or the repeated call).
func Settled(a *Approval, action, by string) (reach.State, *reach.Error, string, bool) {
	switch action {
	case "used":
		s := "approved (" + a.ID + "); the repeated call ran"
		if a.RanIn != "" {
			s += " as frame " + a.RanIn
		}
		return reach.Completed, nil, s, true
	case "denied":
		// Who denied it and why, as the denial keeps them (the reason
		// masked when it was given), so that the frame settled from the
		// store after a restart reads as the running gateway's did.
		reason := ""
		if d := a.Denial; d != nil {
			by, reason = cmp.Or(d.By, by), d.Reason
		}
		msg := "The approval " + a.ID + " of this call was denied"
		if by != "" {
			msg += " by " + by
		}
		if reason != "" {
			msg += ": " + strings.TrimRight(reason, ". ")
		}
		return reach.Refused, &reach.Error{Guard: "authorize", Type: reach.TypeApproval, Code: "approval_denied",
			Message:    msg + ".",
			Suggestion: "Do not make this call again; tell the user it was denied, or reach the goal another way."}, "denied (" + a.ID + ")", true
	case "expired":
		return reach.Cancelled, &reach.Error{Guard: "authorize", Type: reach.TypeApproval, Code: "approval_expired",
				Message:    fmt.Sprintf("The approval %s of this call expired: nobody decided, or the approved call was not repeated, in time.", a.ID),
				Suggestion: "If the call is still needed, make it again: it asks for approval anew."},
			"expired (" + a.ID + ")", true
	}
	return 0, nil, "", false
}

// pendingID finds the approval a pending answer names (pendingError).
var pendingID = regexp.MustCompile(`needs approval before it runs: approval (apr_[0-9a-f]{32}) waits`)

// WaitsFor returns the id of the approval that e, a call's answer
// pending (code approval_pending, as a frame's event keeps it), names, or
// "": what a frame read back after a restart waited for.
func WaitsFor(e *reach.Error) string {
	if e == nil || e.Code != "approval_pending" || e.Type != reach.TypeApproval {
		return ""
	}
	if m := pendingID.FindStringSubmatch(e.Message); m != nil {
		return m[1]
	}
	return ""
}

// frameOf is the id of c's frame, or "".
func frameOf(c *reach.Call) string {
	if f := c.Frame(); f != nil && f.ID != 0 {
		return f.ID.String()
	}
	return ""
}

// Prompt renders the approval for a human.
func (a *Approval) Prompt() string {
	var b strings.Builder
	who := "the user " + a.Principal
	if a.Requires == UserAndReviewer {
		who += " and a reviewer"
	}
	fmt.Fprintf(&b, "Approval %s (%s): needs the approval of %s; expires %s\n", a.ID, a.Status, who, a.Expires.UTC().Format("2006-01-02 15:04:05 UTC"))
	fmt.Fprintf(&b, "Operation: %s\n", a.Operation)
	fmt.Fprintf(&b, "Target:    %s %s\n", a.Tool, a.Arguments)
	fmt.Fprintf(&b, "Impact:    %s\n", a.Impact())
	fmt.Fprintf(&b, "Asked by:  %s (agent %s, request %s", a.Principal, cmp.Or(a.Agent, "?"), a.Request)
	if a.Scene != "" {
		fmt.Fprintf(&b, ", scene %s", a.Scene)
	}
	b.WriteString(")\n")
	if a.Why != "" {
		fmt.Fprintf(&b, "Why:       %s\n", a.Why)
	}
	for _, v := range a.Votes {
		fmt.Fprintf(&b, "Approved by %s as %s at %s%s\n", v.By, v.As, v.At.UTC().Format(time.TimeOnly), reasonSuffix(v.Reason))
	}
	if a.Denial != nil {
		fmt.Fprintf(&b, "Denied by %s at %s%s\n", a.Denial.By, a.Denial.At.UTC().Format(time.TimeOnly), reasonSuffix(a.Denial.Reason))
	}
	if a.Note != "" {
		fmt.Fprintf(&b, "Note:      %s\n", a.Note)
	}
	return b.String()
}

// Impact says in one line what the call would change: the access level,
// the entities written, and whether it can be undone.
func (a *Approval) Impact() string {
	impact := string(a.Access)
	if len(a.Writes) > 0 {
		impact += "; writes " + strings.Join(a.Writes, ", ")
	}
	if a.Undo != "" {
		impact += "; can be undone (" + a.Undo + ")"
	} else if a.Access != reach.Read {
		impact += "; cannot be undone"
	}
	return impact
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

// Event is what the audit callback is told about every action.
type Event struct {
	Time time.Time
	// Action is "requested", "voted" (one of two approvals), "approved",
	// "denied", "expired" or "used" (the approved call let through).
	Action   string
	By       string // who acted, for voted, approved and denied
	Reason   string
	Approval Approval // the approval after the action
	// Elsewhere says that another instance sharing the store took the
	// action (read from the store, it audited it): the frames that waited
	// for it here end with it, and nothing is audited again.
	Elsewhere bool
	// Again says that the action is audited again: its change was stored
	// and its mark (storedApproval.Unaudited) not cleared, by this
	// instance's earlier life (Load) or by a dead instance (Adopt). The
	// audit log may hold its event already (a kill after the event and
	// before the mark's clearing): Options.Audited says whether it does.
	Again bool

	version int64 // the approval's version in the store after the action
}

// Once is the key of e's action, the same whoever audits it (the
// instance that took it, at its restart, or a survivor that took it
// over): an approval takes each action at most once under each
// requirement (Options.Audited). An audit log that keeps such keys
// unique (audit.Event.Once) appends the action once, however many
// instances audit it: a revived one paused between its claim and its
// audit, and the survivor that took the action over meanwhile.
func (e *Event) Once() string {
	return store.ApprovalOnce(e.Approval.ID, e.Action, e.Approval.Requires)
}

// Options configure a Queue. A nil *Options means all defaults.
type Options struct {
	// Tool describes a tool for the impact shown (e.g. Runtime.Tool); if
	// nil, only what the call itself says is shown.
	Tool func(name string) (reach.Tool, bool)
	// Requires says who must approve a call: "user" or "user+reviewer"
	// (e.g. the policy engine's Requirement). If nil or it answers "",
	// high_risk calls need the user and a reviewer, others the user.
	Requires func(ctx context.Context, c *reach.Call) string
	// TTL is how long an approval waits for a decision, and an approved
	// call for its retry; if zero, 15m.
	TTL time.Duration
	// Wait is how long a call is held for a decision before it is answered
	// pending; zero answers pending at once.
	Wait time.Duration
	// ReviewerRole is the role of reviewers; if empty, "reviewer".
	ReviewerRole string
	// Redactor, if not nil, masks what the queue shows and records: the
	// arguments, the caller's reason, the entities written, and the reasons
	// given with votes and denials.
	Redactor reach.Redactor
	// Audit, if not nil, is told about every action. It is called without
	// locks held and must not block for long.
	Audit func(ctx context.Context, e Event)
	// Audited, if not nil, reports, for each of es, actions audited again
	// (Event.Again) delivered together, whether the audit log holds its
	// event already: then Audit is not told it again, and its mark is
	// cleared. They come in one call so that a request's log is read once
	// for all of its actions (a restart, an adoption). An action's event is
	// found by its approval, its action and the approval's requirement
	// (Approval.Requires): an approval takes each action at most once
	// under each requirement (one vote, one decision, one use, one
	// expiry; asked again only when its requirement grows to
	// user+reviewer).
	Audited func(ctx context.Context, es []Event) []bool
	// MaxKept is how many decided approvals are kept for listing; if zero, 1000.
	MaxKept int
	// MaxPending is how many approvals one principal, in its tenant, may
	// have waiting for a decision at once; a call that would ask for one
	// more is refused (too_many_approvals) and files none. If zero,
	// DefaultMaxPending.
	MaxPending int
	// Store, if not nil, keeps the approvals: every change is durable
	// before it is answered, and Load reads them back.
	Store store.Approvals
	// Shared says that other gateway instances keep their approvals in
	// Store too: the queue then reads the store before it answers (an
	// approval asked on one instance is decided on another, and the held
	// or repeated call runs once, on either), and Refresh wakes a held
	// call when another instance decided its approval.
	Shared bool
	// Instance names this gateway instance among those sharing Store
	// (Shared): Load audits again only the unaudited changes (a kill came
	// between the change and its audit event) that an earlier life of
	// this instance made. Empty for a store of one instance.
	Instance string
	// Logger; if nil, logs are discarded.
	Logger *slog.Logger
}

// Queue holds approvals. It is safe for concurrent use.
type Queue struct {
	o Options

	mu    sync.Mutex
	byID  map[string]*record
	byKey map[string]*record // the approval in force for each call key
	order []*record          // creation order
	// outbox holds the events made (under mu) and not yet delivered:
	// emit delivers them in the order they were made, whichever call
	// made them (an approval's "approved" before the waiting call's
	// "used" it woke).
	outbox []Event
	emitMu sync.Mutex // one delivery at a time

	release     chan struct{} // closed by Release: no call waits for a decision any more
	releaseOnce sync.Once
}

// Release ends every wait for a decision (Options.Wait), now and from now
// on: each held call is answered as pending at once, its approval kept.
// A gateway that shuts down calls it, so that a call held for a human is
// answered (approve it, then call again) before the server closes its
// connection, not cut off with no answer.
func (q *Queue) Release() { q.releaseOnce.Do(func() { close(q.release) }) }

type record struct {
	Approval
	key     string        // keys.req of its call
	alt     string        // keys.idem of its call, if the caller gave an idempotency key
	version int64         // its version in the store (Options.Store)
	changed chan struct{} // closed and replaced on every change
	// unaudited: its last change is written, its audit event not yet
	// (storedApproval.Unaudited); instance wrote it.
	unaudited bool
	instance  string
	// more are the waiting frames past those Frames lists (maxRoots),
	// one of each other root request, kept in memory only (moreRoots
	// their roots): the events of its decision, expiry or use name them
	// too (event), so that the running gateway settles them; a graph
	// read back from the store settles them by the approval their error
	// names.
	more      []waiting
	moreRoots map[string]bool
}

// waiting is a waiting frame and its root request.
type waiting struct{ frame, root string }

// keepMore keeps frame f of the root request root among rec's waiting
// frames past maxRoots (more), if none of root's is kept yet; q.mu is
// held.
func (rec *record) keepMore(f, root string) {
	if f == "" || len(rec.Frames) < maxRoots || rec.moreRoots[root] {
		return
	}
	for i := range rec.Frames {
		if rec.FrameRoot(i) == root || rec.Frames[i] == f {
			return
		}
	}
	if rec.moreRoots == nil {
		rec.moreRoots = map[string]bool{}
	}
	rec.moreRoots[root] = true
	rec.more = append(rec.more, waiting{f, root})
}

// New returns a Queue with the options (nil for defaults).
func New(opts *Options) *Queue {
	q := &Queue{byID: map[string]*record{}, byKey: map[string]*record{}, release: make(chan struct{})}
	if opts != nil {
		q.o = *opts
	}
	q.o.TTL = cmp.Or(q.o.TTL, 15*time.Minute)
	q.o.ReviewerRole = cmp.Or(q.o.ReviewerRole, "reviewer")
	q.o.MaxKept = cmp.Or(q.o.MaxKept, 1000)
	q.o.MaxPending = cmp.Or(q.o.MaxPending, DefaultMaxPending)
	if q.o.Logger == nil {
		q.o.Logger = slog.New(slog.DiscardHandler)
	}
	return q
}

// Approver returns the queue as the runtime's reach.Approver. Give the
// runtime ApprovalKey too (reach.Options.ApprovalKey), so that an approved
// call runs once under its approval and a retry gets its result.
func (q *Queue) Approver() reach.Approver { return gate{q} }

type gate struct{ q *Queue }

// Approve implements reach.Approver: Permit for an approved call (once),
// Deny for a denied one, NeedsApproval (pending) otherwise.
func (g gate) Approve(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	q := g.q
	k := callKeys(c)
	var deadline <-chan time.Time
	if q.o.Wait > 0 {
		t := time.NewTimer(q.o.Wait)
		defer t.Stop()
		deadline = t.C
	}
	reqs := q.requires(ctx, c) // who must approve, asked outside the lock
	// A queue of its own reads an approval again once, when its write
	// conflicts: a write of its own that timed out and was applied later
	// (reread). A shared one reads it again each time another instance
	// changed it.
	rereads := 0
	again := func(err error) bool {
		return errors.Is(err, store.ErrConflict) && (q.o.Shared || rereads == 0)
	}
	for {
		var events []Event
		q.sync(ctx, k)
		elsewhere := q.pendingShared(ctx, c, k)
		q.mu.Lock()
		now := time.Now()
		events = q.expire(now, events)
		rec := q.inForce(k)
		if rec == nil && q.usedRecently(k, now) {
			// The agent retries a call that already ran under its approval:
			// let it through to the runtime, whose idempotency record (keyed
			// by the approval) returns the first run's result without
			// running it again.
			q.mu.Unlock()
			q.emit(ctx, events)
			return reach.Permit, nil
		}
		if rec == nil {
			if n := max(q.pendingOf(c), elsewhere); n >= q.o.MaxPending {
				q.mu.Unlock()
				q.emit(ctx, events)
				return reach.Deny, tooManyError(c, n)
			}
			rec = q.create(c, k, reqs, now)
			if err := q.persist(rec); err != nil {
				q.forget(rec)
				q.mu.Unlock()
				q.emit(ctx, events)
				q.o.Logger.Error("approval not recorded", "tool", c.Tool, "request", rec.Request, "err", err)
				return reach.Deny, &reach.Error{Type: reach.TypeTransient, Code: "approval_store",
					Message:    fmt.Sprintf("%s needs approval, and the approval could not be recorded (the store failed; the gateway's log says why).", c.Tool),
					Suggestion: "Nothing ran. Try again in a moment."}
			}
			events = append(events, q.event(now, "requested", "", "", rec))
		} else if reqs == UserAndReviewer && rec.Requires == User && (rec.Status == Pending || rec.Status == Approved) {
			// The policies in force ask more than they did when it was
			// asked (a reload made them stricter): it waits for a
			// reviewer too, the user's vote kept. Before, the user's
			// approval alone let the call through.
			prev := rec.Approval
			prev.Votes = slices.Clone(rec.Votes)
			rec.Requires, rec.Status = UserAndReviewer, Pending
			if err := q.persist(rec); err != nil {
				rec.Approval = prev
				if again(err) {
					id := rec.ID
					q.mu.Unlock()
					q.emit(ctx, events)
					rereads++
					q.reread(id)
					continue
				}
				q.mu.Unlock()
				q.emit(ctx, events)
				q.o.Logger.Error("approval not recorded", "tool", c.Tool, "request", rec.Request, "err", err)
				return reach.Deny, &reach.Error{Type: reach.TypeTransient, Code: "approval_store",
					Message:    fmt.Sprintf("%s needs a reviewer's approval too, and the approval could not be recorded (the store failed; the gateway's log says why).", c.Tool),
					Suggestion: "Nothing ran. Try again in a moment."}
			}
			rec.notify()
			events = append(events, q.event(now, "requested", "", "", rec))
		}
		switch rec.Status {
		case Approved:
			rec.Status, rec.RanIn = Used, frameOf(c)
			q.unforce(rec)
			if err := q.persist(rec); err != nil {
				if again(err) {
					// Another instance changed it (used it, say), or a
					// write of this one applied late: read it again, and
					// answer as it stands.
					rec.Status, rec.RanIn = Approved, ""
					q.enforce(rec)
					id := rec.ID // read under the lock: a merge from the store may change rec once it is let go
					q.mu.Unlock()
					q.emit(ctx, events)
					rereads++
					q.reread(id)
					continue
				}
				// It runs under the approval's idempotency key: a retry
				// after a restart that finds it still approved replays it.
				q.o.Logger.Error("approval use not recorded", "approval", rec.ID, "err", err)
			}
			rec.notify()
			events = append(events, q.event(now, "used", "", "", rec))
			q.mu.Unlock()
			q.emit(ctx, events)
			return reach.Permit, nil
		case Denied:
			e := deniedError(&rec.Approval)
			q.mu.Unlock()
			q.emit(ctx, events)
			return reach.Deny, e
		}
		if f, root := frameOf(c), rootOf(c.Request()).ID(); rec.Status == Pending && rec.keepsFrame(f, root) {
			// A repeated call answered pending waits too: its frame is
			// settled with the first's. Not kept if it cannot be stored.
			prevFrames, prevRoots := rec.Frames, rec.FrameRoots
			rec.addFrame(f, root)
			if err := q.write(rec, rec.unaudited, rec.instance); err != nil { // the change's mark kept
				rec.Frames, rec.FrameRoots = prevFrames, prevRoots
				if !q.o.Shared && again(err) {
					// A write of its own applied late (a decision, say):
					// read it again, and answer as it stands.
					id := rec.ID
					q.mu.Unlock()
					q.emit(ctx, events)
					rereads++
					q.reread(id)
					continue
				}
				q.o.Logger.Warn("approval's waiting frame not recorded", "approval", rec.ID, "err", err)
			}
		} else if rec.Status == Pending {
			rec.keepMore(f, root) // past the frames the store lists
		}
		snap, keyed := rec.Approval, k.idem != "" && rec.alt == k.idem
		ch, until := rec.changed, time.Until(rec.Expires)
		q.mu.Unlock()
		q.emit(ctx, events)
		if deadline == nil {
			return reach.NeedsApproval, pendingError(&snap, keyed)
		}
		expiry := time.NewTimer(until)
		var poll <-chan time.Time
		if q.o.Shared {
			// A decision on another instance wakes it (Refresh); reading
			// the store now and then is for a wake-up that was missed.
			t := time.NewTimer(time.Second)
			defer t.Stop()
			poll = t.C
		}
		select {
		case <-ch:
		case <-poll:
		case <-expiry.C:
		case <-deadline:
			expiry.Stop()
			return reach.NeedsApproval, pendingError(&snap, keyed)
		case <-ctx.Done():
			expiry.Stop()
			return reach.NeedsApproval, pendingError(&snap, keyed)
		case <-q.release:
			expiry.Stop()
			return reach.NeedsApproval, pendingError(&snap, keyed)
		}
		expiry.Stop()
	}
}

// Asked implements reach.ApprovalFinder: whether c was asked for approval
// before and its approval stands (pending, approved, or used and not yet
// expired), read from the store first when instances share it. It changes
// nothing: no approval is made, used or expired by it.
func (g gate) Asked(ctx context.Context, c *reach.Call) bool {
	q := g.q
	k := callKeys(c)
	q.sync(ctx, k)
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	if rec := q.inForce(k); rec != nil && (rec.Status == Pending || rec.Status == Approved) {
		return now.Before(rec.Expires)
	}
	return q.usedRecently(k, now)
}

// DefaultMaxPending is Options.MaxPending's default. Nothing bounded the
// approvals one principal filed: each pending one is kept (its arguments
// and reason, up to a request body each) and listed to the user and every
// reviewer of the tenant until its TTL, and one principal filed 2,000 of
// 50 KB in 53 s, burying everyone else's in the reviewers' inbox.
const DefaultMaxPending = 100

// pendingOf counts the approvals of c's principal, in its tenant, that
// wait for a decision. q.mu is held.
func (q *Queue) pendingOf(c *reach.Call) int {
	r := c.Request()
	n := 0
	for _, rec := range q.order {
		if rec.Status == Pending && rec.Principal == r.Principal() && rec.Tenant == r.Tenant() {
			n++
		}
	}
	return n
}

// pendingLister is a store that finds the pending approvals whose data
// holds a text (postgres.Store): what bounds one principal's pending
// approvals across the instances that share it.
type pendingLister interface {
	PendingApprovals(ctx context.Context, text string, now time.Time, limit int) ([]*store.ApprovalRecord, error)
}

// pendingShared counts, when other instances share the store, the
// approvals of c's principal, in its tenant, that wait for a decision
// there (those asked on any instance), when the call k has none in
// force; else, or when the store cannot say, 0 (pendingOf counts this
// instance's). It reads the store without q.mu held. Two instances that
// ask at once may both pass the bound by one each.
func (q *Queue) pendingShared(ctx context.Context, c *reach.Call, k keys) int {
	pl, ok := q.o.Store.(pendingLister)
	if !q.o.Shared || !ok {
		return 0
	}
	q.mu.Lock()
	inForce := q.inForce(k) != nil
	q.mu.Unlock()
	if inForce {
		return 0
	}
	r := c.Request()
	// The principal and its tenant as the stored data spells them (the two
	// fields next to each other, as Approval has them): each row found is
	// read to count only those of this principal and tenant. The principal
	// alone found the oldest of every tenant's principals of that name (an
	// admin in each), up to the limit, and missed this one's.
	b, _ := json.Marshal(struct {
		Principal string `json:"principal"`
		Tenant    string `json:"tenant,omitempty"`
	}{r.Principal(), r.Tenant()})
	b = b[1 : len(b)-1]
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer cancel()
	now := time.Now()
	ars, err := pl.PendingApprovals(ctx, string(b), now, 8*q.o.MaxPending)
	if err != nil {
		q.o.Logger.Warn("approvals: counting a principal's pending approvals in the store", "err", err)
		return 0
	}
	n := 0
	for _, ar := range ars {
		sa, err := decodeStored(ar)
		if err == nil && sa.Status == Pending && sa.Principal == r.Principal() && sa.Tenant == r.Tenant() && sa.Expires.After(now) {
			n++
		}
	}
	return n
}

func tooManyError(c *reach.Call, n int) *reach.Error {
	r := c.Request()
	return &reach.Error{Type: reach.TypeApproval, Code: "too_many_approvals",
		Message: fmt.Sprintf("%s needs approval, and %s has %d approvals waiting for a decision, the most one principal may have: none was asked for this call.",
			c.Tool, r.Principal(), n),
		Suggestion: "Nothing ran. Tell the user that approvals wait for them (reach approvals list, or the UI's inbox); " +
			"call it again once they have decided some, or once those expire."}
}

// usedRecently reports whether an approval for the call k identifies was
// used and has not yet expired. q.mu must be held.
func (q *Queue) usedRecently(k keys, now time.Time) bool {
	rec := q.lastUsed(k)
	return rec != nil && now.Before(rec.Expires)
}

// lastUsed returns the approval of the call k identifies used most
// recently (the newest: q.order is in time order), or nil. q.mu is held.
func (q *Queue) lastUsed(k keys) *record {
	for _, rec := range slices.Backward(q.order) {
		if k.of(rec) && rec.Status == Used {
			return rec
		}
	}
	return nil
}

func (q *Queue) requires(ctx context.Context, c *reach.Call) string {
	if q.o.Requires != nil {
		switch r := q.o.Requires(ctx, c); r {
		case User, UserAndReviewer:
			return r
		}
	}
	if c.Access() == reach.HighRisk {
		return UserAndReviewer
	}
	return User
}

// keys identify a call across retries: req by its root request, idem by
// its caller's idempotency key, when it gave one (then a retry in another
// request, after a restart say, finds the approval); both with its tool
// and canonical arguments, within the root request's principal and tenant
// (so that another principal reusing the id of an ended request, or a
// key, never meets its approvals). They are hashes: the arguments are not
// kept in them.
type keys struct{ req, idem string }

func callKeys(c *reach.Call) keys {
	root := rootOf(c.Request())
	lead, principal, tenant := idempotency.Owner(root.Principal(), root.Tenant())
	hash := func(of string) string {
		h := sha256.New()
		h.Write([]byte(lead))
		for _, p := range []string{principal, tenant, of, c.Tool} {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		h.Write(c.Args())
		return hex.EncodeToString(h.Sum(nil))
	}
	k := keys{req: hash("request:" + root.ID())}
	if c.IdempotencyKey != "" {
		k.idem = hash("key:" + c.IdempotencyKey)
	}
	return k
}

// of reports whether rec is an approval of the call k identifies.
func (k keys) of(rec *record) bool { return rec.key == k.req || k.idem != "" && rec.alt == k.idem }

// inForce returns the approval in force for the call k identifies, or
// nil; q.mu is held.
func (q *Queue) inForce(k keys) *record {
	if rec := q.byKey[k.req]; rec != nil {
		return rec
	}
	if k.idem != "" {
		return q.byKey[k.idem]
	}
	return nil
}

// enforce makes rec the approval in force for its call; q.mu is held.
func (q *Queue) enforce(rec *record) {
	q.byKey[rec.key] = rec
	if rec.alt != "" {
		q.byKey[rec.alt] = rec
	}
}

// unforce ends rec's being in force for its call; q.mu is held.
func (q *Queue) unforce(rec *record) {
	for _, k := range []string{rec.key, rec.alt} {
		if k != "" && q.byKey[k] == rec {
			delete(q.byKey, k)
		}
	}
}

func rootOf(r *reach.Request) *reach.Request {
	for r.Parent() != nil {
		r = r.Parent()
	}
	return r
}

// ApprovalKey returns the id of the approval that let c through (the one
// used most recently for its key), or "". With it a runtime can run the
// approved call under an idempotency key that names the approval.
func (q *Queue) ApprovalKey(c *reach.Call) string {
	k := callKeys(c)
	q.mu.Lock()
	defer q.mu.Unlock()
	if rec := q.lastUsed(k); rec != nil {
		return rec.ID
	}
	return ""
}

// redactString masks the secrets in s (the entities filled from the
// arguments, the agent's reason, a voter's reason), as the arguments are.
func (q *Queue) redactString(s string) string {
	if q.o.Redactor == nil || s == "" {
		return s
	}
	return q.o.Redactor.RedactString(s)
}

// create records a new pending approval; q.mu is held.
func (q *Queue) create(c *reach.Call, k keys, reqs string, now time.Time) *record {
	r := c.Request()
	args := bytes.Clone(c.Args())
	if q.o.Redactor != nil {
		args = q.o.Redactor.Redact(args)
	}
	// In time order (package ids): the store's approvals take a new one at
	// the end of their key; its 80 random bits keep it unguessable.
	rec := &record{key: k.req, alt: k.idem, changed: make(chan struct{}), Approval: Approval{
		ID: ids.Text("apr_"), Status: Pending, Requires: reqs,
		Operation: "call " + c.Tool, Tool: c.Tool, Arguments: args, Access: c.Access(),
		Principal: r.Principal(), Tenant: r.Tenant(), Scene: r.Scene(), Agent: r.Agent(),
		Request: r.ID(), RootRequest: rootOf(r).ID(), Why: q.redactString(c.Why),
		Created: now, Expires: now.Add(q.o.TTL),
	}}
	if f := frameOf(c); f != "" {
		rec.addFrame(f, rec.RootRequest)
	}
	if q.o.Tool != nil {
		if t, ok := q.o.Tool(c.Tool); ok {
			if d, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n"); d != "" {
				rec.Operation = d
			}
			for _, w := range t.Writes {
				rec.Writes = append(rec.Writes, q.redactString(fill(w, c.Args())))
			}
			if t.Undo != nil {
				rec.Undo = t.Undo.Tool
			}
		}
	}
	if old := q.lastUsed(k); old != nil {
		rec.Note = fmt.Sprintf("an identical call was approved (%s) and let through before; this is a new request to run it again", old.ID)
	}
	q.byID[rec.ID] = rec
	q.enforce(rec)
	q.order = append(q.order, rec)
	q.prune()
	return rec
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.\-]+)\}`)

// fill replaces {field} in an entity template by the top-level argument.
func fill(tmpl string, args []byte) string {
	var m map[string]json.RawMessage
	json.Unmarshal(args, &m)
	return placeholder.ReplaceAllStringFunc(tmpl, func(ph string) string {
		v, ok := m[ph[1:len(ph)-1]]
		if !ok {
			return "?"
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return string(v)
	})
}

// prune forgets the oldest decided approvals beyond MaxKept, but for
// this instance's unaudited ones (an old one a restart read, say): kept
// until audited clears their mark, which it finds them by. q.mu is held.
func (q *Queue) prune() {
	decided := 0
	for _, r := range q.order {
		if q.byKey[r.key] != r && !q.marked(r) {
			decided++
		}
	}
	if decided <= q.o.MaxKept {
		return
	}
	keep := q.order[:0]
	for _, r := range q.order {
		if decided > q.o.MaxKept && q.byKey[r.key] != r && !q.marked(r) {
			decided--
			delete(q.byID, r.ID)
			continue
		}
		keep = append(keep, r)
	}
	clear(q.order[len(keep):])
	q.order = keep
}

// marked reports whether rec is a change of this instance's not audited
// yet; q.mu is held.
func (q *Queue) marked(rec *record) bool { return rec.unaudited && rec.instance == q.o.Instance }

// expire ends approvals past their time; q.mu is held. Those no longer in
// force for their call too: of two asked at once on two instances, the
// older one, read from the store, was never in force here, so it stayed
// pending past its time, listed in the inbox and open to a vote.
func (q *Queue) expire(now time.Time, events []Event) []Event {
	for key, rec := range q.byKey {
		if !now.Before(rec.Expires) {
			delete(q.byKey, key)
		}
	}
	for _, rec := range q.order {
		if now.Before(rec.Expires) {
			continue
		}
		if rec.Status == Pending || rec.Status == Approved {
			rec.Status = Expired
			if err := q.persist(rec); err != nil {
				q.o.Logger.Error("approval expiry not recorded", "approval", rec.ID, "err", err)
			}
			rec.notify()
			events = append(events, q.event(now, "expired", "", "", rec))
		}
	}
	return events
}

// EndWithRequests expires the approvals, pending or approved and not yet
// used, of calls made in the root requests ids that can no longer go on
// (a restart interrupted them, or they were stopped) and that carry no
// idempotency key of their caller's: nothing can find them any more (a
// call is matched by its request, or by its key, and no call runs in such
// a request again), so a human deciding one would approve a call that
// never runs. why says what happened to the request; each approval's note
// says it and what comes next. An approval with a key stays: the agent's
// call in a new request, with the same key, finds it. It returns how many
// it ended.
//
// On a store several instances share, it reads the live approvals first:
// those of a dead instance's requests that this one never read (their
// wake-up missed) and the newer versions of those it did (a vote cast
// elsewhere); one changed elsewhere meanwhile is read again and ended as
// it stands.
func (q *Queue) EndWithRequests(ctx context.Context, ids []string, why string) int {
	if len(ids) == 0 {
		return 0
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	q.syncLive(ctx)
	n := 0
	for range 3 {
		ended, changed := q.endWith(ctx, gone, why)
		n += ended
		if len(changed) == 0 {
			break
		}
		for _, id := range changed {
			q.syncID(ctx, id)
		}
	}
	return n
}

// endWith expires the approvals EndWithRequests ends, as the queue has
// them; it returns how many, and the ids of those another instance
// changed in the store since the queue read them (left as they were).
func (q *Queue) endWith(ctx context.Context, gone map[string]bool, why string) (int, []string) {
	now := time.Now()
	q.mu.Lock()
	var events []Event
	var changed []string
	for key, rec := range q.byKey {
		if rec.alt != "" || !gone[rec.RootRequest] || (rec.Status != Pending && rec.Status != Approved) {
			continue
		}
		was := rec.Approval
		rec.Status = Expired
		rec.Note = fmt.Sprintf("Request %s %s: no call runs in it again, so this one cannot. "+
			"If the agent makes the call again in a new request, it asks for approval again.", rec.RootRequest, why)
		if err := q.persist(rec); err != nil {
			if q.o.Shared && errors.Is(err, store.ErrConflict) {
				rec.Approval = was
				changed = append(changed, rec.ID)
				continue
			}
			q.o.Logger.Error("approval's end not recorded", "approval", rec.ID, "err", err)
		}
		delete(q.byKey, key)
		rec.notify()
		events = append(events, q.event(now, "expired", "", rec.Note, rec))
	}
	q.mu.Unlock()
	q.emit(ctx, events)
	return len(events), changed
}

func (r *record) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// event makes an event of rec's action and queues it for delivery (the
// outbox). q.mu is held.
func (q *Queue) event(now time.Time, action, by, reason string, rec *record) Event {
	a := rec.Approval
	a.Votes = slices.Clone(a.Votes)
	if len(rec.more) > 0 {
		a.Frames, a.FrameRoots = slices.Clone(a.Frames), slices.Clone(a.FrameRoots)
		for _, w := range rec.more {
			a.addFrame(w.frame, w.root)
		}
		if settledAction(rec.Status) != "" { // they end with this event: none waits any more
			rec.more, rec.moreRoots = nil, nil
		}
	}
	e := Event{Time: now, Action: action, By: by, Reason: reason, Approval: a, version: rec.version}
	q.outbox = append(q.outbox, e)
	return e
}

// emit logs and audits the events made so far, in the order they were
// made: those of the caller's (made is what it made; nil or empty when
// nothing) and of any other call that made its own before and has not
// delivered them yet. Called with q.mu not held.
func (q *Queue) emit(ctx context.Context, made []Event) {
	if len(made) == 0 {
		return // what others made, they deliver
	}
	q.emitMu.Lock()
	defer q.emitMu.Unlock()
	q.mu.Lock()
	events := q.outbox
	q.outbox = nil
	q.mu.Unlock()
	held := q.heldAlready(ctx, events)
	for i, e := range events {
		q.o.Logger.Info("approval "+e.Action, "approval", e.Approval.ID, "tool", e.Approval.Tool,
			"principal", e.Approval.Principal, "by", e.By, "request", e.Approval.Request)
		if q.o.Audit == nil {
			continue
		}
		if held[i] {
			q.audited(&e) // its event was appended before a kill: the mark alone was left
			continue
		}
		if !q.claimed(ctx, &e) {
			continue // a survivor took it over, and audits it
		}
		if afterClaim != nil {
			afterClaim(&e)
		}
		if !e.Elsewhere && !e.Again && q.o.Shared && q.o.Instance != "" {
			// Claimed, not audited yet: an instance paused here while a
			// survivor takes the action over audits it after the
			// survivor did, and the audit log appends it once
			// (Event.Once).
			crashpoint.Reached("approval.claimed")
		}
		q.o.Audit(context.WithoutCancel(ctx), e)
		if !e.Elsewhere {
			// The event appended, the mark not cleared: the restart
			// (or a survivor) finds the event (Options.Audited).
			crashpoint.Reached("approval.audited")
		}
		q.audited(&e)
	}
}

// claimed reports whether this instance audits e, an action of its own
// (not Elsewhere, not Again). On a store that instances adopting a dead
// one's actions share (Shared, Instance), it claims the action's mark
// first, conditionally on the version it wrote: a survivor that found
// this instance dead meanwhile (paused, cut off, and back) and took the
// action over (Adopt) audits it, and this one, its claim refused, does
// not; a claim made first refuses the survivor's take-over instead. A
// newer change to the approval, or a failed claim, leaves it to audit
// here as before.
func (q *Queue) claimed(ctx context.Context, e *Event) bool {
	if !q.o.Shared || q.o.Instance == "" || q.o.Store == nil || e.Elsewhere || e.Again {
		return true
	}
	q.mu.Lock()
	rec := q.byID[e.Approval.ID]
	if rec == nil || !rec.unaudited || rec.instance != q.o.Instance || rec.version != e.version {
		q.mu.Unlock()
		return true
	}
	// Under q.mu, as every write of the queue's records (a local change
	// made meanwhile would be refused by this claim's version, its frame
	// or expiry lost), and bounded: a store that stops answering holds the
	// queue for syncTimeout at most, then the action is audited all the
	// same.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	err := q.writeCtx(wctx, rec, true, q.o.Instance)
	cancel()
	if err == nil {
		e.version = rec.version // its mark, cleared once audited (audited)
	}
	q.mu.Unlock()
	if err == nil {
		return true
	}
	if !errors.Is(err, store.ErrConflict) {
		// Timed out, or failed: audited all the same, at least once. A
		// survivor that took the action over meanwhile (this instance
		// taken for dead) audits it too; not auditing it here could lose
		// it while this instance lives on.
		q.o.Logger.Warn("approvals: claiming an action to audit it failed; audited all the same", "approval", e.Approval.ID, "err", err)
		return true
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer rcancel()
	ar, err := q.o.Store.GetApproval(rctx, e.Approval.ID)
	if err != nil {
		return true
	}
	sa, err := decodeStored(ar)
	if err != nil || sa.Instance == q.o.Instance || sa.Status != e.Approval.Status || len(sa.Votes) != len(e.Approval.Votes) {
		return true // not taken over: changed since
	}
	// Taken over: the mark is the taker's now, so this instance's record
	// is not kept for it (prune keeps a record only while its own mark
	// waits for its audit).
	q.mu.Lock()
	if rec := q.byID[e.Approval.ID]; rec != nil && rec.version == e.version && rec.instance == q.o.Instance {
		rec.version, rec.unaudited, rec.instance = ar.Version, sa.Unaudited, sa.Instance
	}
	q.mu.Unlock()
	q.o.Logger.Info("approvals: an action was taken over by another instance before it was audited here (this one was taken for dead); its taker audits it",
		"approval", e.Approval.ID, "action", e.Action, "by", sa.Instance)
	return false
}

// afterClaim, set by tests only, is called between an action's claim
// (claimed) and its audit: an instance paused there, or killed.
var afterClaim func(e *Event)

// heldAlready reports, for each of events, whether it is an action audited
// again whose event the audit log holds already (Options.Audited), asked
// once for all of them.
func (q *Queue) heldAlready(ctx context.Context, events []Event) []bool {
	held := make([]bool, len(events))
	if q.o.Audit == nil || q.o.Audited == nil {
		return held
	}
	var again []Event
	var at []int
	for i, e := range events {
		if e.Again {
			again, at = append(again, e), append(at, i)
		}
	}
	if len(again) == 0 {
		return held
	}
	for j, ok := range q.o.Audited(context.WithoutCancel(ctx), again) {
		if j < len(at) {
			held[at[j]] = ok
		}
	}
	return held
}

// pendingError is a pending approval's refusal. Its suggestion says what
// finds the approval again (callKeys): the same arguments in the same root
// request, which it names with the ways a client names it (a client that
// begins a new request each run, one MCP session a run say, otherwise gets
// a new approval each time), or, when the call carried one, the same
// idempotency key in any request (not the key itself: it is the caller's).
func pendingError(a *Approval, keyed bool) *reach.Error {
	who := "the user " + a.Principal
	if a.Requires == UserAndReviewer {
		who += " and a reviewer"
	}
	where := "in request " + a.RootRequest +
		` (the same session, or one that names it: _meta "reach/request", the Reach-Request header, or "request_id")`
	if a.RootRequest == "" { // an approval stored before it kept its root: no request to name
		where = "in the same request"
	}
	again := "call it again with the same arguments " + where
	if keyed {
		again = "call it again with the same arguments and the same idempotency key, in any request, or " + where
	}
	return &reach.Error{Type: reach.TypeApproval, Code: "approval_pending",
		Message: fmt.Sprintf("%s needs approval before it runs: approval %s waits for %s (until %s).",
			a.Tool, a.ID, who, a.Expires.UTC().Format("15:04 UTC")),
		Suggestion: "Tell the user what this call will do and that it waits for approval; after it is approved, " +
			again + ": a call in another request asks for approval again. Do not repeat it before."}
}

func deniedError(a *Approval) *reach.Error {
	msg := fmt.Sprintf("%s was denied (approval %s)", a.Tool, a.ID)
	if d := a.Denial; d != nil {
		msg = fmt.Sprintf("%s denied %s (approval %s)", d.By, a.Tool, a.ID)
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
	}
	return &reach.Error{Type: reach.TypeApproval, Code: "approval_denied", Message: msg + ".",
		Suggestion: "Do not call it again with these arguments; tell the user, or find another way."}
}

// Get returns an approval by id.
func (q *Queue) Get(id string) (Approval, bool) {
	a, ok, _ := q.Find(id)
	return a, ok
}

// ErrUnreadable: the store that instances share could not be read, and
// this instance does not know the approval: it may exist (asked through
// another instance). Try again once the store answers.
var ErrUnreadable = errors.New("approvals' store not read")

// Find is Get, and says when the answer is not known: the approval is
// not one this instance knows, and the store that instances share could
// not be read (an error matching ErrUnreadable). Before, such an approval
// was answered as none, and a human deciding one asked through another
// instance was told there was no such approval while it waited.
func (q *Queue) Find(id string) (Approval, bool, error) {
	serr := q.syncID(context.Background(), id)
	q.mu.Lock()
	events := q.expire(time.Now(), nil)
	rec, ok := q.byID[id]
	var a Approval
	if ok {
		a = rec.Approval
		a.Votes = slices.Clone(a.Votes)
	}
	q.mu.Unlock()
	q.emit(context.Background(), events)
	if !ok && serr != nil {
		return a, false, fmt.Errorf("%w: reading approval %s: %w", ErrUnreadable, id, serr)
	}
	return a, ok, nil
}

// List returns the approvals with the status (all if empty), newest first.
func (q *Queue) List(status Status) []Approval {
	q.syncLive(context.Background())
	q.mu.Lock()
	events := q.expire(time.Now(), nil)
	var out []Approval
	for _, rec := range slices.Backward(q.order) {
		if status == "" || rec.Status == status {
			a := rec.Approval
			a.Votes = slices.Clone(a.Votes)
			out = append(out, a)
		}
	}
	q.mu.Unlock()
	q.emit(context.Background(), events)
	return out
}

// PendingRequests returns the ids of the requests with an approval that
// still waits for a decision (the request that asked it, not its root).
func (q *Queue) PendingRequests() map[string]bool {
	m := map[string]bool{}
	if q == nil {
		return m
	}
	for _, a := range q.List(Pending) {
		m[a.Request] = true
	}
	return m
}

// CanDecide reports whether the actor may see, approve or deny the
// approval: the user who made the request, or a reviewer, of the same
// tenant. A request of no tenant (its principal's key or token names
// none) is decided by reviewers of no tenant only: that request is not
// there for the principals of a tenant (the API, the UI), and a tenant's
// reviewer read its call's arguments in the inbox and gave the reviewer's
// vote that a high-risk call of it waited for.
func (q *Queue) CanDecide(a *Approval, by Actor) bool {
	if by.Tenant != a.Tenant {
		return false
	}
	return asks(a, by) || slices.Contains(by.Roles, q.o.ReviewerRole)
}

// asks reports whether the actor is the user who made the approval's
// request: its principal in its tenant. The same name in another tenant is
// someone else, as it is for sessions, requests and idempotency keys, also
// when the request has no tenant.
func asks(a *Approval, by Actor) bool { return by.Principal == a.Principal && by.Tenant == a.Tenant }

// Approve records the actor's approval. A "user" approval is the user's to
// give; "user+reviewer" needs the user's and then (or first) a different
// principal's with the reviewer role. When the approvals are complete the
// next identical call runs.
func (q *Queue) Approve(id string, by Actor, reason string) (Approval, error) {
	return q.decide(id, by, reason, true)
}

// Deny denies the approval: the user or a reviewer may. Identical calls are
// refused until it would have expired.
func (q *Queue) Deny(id string, by Actor, reason string) (Approval, error) {
	return q.decide(id, by, reason, false)
}

func (q *Queue) decide(id string, by Actor, reason string, approve bool) (Approval, error) {
	reason = q.redactString(reason) // shown in the queue, the denial and the audit log
	var failed []time.Time          // when this decision's writes that failed were made (its vote's or denial's At)
	for try := 1; ; try++ {
		serr := q.syncID(context.Background(), id)
		q.mu.Lock()
		now := time.Now()
		events := q.expire(now, nil)
		a, err := q.decideLocked(now, id, by, reason, approve, &events)
		q.mu.Unlock()
		q.emit(context.Background(), events)
		if errors.Is(err, ErrNotFound) && serr != nil {
			// Not known here, and the shared store not read: it may
			// wait, asked through another instance.
			return a, fmt.Errorf("%w: %w: reading approval %s: %w", ErrNotRecorded, ErrUnreadable, id, serr)
		}
		if errors.Is(err, ErrNotRecorded) {
			failed = append(failed, now)
			err = q.readBack(id, by.Principal, approve, failed, err)
		}
		if err != nil && len(failed) > 0 {
			// A write of this decision failed: if the store holds it (a
			// later try then finds the approval decided, or voted by
			// this principal), the decision stands, and is answered so.
			if got, ok := q.holds(id, by.Principal, approve, failed); ok {
				q.o.Logger.Warn("approvals: a decision's write answered an error, and the store holds it: the decision stands",
					"approval", id, "by", by.Principal, "err", err)
				return got, nil
			}
		}
		if q.o.Shared && errors.Is(err, store.ErrConflict) && try < 5 {
			continue // another instance wrote it meanwhile: decide on what it wrote
		}
		if !q.o.Shared && try < 2 && errors.Is(err, store.ErrConflict) {
			// A queue of its own: a conflict is a write of its own that
			// timed out and was applied later, the store a version
			// ahead (read again above): decide again, once, on what the
			// store has. A timeout not found applied is answered as it
			// came: the write may be applied later still, which the
			// next decision finds.
			continue
		}
		return a, err
	}
}

// readBack reads approval id again, off the queue's lock, after the
// write of a decision by principal failed with err (ErrNotRecorded): the
// store may hold it all the same, applied after its caller's deadline
// (SQLite's writer keeps a write queued when its caller's context ends,
// and applies it) or before a conflict was answered. On a queue of its
// own a row newer than the queue's is a write of its own (reread); a
// shared queue merges it (syncID). A write that timed out is read again
// until it is found or syncTimeout has passed, as its outcome is not
// known until then; one the store answered otherwise (a conflict, a
// failure) is read once. It returns err, saying what was found.
func (q *Queue) readBack(id, principal string, approve bool, tried []time.Time, err error) error {
	end := time.Now().Add(syncTimeout)
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		q.reread(id)
		if q.peekHolds(id, principal, approve, tried) || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		left := time.Until(end)
		if left <= 0 {
			return fmt.Errorf("%w; not found in the store %s after (it may still be applied later)", err, syncTimeout)
		}
		time.Sleep(min(wait, left))
	}
}

// peekHolds reports whether the queue's record of id holds the decision
// by principal whose writes were made at the times tried; q.mu is not
// held.
func (q *Queue) peekHolds(id, principal string, approve bool, tried []time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	rec := q.byID[id]
	return rec != nil && rec.holds(principal, approve, tried)
}

// holds reports whether rec holds the decision by principal whose writes
// were made at the times tried: its vote, or its denial, with that At.
func (rec *record) holds(principal string, approve bool, tried []time.Time) bool {
	mine := func(v *Vote) bool {
		return v != nil && v.By == principal && slices.ContainsFunc(tried, v.At.Equal)
	}
	if approve {
		return slices.ContainsFunc(rec.Votes, func(v Vote) bool { return mine(&v) })
	}
	return mine(rec.Denial)
}

// holds reports whether the store, as the queue last read it, holds the
// decision by principal whose writes were made at the times tried (a
// vote's or a denial's At), with the approval as it stands, marked Late.
// On a shared queue its action, merged from the store, is audited now
// (as reread does for a queue of its own). q.mu is not held.
func (q *Queue) holds(id, principal string, approve bool, tried []time.Time) (Approval, bool) {
	q.mu.Lock()
	rec := q.byID[id]
	if rec == nil || !rec.holds(principal, approve, tried) {
		q.mu.Unlock()
		return Approval{}, false
	}
	var events []Event
	if q.o.Shared && q.marked(rec) {
		events = append(events, q.reaudit(time.Now(), rec, "(audited late: its write timed out and was applied after)"))
	}
	a := rec.Approval
	a.Votes = slices.Clone(rec.Votes)
	a.Late = true
	q.mu.Unlock()
	q.emit(context.Background(), events)
	return a, true
}

func (q *Queue) decideLocked(now time.Time, id string, by Actor, reason string, approve bool, events *[]Event) (Approval, error) {
	rec, ok := q.byID[id]
	if !ok {
		return Approval{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if rec.Status != Pending {
		return rec.Approval, fmt.Errorf("%w: %s is %s", ErrDecided, id, rec.Status)
	}
	if !q.CanDecide(&rec.Approval, by) {
		return rec.Approval, fmt.Errorf("%w: %s waits for %s (the user who asked) or a %s", ErrNotAllowed, id, rec.Principal, q.o.ReviewerRole)
	}
	owner := asks(&rec.Approval, by)
	prev := rec.Approval
	prev.Votes = slices.Clone(rec.Votes)
	action := ""
	if !approve {
		rec.Status = Denied
		rec.Denial = &Vote{By: by.Principal, As: as(owner), At: now, Reason: reason}
		rec.Expires = now.Add(q.o.TTL)
		action = "denied"
	} else {
		if rec.Requires == User && !owner {
			return rec.Approval, fmt.Errorf("%w: %s waits for the approval of %s, the user who asked", ErrNotAllowed, id, rec.Principal)
		}
		role := as(owner)
		if slices.ContainsFunc(rec.Votes, func(v Vote) bool { return v.As == role }) {
			if owner {
				return rec.Approval, fmt.Errorf("%w: %s already approved %s; it waits for a different principal with the %s role",
					ErrAlreadyVoted, by.Principal, id, q.o.ReviewerRole)
			}
			return rec.Approval, fmt.Errorf("%w: a reviewer already approved %s; it waits for %s, the user who asked", ErrAlreadyVoted, id, rec.Principal)
		}
		rec.Votes = append(rec.Votes, Vote{By: by.Principal, As: role, At: now, Reason: reason})
		action = "voted"
		if rec.Requires == User || len(rec.Votes) == 2 {
			rec.Status = Approved
			rec.Expires = now.Add(q.o.TTL) // the window for the call to come again
			action = "approved"
		}
	}
	if err := q.persistRead(rec, false); err != nil { // read back off the lock (decide)
		rec.Approval = prev
		return rec.Approval, fmt.Errorf("%w: the store did not take the decision on %s (%w); it stays %s", ErrNotRecorded, id, err, rec.Status)
	}
	rec.notify()
	*events = append(*events, q.event(now, action, by.Principal, reason, rec))
	return rec.Approval, nil
}

func as(owner bool) string {
	if owner {
		return "user"
	}
	return "reviewer"
}

// storedApproval is an approval as the store keeps it (its Data).
type storedApproval struct {
	Approval
	Key string `json:"key"`
	Alt string `json:"alt_key,omitempty"`
	// Unaudited says that its last change's audit event may not be in
	// the audit log yet (a kill came between the two): Load audits it
	// again when Instance, the instance that wrote it, is its own.
	Unaudited bool   `json:"unaudited,omitempty"`
	Instance  string `json:"instance,omitempty"`
}

// decodeStored reads the approval the store keeps as ar: an error if its
// data is not an approval (not JSON, another approval's id, no key or an
// unknown status: a disk error, a hand edit, a partial restore), which the
// queue then leaves out: an approval it cannot read approves nothing.
func decodeStored(ar *store.ApprovalRecord) (storedApproval, error) {
	var sa storedApproval
	if err := json.Unmarshal(ar.Data, &sa); err != nil {
		return sa, err
	}
	switch {
	case sa.ID != ar.ID:
		return sa, fmt.Errorf("its data is approval %q", sa.ID)
	case sa.Key == "":
		return sa, errors.New("its data names no call")
	}
	switch sa.Status {
	case Pending, Approved, Used, Denied, Expired:
	default:
		return sa, fmt.Errorf("its data has the unknown status %q", sa.Status)
	}
	return sa, nil
}

// Stored reads approval id as st keeps it, and when it was last written:
// what a restarted gateway's history reads to end the frames that waited
// for it (WaitsFor, Settled by its status), every one of them, in any
// request. An error matches store.ErrNotFound for an approval not (or no
// longer) kept.
func Stored(ctx context.Context, st store.Approvals, id string) (*Approval, time.Time, error) {
	ar, err := st.GetApproval(ctx, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	sa, err := decodeStored(ar)
	if err != nil {
		return nil, time.Time{}, err
	}
	return &sa.Approval, ar.Updated, nil
}

// warnUnreadable logs, once per load, an approval row that could not be
// read: it is kept in the store as it is and approves nothing.
func (q *Queue) warnUnreadable(id string, err error) {
	q.o.Logger.Warn("approvals: a stored approval could not be read; it is kept in the store as it is and approves nothing "+
		"(a call that needs it asks for a new approval); inspect its row in the approvals table, then fix or delete it by hand",
		"table", "approvals", "approval", id, "err", err)
}

// persist writes rec to the store, if the queue has one, a change whose
// event is not audited yet (Unaudited, until audited clears it); q.mu is
// held.
func (q *Queue) persist(rec *record) error {
	return q.persistRead(rec, true)
}

// persistRead is persist, with the read-back of a write that failed
// (landed) under the lock or not: a decision reads it back once the lock
// is let go (decide), so that the approvals' other decisions and the
// calls waiting on them do not wait for that read too. q.mu is held.
func (q *Queue) persistRead(rec *record, readBack bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	if err := q.writeRead(ctx, rec, q.o.Audit != nil, q.o.Instance, readBack); err != nil { // no audit: nothing to mark
		return err
	}
	crashpoint.Reached(rec.Status.point())
	return nil
}

// write writes rec to the store, if the queue has one, marked unaudited
// or not, by instance (the one whose change it is); q.mu is held.
//
// Bounded, as the claim of a mark before its audit is (claimed): a store
// that stops answering holds the queue's lock for syncTimeout at most.
// A write that times out is a failure as any other: its caller keeps the
// approval as it was (a new one is forgotten and its call refused
// approval_store; a decision is answered with the error; a waiting
// frame is not kept; a mark not cleared is audited again, found in the
// audit log, at the restart). One the store applied all the same before
// it answered (or answered a conflict once applied) is read back and
// taken as written (landed). The store may still apply it later (the
// write was queued): the row is then a version ahead of the queue, whose
// next write of it conflicts, and the queue reads it again (reread): a
// decision and the agent's call then go on from what the store has, and
// the late write's action is audited then, or at a restart.
func (q *Queue) write(rec *record, unaudited bool, instance string) error {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	return q.writeCtx(ctx, rec, unaudited, instance)
}

// writeCtx is write with ctx; q.mu is held.
func (q *Queue) writeCtx(ctx context.Context, rec *record, unaudited bool, instance string) error {
	return q.writeRead(ctx, rec, unaudited, instance, true)
}

// writeRead is writeCtx, reading a failed write back (landed) if
// readBack; q.mu is held.
func (q *Queue) writeRead(ctx context.Context, rec *record, unaudited bool, instance string, readBack bool) error {
	if q.o.Store == nil {
		return nil
	}
	ar, err := q.stored(rec, unaudited, instance)
	if err != nil {
		return err
	}
	if err := q.o.Store.PutApproval(ctx, ar); err != nil {
		if !readBack || !q.landed(ar, err) {
			return err
		}
	}
	rec.version, rec.unaudited, rec.instance = ar.Version, unaudited, instance
	return nil
}

// landed reports whether the write of ar, which failed with err, is in
// the store all the same: a write that timed out (SQLite's writer keeps
// it queued when its caller's context ends, and applies it), or was
// answered a conflict once applied, as read back (within syncTimeout of
// its own, readBackTimeout): the row a version ahead whose approval is
// the one written. ar.Version is then the store's. q.mu is held.
func (q *Queue) landed(ar *store.ApprovalRecord, err error) bool {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrConflict) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), readBackTimeout)
	defer cancel()
	got, gerr := q.o.Store.GetApproval(ctx, ar.ID)
	if gerr != nil || got.Version <= ar.Version {
		return false
	}
	var a, b storedApproval
	if json.Unmarshal(ar.Data, &a) != nil || json.Unmarshal(got.Data, &b) != nil || !reflect.DeepEqual(a, b) {
		return false
	}
	ar.Version, ar.Updated = got.Version, got.Updated
	return true
}

// reread merges what the store keeps of approval id after a write of it
// failed (rereads): syncID for a queue whose store others share. A queue
// of its own reads it too, as no other instance writes it: a row newer
// than its record is a write of its own that timed out and was applied
// later, taken as it is, and its action, whose event was not made (the
// write failed), is audited now (unless Options.Audited finds it).
func (q *Queue) reread(id string) {
	if q.o.Store == nil {
		return
	}
	if q.o.Shared {
		q.syncID(context.Background(), id)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	ar, err := q.o.Store.GetApproval(ctx, id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			q.o.Logger.Warn("approvals: reading the store", "approval", id, "err", err)
		}
		return
	}
	sa, err := decodeStored(ar)
	if err != nil {
		q.warnUnreadable(id, err)
		return
	}
	q.mu.Lock()
	rec := q.byID[id]
	if rec == nil || ar.Version <= rec.version {
		q.mu.Unlock()
		return
	}
	rec.Approval, rec.key, rec.alt, rec.version = sa.Approval, sa.Key, sa.Alt, ar.Version
	rec.unaudited, rec.instance = sa.Unaudited, sa.Instance
	rec.notify()
	switch rec.Status {
	case Pending, Approved, Denied:
		q.enforceUnlessOlder(rec)
	default:
		q.unforce(rec)
	}
	var events []Event
	if q.marked(rec) {
		events = append(events, q.reaudit(time.Now(), rec, "(audited late: its write timed out and was applied after)"))
	}
	q.mu.Unlock()
	q.emit(ctx, events)
}

// stored is the row that writes rec, at its version, marked unaudited or
// not, by instance; q.mu is held.
func (q *Queue) stored(rec *record, unaudited bool, instance string) (*store.ApprovalRecord, error) {
	data, err := json.Marshal(storedApproval{Approval: rec.Approval, Key: rec.key, Alt: rec.alt, Instance: instance})
	if err != nil {
		return nil, err
	}
	data = markUnaudited(data, unaudited)
	return &store.ApprovalRecord{ID: rec.ID, Key: rec.key, Alt: rec.alt, Status: string(rec.Status), Version: rec.version,
		Created: rec.Created, Expires: rec.Expires, Data: data}, nil
}

// markUnaudited returns data, an approval's JSON object written without
// its unaudited field, with the mark the stores select an approval whose
// action is not audited by (store.UnauditedMark) once if unaudited, else
// not at all. The data holds what the agent wrote (its call's arguments,
// compacted): {"unaudited": true} among them spelled the mark, and the
// approval was taken for one not audited, kept past its retention. Such
// a spelling is written with a space after its colon, the same JSON.
func markUnaudited(data []byte, unaudited bool) []byte {
	mark := []byte(store.UnauditedMark)
	if bytes.Contains(data, mark) {
		spaced := []byte(strings.Replace(store.UnauditedMark, ":", ": ", 1))
		data = bytes.ReplaceAll(data, mark, spaced)
	}
	if unaudited && len(data) > 2 && data[len(data)-1] == '}' {
		data = append(append(data[:len(data)-1:len(data)-1], ','), mark...)
		data = append(data, '}')
	}
	return data
}

// audited clears the unaudited mark of the approval whose event e was
// audited, when nothing changed it since (a newer change clears its own
// once audited). A kill before it is written (approval.audited) leaves
// the mark: the restart (Load), or a survivor (Adopt), finds the event in
// the audit log (Options.Audited) and writes nothing more.
func (q *Queue) audited(e *Event) {
	if q.o.Store == nil || e.Elsewhere {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	rec := q.byID[e.Approval.ID]
	if rec == nil || !rec.unaudited || rec.version != e.version {
		return
	}
	if err := q.write(rec, false, rec.instance); errors.Is(err, store.ErrConflict) {
		// Changed in the store since (a survivor took it over, or
		// another instance's change): that row's mark is its writer's.
		// This one's action is audited, so its record is not kept for
		// it (prune), until a read replaces it.
		rec.unaudited = false
	} else if err != nil {
		q.o.Logger.Warn("approvals: marking an action audited", "approval", rec.ID, "err", err)
	}
}

// point names the crash point of an approval's change to s, durable
// (docs/STATE.md): a new approval and a vote are "approval.pending".
func (s Status) point() string {
	switch s {
	case Pending:
		return "approval.pending"
	case Approved:
		return "approval.approved"
	case Used:
		return "approval.used"
	case Denied:
		return "approval.denied"
	}
	return "approval.expired"
}

// forget drops rec, just created, whose creation could not be recorded;
// q.mu is held.
func (q *Queue) forget(rec *record) {
	delete(q.byID, rec.ID)
	q.unforce(rec)
	if i := slices.Index(q.order, rec); i >= 0 {
		q.order = slices.Delete(q.order, i, i+1)
	}
}

// Load reads back the approvals that Options.Store kept: every pending or
// approved one, with its votes and expiry, and the newest decided ones
// (up to MaxKept), so that a retry of an approved call that already ran
// is answered by its run, and a denial keeps answering until it expires.
// Call it once, before the queue is used. Approvals that expired meanwhile
// are marked so. Its own unaudited actions (Options.Instance) it reads
// however old (store.ApprovalFilter.Unaudited), and audits again.
func (q *Queue) Load(ctx context.Context) error {
	if q.o.Store == nil {
		return nil
	}
	live, err := q.o.Store.ListApprovals(ctx, store.ApprovalFilter{Live: true, Limit: 1 << 30})
	if err != nil {
		return fmt.Errorf("loading approvals: %w", err)
	}
	recent, err := q.o.Store.ListApprovals(ctx, store.ApprovalFilter{Limit: q.o.MaxKept})
	if err != nil {
		return fmt.Errorf("loading approvals: %w", err)
	}
	// And this instance's unaudited actions however old, past the newest
	// kept: in time order with the others (prune keeps them until they
	// are audited).
	marked, err := q.o.Store.ListApprovals(ctx, store.ApprovalFilter{Unaudited: true, Limit: 1 << 30})
	if err != nil {
		return fmt.Errorf("loading approvals: %w", err)
	}
	seen := map[string]bool{}
	var recs []*record
	for i, ar := range slices.Concat(live, recent, marked) {
		if seen[ar.ID] {
			continue
		}
		seen[ar.ID] = true
		sa, err := decodeStored(ar)
		if err != nil {
			q.warnUnreadable(ar.ID, err)
			continue
		}
		if i >= len(live)+len(recent) && (sa.Instance != q.o.Instance || !sa.Unaudited) {
			continue // another's: adopted once it is dead (Adopt)
		}
		recs = append(recs, &record{Approval: sa.Approval, key: sa.Key, alt: sa.Alt, version: ar.Version, changed: make(chan struct{}),
			unaudited: sa.Unaudited, instance: sa.Instance})
	}
	// In time order, all of them: what walks q.order from its end (List,
	// usedRecently, ApprovalKey) takes the newest first.
	slices.SortStableFunc(recs, func(a, b *record) int { return a.Created.Compare(b.Created) })
	q.mu.Lock()
	var events []Event
	now := time.Now()
	for _, rec := range recs {
		if _, ok := q.byID[rec.ID]; ok {
			continue
		}
		q.byID[rec.ID] = rec
		q.order = append(q.order, rec)
		switch rec.Status {
		case Pending, Approved, Denied: // in force for its call until it expires, unless a newer one is (an old marked one)
			q.enforceUnlessOlder(rec)
		}
		if rec.unaudited && rec.instance == q.o.Instance {
			if q.o.Shared && q.o.Instance != "" {
				// Claimed first, as Adopt takes it, conditionally on its
				// version: another instance that found this name dead and
				// took it over audits it, and this one does not.
				// Any other failure (the store went away for a moment)
				// takes nothing over: audited here all the same, as an
				// instance that is not shared does.
				// Bounded, as the claim before an audit (claimed): a timeout
				// is a failure as any other.
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
				err := q.writeCtx(cctx, rec, true, q.o.Instance)
				cancel()
				if errors.Is(err, store.ErrConflict) {
					q.o.Logger.Info("approvals: an unaudited action of an earlier life was taken over meanwhile; its taker audits it",
						"approval", rec.ID)
					rec.unaudited = false // the taker's mark: not kept for it here (prune)
					continue
				} else if err != nil {
					q.o.Logger.Warn("approvals: claiming an unaudited action of an earlier life failed; audited here all the same",
						"approval", rec.ID, "err", err)
				}
			}
			events = append(events, q.reaudit(now, rec, "(audited at a restart: the gateway stopped after the action was stored, before it was audited)"))
		}
	}
	events = q.expire(now, events)
	q.prune()
	q.mu.Unlock()
	q.emit(ctx, events)
	return nil
}

// reaudit makes the event, again, of rec's last change, which the store
// keeps and the audit log may lack: the gateway was killed between the
// two (docs/STATE.md, approval.*). Who acted and why are the vote's or
// the denial's; its reason says it is audited at the restart. q.mu is
// held.
func (q *Queue) reaudit(now time.Time, rec *record, note string) Event {
	action, by, reason := "requested", "", ""
	switch rec.Status {
	case Pending:
		if n := len(rec.Votes); n > 0 {
			action, by, reason = "voted", rec.Votes[n-1].By, rec.Votes[n-1].Reason
		}
	case Approved:
		action = "approved"
		if n := len(rec.Votes); n > 0 {
			by, reason = rec.Votes[n-1].By, rec.Votes[n-1].Reason
		}
	case Denied:
		action = "denied"
		if d := rec.Denial; d != nil {
			by, reason = d.By, d.Reason
		}
	case Used:
		action = "used"
	case Expired:
		action = "expired"
	}
	if reason != "" {
		reason += " "
	}
	reason += note
	e := q.event(now, action, by, reason, rec)
	e.Again = true
	q.outbox[len(q.outbox)-1].Again = true
	return e
}

// Adopt audits the actions that instances no longer alive stored and did
// not audit (a kill between the two; Options.Instance names who wrote
// each): an instance that never starts again under its name (whose Load
// would) leaves them to the others. alive reports whether an instance,
// by its name, has a live life (its heartbeat within the cluster's TTL).
// Each such action is taken over first in the store, conditionally on
// its version, so that one instance audits it however many adopt at
// once, and the taker audits it (Event.Again, unless Options.Audited
// finds it audited already). It reads every marked approval, however
// old (store.ApprovalFilter.Unaudited); a store of one instance (Instance empty) has none to
// adopt. A take-over that fails (not a conflict) leaves its action to
// the next Adopt and does not stop the others': their errors come back
// joined. Call it when the cluster finds a dead life, and now and then
// after (a dead life is forgotten, its actions are not).
func (q *Queue) Adopt(ctx context.Context, alive func(instance string) bool) error {
	if q.o.Store == nil || q.o.Audit == nil || q.o.Instance == "" {
		return nil
	}
	// Every marked one, however old: not a window of the newest.
	marked, err := q.o.Store.ListApprovals(ctx, store.ApprovalFilter{Unaudited: true, Limit: 1 << 30})
	if err != nil {
		return fmt.Errorf("adopting approvals: %w", err)
	}
	var errs []error
	var made []Event
	for _, ar := range marked {
		sa, err := decodeStored(ar)
		if err != nil || !sa.Unaudited || sa.Instance == "" || sa.Instance == q.o.Instance || alive(sa.Instance) {
			continue
		}
		// Taken over: its mark now names this instance, which audits it
		// (and, killed before, audits it when it starts again).
		dead := sa.Instance
		sa.Instance = q.o.Instance
		data, err := json.Marshal(sa)
		if err != nil {
			errs = append(errs, fmt.Errorf("adopting approval %s: %w", ar.ID, err))
			continue
		}
		took := *ar
		took.Data = data
		if err := q.o.Store.PutApproval(ctx, &took); err != nil {
			if !errors.Is(err, store.ErrConflict) { // else another instance took it, or it changed: its own mark then
				errs = append(errs, fmt.Errorf("adopting approval %s: %w", ar.ID, err))
			}
			continue
		}
		made = append(made, q.mergeAll([]*store.ApprovalRecord{&took})...)
		q.mu.Lock()
		// Unless a newer change, with its own mark, came meanwhile (a
		// waiting frame's write keeps the mark: its version may be newer).
		if rec := q.byID[ar.ID]; rec != nil && rec.unaudited && rec.instance == q.o.Instance {
			made = append(made, q.reaudit(time.Now(), rec, "(audited by instance "+q.o.Instance+": instance "+dead+
				" stopped after the action was stored, before it was audited, and did not start again)"))
		}
		q.mu.Unlock()
	}
	q.emit(ctx, made) // all at once: the audit log is asked once (Options.Audited)
	return errors.Join(errs...)
}

// Refresh reads approval id again from the store, for a queue whose store
// other instances share (Options.Shared), when one of them wrote it: a
// call held for it wakes, and the queue answers as it now stands.
func (q *Queue) Refresh(id string) { q.syncID(context.Background(), id) }

// syncTimeout bounds a read of the store by a shared queue, each write
// of the queue's records under its lock (write, claimed), and the read
// of one again after such a write failed (landed, reread).
const syncTimeout = 5 * time.Second

// readBackTimeout bounds the read-back of a write that failed under the
// queue's lock (landed): the lock is held for a write's syncTimeout and
// this at most, not twice syncTimeout. A write that is not found so is a
// failure; a decision reads it back again off the lock, within
// syncTimeout (decide), and a later write of it that conflicts reads it
// again (reread).
const readBackTimeout = time.Second

// sync merges what the store keeps for the call k identifies, when other
// instances share it.
func (q *Queue) sync(ctx context.Context, k keys) {
	if !q.o.Shared || q.o.Store == nil {
		return
	}
	ks := []string{k.req}
	if k.idem != "" {
		ks = append(ks, k.idem)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer cancel()
	ars, err := q.o.Store.ListApprovals(ctx, store.ApprovalFilter{Keys: ks, Limit: 16})
	if err != nil {
		q.o.Logger.Warn("approvals: reading the store", "err", err)
		return
	}
	q.emit(ctx, q.mergeAll(ars))
}

// syncID merges what the store keeps of approval id. It returns the
// store's error when it could not be read (not its absence).
func (q *Queue) syncID(ctx context.Context, id string) error {
	if !q.o.Shared || q.o.Store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer cancel()
	ar, err := q.o.Store.GetApproval(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		q.o.Logger.Warn("approvals: reading the store", "approval", id, "err", err)
		return err
	}
	q.emit(ctx, q.mergeAll([]*store.ApprovalRecord{ar}))
	return nil
}

// syncLive merges the live approvals the store keeps (those another
// instance asked for, to list them here).
func (q *Queue) syncLive(ctx context.Context) {
	if !q.o.Shared || q.o.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer cancel()
	ars, err := q.o.Store.ListApprovals(ctx, store.ApprovalFilter{Live: true, Limit: q.o.MaxKept})
	if err != nil {
		q.o.Logger.Warn("approvals: reading the store", "err", err)
		return
	}
	q.emit(ctx, q.mergeAll(ars))
}

// mergeAll takes what the store keeps where it is newer than what the
// queue has: a new approval, or a newer version of one it has (whose
// waiters wake). It returns the events, queued for emit, of the
// approvals it knew that another instance denied, expired or used
// meanwhile (Event.Elsewhere): the frames that waited for them here end
// with them.
func (q *Queue) mergeAll(ars []*store.ApprovalRecord) []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	var events []Event
	for _, ar := range ars {
		sa, err := decodeStored(ar)
		if err != nil {
			q.warnUnreadable(ar.ID, err)
			continue
		}
		rec := q.byID[ar.ID]
		if rec == nil {
			rec = &record{Approval: sa.Approval, key: sa.Key, alt: sa.Alt, version: ar.Version, changed: make(chan struct{}),
				unaudited: sa.Unaudited, instance: sa.Instance}
			q.byID[rec.ID] = rec
			q.insert(rec)
		} else {
			if ar.Version <= rec.version {
				continue
			}
			was := rec.Status
			rec.Approval, rec.key, rec.alt, rec.version = sa.Approval, sa.Key, sa.Alt, ar.Version
			rec.unaudited, rec.instance = sa.Unaudited, sa.Instance
			rec.notify()
			if action := settledAction(rec.Status); action != "" && was != rec.Status {
				e := q.event(time.Now(), action, "", "", rec)
				q.outbox[len(q.outbox)-1].Elsewhere = true
				e.Elsewhere = true
				events = append(events, e)
			}
		}
		switch rec.Status {
		case Pending, Approved, Denied:
			q.enforceUnlessOlder(rec)
		default:
			q.unforce(rec)
		}
	}
	q.prune()
	return events
}

// insert adds rec, read from the store, to q.order in time order: one
// older than those the queue has (an old approval of a call the store
// holds) goes before them, not last, where it would be taken for the
// newest (List, lastUsed). q.mu is held.
func (q *Queue) insert(rec *record) {
	i := len(q.order)
	for i > 0 && rec.Created.Before(q.order[i-1].Created) {
		i--
	}
	q.order = slices.Insert(q.order, i, rec)
}

// settledAction is the action that ends the frames waiting for an
// approval now s (Settled), or "".
func settledAction(s Status) string {
	switch s {
	case Denied:
		return "denied"
	case Used:
		return "used"
	case Expired:
		return "expired"
	}
	return ""
}

// enforceUnlessOlder is enforce for an approval read from the store, for
// each of its keys where no newer approval of the call is in force: the
// store lists them newest first, and holds a call's older ones, a denial
// past its window say (its status stays denied), which must not take the
// place of the one in force. q.mu is held.
func (q *Queue) enforceUnlessOlder(rec *record) {
	for _, k := range []string{rec.key, rec.alt} {
		if k == "" {
			continue
		}
		if cur := q.byKey[k]; cur == nil || cur == rec || !rec.Created.Before(cur.Created) {
			q.byKey[k] = rec
		}
	}
}
