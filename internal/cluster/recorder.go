package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/modelproxy"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// Recorder is the runtime's Checkpoints, Requests and DeadLetters on a
// store that several instances share: durable.Checkpoints, whose
// checkpoints name this life and keep their calls' stacks, and whose
// requests are joined when another instance runs them (JoinRequest), left
// when they end here (the last instance to leave ends them), and stopped
// for every instance.
type Recorder struct {
	*durable.Checkpoints
	c *Cluster
}

var (
	_ reach.RequestRecorder = (*Recorder)(nil)
	_ reach.RequestJoiner   = (*Recorder)(nil)
	_ reach.JoinAbandoner   = (*Recorder)(nil)
	_ reach.Checkpointer    = (*Recorder)(nil)
	_ reach.DeadLetterQueue = (*Recorder)(nil)
	_ reach.SharedUsage     = (*Recorder)(nil)
)

// Recorder returns cp, the checkpoints over the shared store, as this
// instance's recorder.
func (c *Cluster) Recorder(cp *durable.Checkpoints) *Recorder {
	cp.Share(c.owner)
	return &Recorder{Checkpoints: cp, c: c}
}

// storeError refuses a step whose shared state could not be read or
// written.
func (c *Cluster) storeError(what, request string, err error) *reach.Error {
	// The store's own text (a driver's, with its host, user or SQL) is
	// logged, not told: the client and the model read what happened and
	// what to do.
	c.log.Warn("shared store did not answer", "what", what, "request", request, "err", err)
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "store_unavailable",
		Message:    what + ": the shared store did not answer.",
		Suggestion: "Nothing ran. Try again in a moment."}
}

// requestID is r's id, "" for none.
func requestID(r *reach.Request) string {
	if r == nil {
		return ""
	}
	return r.ID()
}

// notBackYet refuses a call of a request whose every instance looks dead,
// when this instance's heartbeats came back less than a TTL ago: after an
// outage of the store, the others may not have heartbeated again yet.
func notBackYet(id string) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "store_unavailable",
		Message:    fmt.Sprintf("Request %s could not be joined: the shared store was unreachable a moment ago, and the gateway instances that run it have not been seen since it came back. Nothing ran.", id),
		Suggestion: "Try again in a moment: if they are alive, they will have been seen; if not, the request is interrupted."}
}

// lostError refuses a call or a turn on an instance that lost its name.
func lostError(name string) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "instance_stopping",
		Message:    fmt.Sprintf("Gateway instance %s is stopping: another process of its name runs on the shared store. Nothing ran.", name),
		Suggestion: "Try again in a moment: another instance will take the call."}
}

// leaseError refuses a call of a life whose lease lapsed and was not
// renewed in time.
func leaseError(name string) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "store_unavailable",
		Message:    fmt.Sprintf("Gateway instance %s could not renew its heartbeat on the shared store in time: the other instances may take it for dead, so it did not dispatch the call. Nothing ran.", name),
		Suggestion: "Try again in a moment."}
}

// fencedError refuses the work of a life the others took for dead.
func fencedError(name string) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "instance_stopping",
		Message:    fmt.Sprintf("Gateway instance %s was taken for dead by the other instances (no heartbeat for instance_ttl) and its work recovered: it admits no more work until restarted. Nothing ran.", name),
		Suggestion: "Try again in a moment: another instance will take the call."}
}

// JoinRequest implements reach.RequestJoiner: a request that another
// instance runs is joined, as it was begun there; one of another
// principal is refused, and so is a stopped or interrupted one, or one
// its client ended while a part of it still runs elsewhere (request_ended:
// whether this instance heard the end or not).
func (r *Recorder) JoinRequest(ctx context.Context, o *reach.RequestOptions) (time.Time, error) {
	// Not cut short by its caller (a part written is registered), but
	// bounded: a store that does not answer within a TTL (a table held
	// locked, a server that hangs) refuses the call, not holds it for ever.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.c.ttl)
	defer cancel()
	rec := requestOf(o, "")
	seq := r.c.enterJoin(o.ID)
	got, outcome, err := r.c.joinStore(ctx, rec, seq)
	if h := r.c.afterJoin; h != nil {
		err = h(err)
	}
	if err != nil {
		// The join may have committed all the same (the bound fired as it
		// landed): its part is left.
		r.c.joinFailed(o.ID)
		return time.Time{}, r.c.storeError("Request "+o.ID+" could not be begun", o.ID, err)
	}
	switch outcome {
	case postgres.JoinLeft: // a leave of this life's part came first: nothing written
		r.c.joinDone(o.ID)
		return time.Time{}, r.c.storeError("Request "+o.ID+" could not be begun", o.ID, errJoinLeft)
	case postgres.JoinForeign:
		r.c.joinDone(o.ID) // nothing written
		return time.Time{}, foreign(o.ID, o.Tenant, got)
	case postgres.JoinFinal:
		r.c.joinDone(o.ID)
		if got.State == "interrupted" && !r.c.judges(time.Now()) {
			// Every instance that runs it looks dead to the store: so do
			// live ones, for a while after the store came back.
			return time.Time{}, notBackYet(o.ID)
		}
		return time.Time{}, finalError(o.ID, got)
	case postgres.JoinEnded:
		r.c.joinDone(o.ID)
		return time.Time{}, endedError(o.ID)
	case postgres.JoinHandoffEnded:
		r.c.joinDone(o.ID)
		return time.Time{}, durable.HandoffEnded(o.ID, got.Parent)
	case postgres.JoinJoined:
		if got.Principal != o.Principal || got.Tenant != o.Tenant { // a store of schema 2 or 3, before reach_join said so
			r.c.joinFailed(o.ID)
			return time.Time{}, foreign(o.ID, o.Tenant, got)
		}
		if got.Unreadable != "" { // a call with roles it cannot know would act as nobody knows whom
			r.c.joinFailed(o.ID)
			// What could not be read is the decoder's text: logged, not told.
			r.c.log.Warn("request record unreadable; not joined", "request", o.ID, "err", got.Unreadable)
			return time.Time{}, &reach.Error{Guard: "admit", Type: reach.TypePermission, Code: "request_unreadable",
				Message:    fmt.Sprintf("Request %s could not be joined: its stored record could not be read. Nothing ran.", o.ID),
				Suggestion: "Start a new request (omit the request id); an operator can inspect the request's row in the store."}
		}
		o.Roles, o.Attributes, o.Scene, o.Agent = got.Roles, got.Attrs, got.Scene, got.Agent
		if b := decodeBudget(got.Budget); b != nil {
			o.Budget = b
		}
		// A run begun again on another instance: this part counts on from
		// what the earlier runs spent, its wall clock too, as that
		// instance's does (schema 29; the ledger keeps no time).
		if len(got.Carried) > 0 {
			var u reach.Usage
			if json.Unmarshal(got.Carried, &u) == nil {
				o.Carried = &u
			}
		}
		// A sub-request another instance handed a task (reach_join does
		// not say so: its stored record does): its part here spends from
		// the ledgers above it too (ledgerChain).
		up, err := r.c.storedAbove(ctx, o.ID)
		if err != nil {
			r.c.joinFailed(o.ID)
			return time.Time{}, r.c.storeError("Request "+o.ID+" could not be joined: the requests above it could not be read", o.ID, err)
		}
		if up = up[1:]; len(up) > 0 {
			r.c.mu.Lock()
			if r.c.above == nil {
				r.c.above = map[string][]ledgerLink{}
			}
			r.c.above[o.ID] = up
			r.c.mu.Unlock()
		}
		if t, err := hex.DecodeString(got.Trace); err == nil && len(t) == len(o.Trace) {
			copy(o.Trace[:], t)
		}
		crashpoint.Reached("request.begun") // a kill here: a part of a running request, none of its calls claimed
		return got.Started, nil
	}
	crashpoint.Reached("request.begun") // a kill here: the request running, its part this life's, none of its calls claimed
	return rec.Started, nil
}

// foreign refuses request id, which the store holds as got, of another
// owner than a caller in tenant: another tenant's as an id that cannot be
// used (link.UnusableID's words), telling nothing of it; another
// principal's of the same tenant as that (notYours).
func foreign(id, tenant string, got *store.Request) error {
	if got == nil || got.Tenant != tenant {
		return &reach.Error{Guard: "admit", Type: reach.TypePermission, Code: "request_id_unavailable",
			Message:    fmt.Sprintf("The request id %q cannot be used: it names no request of yours, and cannot begin one. Nothing ran.", id),
			Suggestion: "Leave the request id out to begin a new request, or name one of yours; an id you make should be hard to guess (a UUID)."}
	}
	return notYours(id)
}

// notYours refuses a request id of another principal of the caller's
// tenant, saying nothing of that request.
func notYours(id string) error {
	return &reach.Error{Guard: "admit", Type: reach.TypePermission, Code: "not_your_request",
		Message:    fmt.Sprintf("Request %s belongs to another principal.", id),
		Suggestion: "Work in your own requests: omit the request id, or send one of yours."}
}

// requestOf is the stored record of a request begun with o.
func requestOf(o *reach.RequestOptions, parent string) *store.Request {
	rec := &store.Request{ID: o.ID, Parent: parent, Principal: o.Principal, Tenant: o.Tenant, Roles: o.Roles, Attrs: o.Attributes,
		Scene: o.Scene, Agent: o.Agent, Started: time.Now()}
	if o.Budget != nil {
		rec.Budget, _ = json.Marshal(o.Budget)
	}
	if o.Trace != ([16]byte{}) {
		rec.Trace = hex.EncodeToString(o.Trace[:])
	}
	return rec
}

// finalError refuses the id of a stored request that was stopped or
// interrupted.
func finalError(id string, got *store.Request) error {
	cause := durable.DecodeCause(got.Cause)
	cause.Request = id
	if got.State == "interrupted" {
		return &reach.InterruptedError{Cause: cause}
	}
	if cause.Mode == reach.Running {
		cause.Mode = reach.Cancel
	}
	return &reach.StopError{Cause: cause}
}

// JoinAbandoned implements reach.JoinAbandoner: the runtime refused a
// request JoinRequest joined (its id runs here already, say), so no part
// registers and ends that join's count. Its part is left after the next
// heartbeat unless a part of the id runs here (joinFailed): counted in
// flight for good, it kept every stray part of that id held until the
// life ended.
func (r *Recorder) JoinAbandoned(id string) { r.c.joinFailed(id) }

// RequestBegan implements reach.RequestRecorder: a root request was
// joined or begun by JoinRequest; a sub-request (a delegation) is begun
// in the store here. Then this part is registered (see register): one
// whose client ended it through another instance meanwhile is refused.
func (r *Recorder) RequestBegan(ctx context.Context, q *reach.Request) error {
	if q.Parent() == nil {
		return r.register(ctx, q)
	}
	o := &reach.RequestOptions{ID: q.ID(), Principal: q.Principal(), Tenant: q.Tenant(), Roles: q.Roles(), Attributes: q.Attributes(),
		Scene: q.Scene(), Agent: q.Agent(), Trace: q.Trace()}
	b := q.Budget()
	o.Budget = &b
	rec := requestOf(o, q.Parent().ID())
	rec.Started = q.Started()
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.c.ttl) // as JoinRequest
	seq := r.c.enterJoin(q.ID())
	got, outcome, err := r.c.joinStore(jctx, rec, seq)
	cancel()
	if h := r.c.afterJoin; h != nil {
		err = h(err)
	}
	if err != nil {
		r.c.joinFailed(q.ID()) // as JoinRequest
		return r.c.storeError("Request "+q.ID()+" could not be begun", q.ID(), err)
	}
	switch outcome {
	case postgres.JoinLeft:
		r.c.joinDone(q.ID())
		return r.c.storeError("Request "+q.ID()+" could not be begun", q.ID(), errJoinLeft)
	case postgres.JoinForeign:
		r.c.joinDone(q.ID())
		return foreign(q.ID(), q.Root().Tenant(), got)
	case postgres.JoinFinal:
		r.c.joinDone(q.ID())
		return finalError(q.ID(), got)
	case postgres.JoinHandoffEnded:
		r.c.joinDone(q.ID())
		return durable.HandoffEnded(q.ID(), got.Parent)
	}
	// A kill here: the sub-request stored with the budget carved from its
	// parent's, nothing spent in it, its hand-off not sent.
	crashpoint.Reached("request.carved")
	// Its delegate frame's stack, for a hand-off that another instance
	// places under that frame (Frame, link.Owned.adopt).
	r.Delegated(ctx, q)
	return r.register(ctx, q)
}

// register keeps q, this instance's part of a request written in the
// store, among the requests running here, for the stops and ends of the
// other instances. An end of q's request that came before (between the
// store's write and now, or just before the write, while another
// instance's part still ran) found nothing here to end: when one was
// heard within the TTL (heardLately), the store is asked whether q's
// request, as it runs now, is one its client ended (postgres.Store.Settled:
// a request begun again under its id is not), and if so this part leaves
// it at once and the begin is refused. Asked only then, so that a begin
// costs no query of its own.
func (r *Recorder) register(ctx context.Context, q *reach.Request) error {
	c := r.c
	c.mu.Lock()
	c.local[q.ID()] = q
	c.doneJoin(q.ID()) // the join that wrote this part, counted until now
	ask := c.heardLately(q.ID())
	c.mu.Unlock()
	if !ask {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl)
	defer cancel()
	settled, err := c.st.Settled(sctx, c.owner)
	if err != nil {
		// Run on, as without the end heard: the listener reads the ends
		// again when it connects again.
		c.log.Warn("cluster: reading whether a request's client ended it", "request", q.ID(), "err", err)
		return nil
	}
	if !slices.Contains(settled, q.ID()) {
		return nil
	}
	r.RequestEnded(ctx, q)
	return endedError(q.ID())
}

// endedError refuses a call of a request its client ended (through
// another instance) while a part of it still ran: as a call began here,
// or before, if it joined the request since.
func endedError(id string) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeStopped, Code: "request_ended",
		Message:    fmt.Sprintf("Request %s was ended by its client (through another instance): it starts no new call. Nothing ran.", id),
		Suggestion: "Begin a new request for new work: send it without this request id, or with a new one."}
}

// RequestStopped implements reach.RequestRecorder: the stop is stored and
// every instance woken before it returns.
func (r *Recorder) RequestStopped(ctx context.Context, q *reach.Request, cause reach.Cause) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.c.ttl)
	defer cancel()
	if _, err := r.c.st.StopRequest(ctx, q.ID(), int(cause.Mode), durable.EncodeCause(cause)); err != nil {
		// Kept, and stored after the next heartbeat the store takes; until
		// then this part does not leave the request (RequestEnded): the
		// other parts, which the stop has not reached, would end it with
		// no stop, their writes kept. Before, the stop was dropped here.
		r.c.log.Error("cluster: a stop was not stored; stored once the store answers again, this part holding the request until then", "request", q.ID(), "err", err)
		r.c.keepStop(r, q, cause)
		crashpoint.Reached("stop.kept") // a kill here: the next start stores it from the data folder
		return
	}
	r.c.storedStop(q.ID(), cause.Mode)
	crashpoint.Reached("request.stopped")
	r.Stopped(ctx, q)
}

// RequestEnded implements reach.RequestRecorder: this instance leaves the
// request; the last one to leave stores it ended.
func (r *Recorder) RequestEnded(ctx context.Context, q *reach.Request) {
	if r.c.deferLeave(q) {
		// Its stop is not stored yet: leaving now, the last of the other
		// parts to leave would end the request with no stop. The part
		// leaves once the stop is stored (storeStops).
		r.c.log.Warn("cluster: a stopped part waits for its stop to be stored before it leaves the request", "request", q.ID())
		return
	}
	defer r.c.untrack(q)
	state := "ended"
	var cause []byte
	if c := q.StopCause(); c != nil {
		state, cause = "stopped", durable.EncodeCause(*c)
	}
	usage, _ := json.Marshal(q.Usage())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.c.ttl)
	defer cancel()
	// A part that ends with no stop while another part runs on hands the
	// undos of its writes over to the request's record: a later stop of
	// the request, through any instance, has them run (by the recovery
	// that takes the stopped request over once its last part left), once
	// each. Before, they stayed here, where the stop no longer reaches a
	// part that is over, and were never run. A stopped part's own stop
	// runs its undos.
	undos := 0
	if state == "ended" {
		undos = q.Undos()
	}
	left, err := r.c.st.LeaveRequestOutcome(ctx, q.ID(), r.c.owner, r.c.ttl, state, usage, cause, time.Now(), undos)
	if err != nil {
		r.c.log.Error("cluster: leaving a request failed; left again after the next heartbeat", "request", q.ID(), "err", err)
		r.c.keepLeave(r, q)
		return
	}
	last := left == postgres.LeaveEnded
	if state == "ended" && left == postgres.LeaveLeft && handOffOver(q) && (r.c.rt == nil || !r.c.rt.Draining()) {
		r.c.handOffEnded(ctx, q)
	}
	if state == "stopped" && left == postgres.LeaveDead {
		// A stop undoes the whole request, but an instance that died
		// holding a part of it can no longer undo that part, and ending
		// the request here would leave it done for good. The leave (one
		// transaction, under the request's row lock) did not end it:
		// stopped, its live parts gone, it is an orphan that a recovery
		// claims (ClaimOrphans), which runs the undos of its writes, each
		// once under its key (those run here answer from their records),
		// and ends it.
		r.c.orphaned.Store(true)
		r.c.log.Info("cluster: a stopped request has a part on a dead instance: left to a recovery, which undoes that part", "request", q.ID())
		crashpoint.Reached("request.released") // a kill here: a recovery claims the request, its results here kept
		return
	}
	if !last {
		// Left, not ended: other parts run on, or (handed undos) it is an
		// orphan for the next recovery to end, its undos run. A part that
		// leaves as ended may leave one too: the request was stopped
		// through another instance and the stop not heard here yet.
		r.c.orphaned.Store(true)
	}
	if state == "stopped" && !last {
		crashpoint.Reached("request.left") // a kill here: an orphan if no live part is left, for a recovery
	}
	if undos > 0 && !last {
		// a kill here: the part left, its undos handed over (durable)
		crashpoint.Reached("request.handed")
	}
	crashpoint.Reached("request.ended")
}

// SharedUsage implements reach.SharedUsage: what request q has spent on
// every instance together, as its ledger keeps it (the ledger counts
// what Admission, AdmitTurn and Spend debit: turns, tool calls, tokens,
// cost), for the carve of a hand-off's budget made here.
func (r *Recorder) SharedUsage(ctx context.Context, q *reach.Request) (reach.Usage, error) {
	// Bounded as every read of the shared store here: the hand-off's
	// context has no deadline (TestReview38SharedSpendReadIsBounded).
	ctx, cancel := context.WithTimeout(ctx, r.c.ttl)
	defer cancel()
	sp, err := r.c.st.Spent(ctx, q.ID())
	if err != nil {
		return reach.Usage{}, err
	}
	return reach.Usage{Turns: int(sp.Turns), ToolCalls: int(sp.ToolCalls), Tokens: sp.Tokens, Cost: float64(sp.CostNano) / 1e9}, nil
}

// handOffOver reports whether q, ending here with no stop, is the
// sub-request of a hand-off made here that is over: its agent answered (an
// A2A task's final state), or the turn that handed a sub-agent its task
// went on (link.Owned.EndSubs), its parent's part still running here (a
// soft stop lets it run). A
// sub-request ended after its parent's part here ended is no hand-off's
// end but that part's: the gateway ends a request it owns (its idle gap,
// its MCP session's end, as the gateway shuts down), then the
// sub-requests it owns under it, while the request runs on through other
// instances, and the hand-off with it (a sub-agent's calls through another
// instance keep the request running there, as they keep it running on one
// instance). Before, that end was stored as the hand-off's, and every
// instance ended its part of it: the sub-agent's next call was refused
// request_ended while its manager waited for its answer
// (TestReview38PartLeavingEndsNoHandOff).
func handOffOver(q *reach.Request) bool {
	p := q.Parent()
	return q.DelegateFrame() != nil && p != nil && p.Context().Err() == nil // ended, or stopped: its context ended
}

// handOffEnded ends, on every instance, the parts of q, the sub-request
// of a hand-off made here that ended with no stop (its agent answered),
// while parts of it run on other instances (a sub-agent's calls there):
// the hand-off is over, so its sub-request is over everywhere, as on one
// instance, where its end refuses every further call in it
// (request_ended) and cuts those in flight. It is stored as its client's
// end (postgres.Store.SettleHandOff: not if it is stopped, through
// another instance, and the stop not heard here yet), which wakes every
// instance. Before,
// the end left this part only: the parts elsewhere ran on, their calls
// admitted under a hand-off that was over, until their idle gap ended
// them. Not while this runtime drains: the gateway's shutdown ends its
// parts, not the hand-offs, which other instances may carry on. A
// failure is logged: the other parts end as before, by their idle gap.
func (c *Cluster) handOffEnded(ctx context.Context, q *reach.Request) {
	if _, err := c.st.SettleHandOff(ctx, q.ID()); err != nil {
		c.log.Warn("cluster: a hand-off's end not told to the other instances: their parts of it end by their idle gap", "request", q.ID(), "err", err)
	}
}

// Admission returns the middleware that admits each tool call, just
// before it runs, against the shared state of its request (the runtime's
// Options.Middleware, first): a stop stored by any instance refuses it
// (and stops the request here, if the wake-up has not come yet), and so
// does a tool-call budget that the calls of every instance together have
// spent; otherwise the call is debited from the request's ledger and its
// ancestors'.
func (c *Cluster) Admission() reach.Middleware {
	return func(next reach.Handler) reach.Handler {
		return func(ctx context.Context, call *reach.Call) (*reach.Result, error) {
			if c.lost.Load() {
				return nil, lostError(c.name)
			}
			if c.fenced.Load() {
				return nil, fencedError(c.name)
			}
			var chain []*reach.Request
			for q := call.Request(); q != nil; q = q.Parent() {
				chain = append(chain, q)
			}
			links := c.ledgerChain(call.Request())
			ids := make([]string, len(links))
			caps := make([]store.Spend, len(links))
			for i, l := range links {
				ids[i] = l.id
				if !call.CountedWhenAsked() {
					// An approved call collected past its spent budget
					// was admitted when it was asked: counted, not capped.
					caps[i] = store.Spend{ToolCalls: int64(l.budget.ToolCalls)}
				}
			}
			adm, err := c.st.Admit(ctx, ids, store.Spend{ToolCalls: 1}, caps)
			if err != nil {
				if ctx.Err() != nil {
					if se, ok := errors.AsType[*reach.StopError](context.Cause(ctx)); ok {
						return nil, se
					}
					return nil, &reach.Error{Guard: "execute", Type: reach.TypeStopped, Code: "cancelled",
						Message: "The call was cancelled: " + context.Cause(ctx).Error() + ".", Suggestion: "Do not retry unless the user asks again."}
				}
				return nil, c.storeError("The shared budget of this call's request could not be checked", requestID(call.Request()), err)
			}
			if adm.Stopped != "" {
				for _, q := range chain {
					if q.ID() == adm.Stopped {
						c.stopLocal(q, adm.State, adm.Cause)
						if cs := q.StopCause(); cs != nil {
							return nil, &reach.StopError{Cause: *cs}
						}
					}
				}
				cs := durable.DecodeCause(adm.Cause)
				cs.Request = adm.Stopped
				if adm.State == "interrupted" {
					return nil, &reach.InterruptedError{Cause: cs}
				}
				return nil, &reach.StopError{Cause: cs}
			}
			if !adm.OK {
				q := links[adm.Over]
				who := "this request"
				if q.sub {
					who = "this sub-agent"
				}
				return nil, &reach.Error{Guard: "admit", Type: reach.TypeBudget, Code: "budget_" + adm.Dim,
					Message: fmt.Sprintf("The tool-call budget of %s (%s) is spent: %d tool calls made of %d, on every instance.",
						who, q.id, adm.Spent.ToolCalls, caps[adm.Over].ToolCalls),
					Suggestion: sharedSpentSuggestion("Stop calling tools and answer with what you have", q)}
			}
			crashpoint.Reached("budget.admitted")
			// The last thing before the call is dispatched: a life paused
			// since it was admitted may have been taken for dead.
			if err := c.Leased(ctx); err != nil {
				return nil, err
			}
			// And again once the upstream's connection is ready, just
			// before the call's bytes go out (the wire client): a life
			// paused between here and there is held back there.
			var held error
			res, err := next(mcpwire.WithBeforeSend(ctx, func(ctx context.Context) error {
				held = c.Leased(ctx)
				return held
			}), call)
			if held != nil {
				// Not the tool's failure: the call was not sent.
				return nil, held
			}
			return res, err
		}
	}
}

// Frame implements link.Remote: the request of a frame that another
// instance runs (a delegate frame's row names its sub-request, see
// durable.Checkpoints.Delegated), and its stack, innermost first
// (reach.Frame.Ancestry).
// It returns no error and no stack for a frame the store does not know.
func (c *Cluster) Frame(ctx context.Context, id reach.FrameID) (string, []reach.Ancestor, error) {
	f, err := c.st.FindFrame(ctx, id.String())
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	if len(f.Stack) == 0 {
		return "", nil, nil
	}
	var stack []reach.Ancestor
	if err := json.Unmarshal(f.Stack, &stack); err != nil {
		return "", nil, fmt.Errorf("reading the stack of frame %s: %w", id, err)
	}
	return f.Request, stack, nil
}

// AdmitTurn implements modelproxy.Ledger: one model turn of req is
// debited from the shared ledger of req and of each request above it,
// under their locks, as Admission debits a tool call; it is refused when
// that passes a turn budget, or when a token or cost budget is spent on
// every instance together. It returns the fewest tokens they have left.
func (c *Cluster) AdmitTurn(ctx context.Context, req *reach.Request) (left int64, limited bool, err error) {
	l, err := c.AdmitTurnLeft(ctx, req)
	return l.Tokens, l.TokensLimited, err
}

// AdmitTurnLeft implements modelproxy.Holder: AdmitTurn, which says what
// cost the requests have left too (the fewest nano-units).
func (c *Cluster) AdmitTurnLeft(ctx context.Context, req *reach.Request) (sl modelproxy.SharedLeft, err error) {
	if c.lost.Load() {
		return sl, lostError(c.name)
	}
	if err := c.Leased(ctx); err != nil {
		return sl, err
	}
	chain := c.ledgerChain(req)
	ids := make([]string, len(chain))
	caps := make([]store.Spend, len(chain))
	for i, l := range chain {
		ids[i], caps[i] = l.id, store.Spend{Turns: int64(l.budget.Turns)}
	}
	adm, err := c.st.Admit(ctx, ids, store.Spend{Turns: 1}, caps)
	if err != nil {
		return sl, c.storeError("The shared budget of this model turn's request could not be checked", req.ID(), err)
	}
	if adm.Stopped != "" {
		cs := durable.DecodeCause(adm.Cause)
		cs.Request = adm.Stopped
		if adm.State == "interrupted" {
			return sl, &reach.InterruptedError{Cause: cs}
		}
		return sl, &reach.StopError{Cause: cs}
	}
	if !adm.OK {
		return sl, turnRefusal(chain[adm.Over], "turn", fmt.Sprintf("%d turns made of %d", adm.Spent.Turns, caps[adm.Over].Turns))
	}
	crashpoint.Reached("budget.admitted")
	// A turn refused below (a token or cost budget spent) never reaches
	// the model: the turn debited above is given back, as GiveBackTurn.
	refused := func(e error) (modelproxy.SharedLeft, error) {
		c.giveBackTurn(ctx, req, ids)
		return modelproxy.SharedLeft{}, e
	}
	for i, q := range chain {
		b := q.budget
		if b.Tokens <= 0 && b.Cost <= 0 {
			continue
		}
		spent := adm.Spent
		if i > 0 {
			if spent, err = c.st.Spent(ctx, q.id); err != nil {
				return refused(c.storeError("The shared budget of this model turn's request could not be checked", req.ID(), err))
			}
		}
		if b.Tokens > 0 {
			l := int64(b.Tokens) - spent.Tokens
			if l <= 0 {
				return refused(turnRefusal(q, "token", fmt.Sprintf("%d tokens spent of %d", spent.Tokens, b.Tokens)))
			}
			if !sl.TokensLimited || l < sl.Tokens {
				sl.Tokens, sl.TokensLimited = l, true
			}
		}
		if capNano := int64(math.Round(b.Cost * 1e9)); capNano > 0 {
			if spent.CostNano >= capNano {
				return refused(turnRefusal(q, "cost", fmt.Sprintf("%.4f spent of %.4f", float64(spent.CostNano)/1e9, b.Cost)))
			}
			if l := capNano - spent.CostNano; !sl.CostLimited || l < sl.Cost {
				sl.Cost, sl.CostLimited = l, true
			}
		}
	}
	return sl, nil
}

// GiveBackTurn implements modelproxy.TurnGiver: the turn of req that
// AdmitTurn debited, which the model did not answer, is given back on the
// shared ledger of req and of each request above it.
func (c *Cluster) GiveBackTurn(ctx context.Context, req *reach.Request) error {
	chain := c.ledgerChain(req)
	ids := make([]string, len(chain))
	for i, q := range chain {
		ids[i] = q.id
	}
	return c.st.DebitAll(ctx, ids, store.Spend{Turns: -1})
}

// giveBackTurn is GiveBackTurn for the requests ids, of a turn AdmitTurn
// refuses after debiting it; a failure is logged (the turn stays counted).
func (c *Cluster) giveBackTurn(ctx context.Context, req *reach.Request, ids []string) {
	if err := c.st.DebitAll(context.WithoutCancel(ctx), ids, store.Spend{Turns: -1}); err != nil {
		c.log.Error("giving back a refused model turn on the shared ledger failed: it stays counted", "request", req.ID(), "err", err)
	}
}

// Spend implements modelproxy.Ledger: a turn's tokens and cost, as
// charged, debited from the shared ledger of req and of each request
// above it.
func (c *Cluster) Spend(ctx context.Context, req *reach.Request, tokens, costNano int64) error {
	chain := c.ledgerChain(req)
	ids := make([]string, len(chain))
	for i, q := range chain {
		ids[i] = q.id
	}
	// All of them or none: a charge the store refused is made again
	// (modelproxy's chargeShared) without counting twice on the first.
	if err := c.st.DebitAll(ctx, ids, store.Spend{Tokens: tokens, CostNano: costNano}); err != nil {
		return err
	}
	crashpoint.Reached("budget.charged")
	return nil
}

// HoldTurn implements modelproxy.Holder: the model turn named turn of req
// holds hold on the shared ledger of req and of each request above it,
// and debits spend from each, under their locks, if each has room for it
// once what it spent and what the live turns of every instance hold are
// counted (or, holding nothing, room for need); otherwise nothing is held,
// and it returns what they have left and free. A hold of this life that
// it does not let go (it died) counts for nothing once its heartbeat is
// older than instance_ttl.
func (c *Cluster) HoldTurn(ctx context.Context, req *reach.Request, turn string, hold, need, spend modelproxy.Spend) (bool, modelproxy.SharedLeft, error) {
	chain := c.ledgerChain(req)
	ids := make([]string, len(chain))
	caps := make([]store.Spend, len(chain))
	for i, l := range chain {
		ids[i], caps[i] = l.id, store.Spend{Tokens: l.budget.Tokens, CostNano: int64(math.Round(l.budget.Cost * 1e9))}
	}
	h, err := c.st.HoldTurn(ctx, turn, c.owner, c.ttl, ids,
		store.Spend{Tokens: hold.Tokens, CostNano: hold.CostNano}, store.Spend{Tokens: need.Tokens, CostNano: need.CostNano},
		store.Spend{Tokens: spend.Tokens, CostNano: spend.CostNano}, caps)
	if err != nil {
		return false, modelproxy.SharedLeft{}, c.storeError("The shared budget of this model turn's request could not be held", req.ID(), err)
	}
	if h.OK {
		crashpoint.Reached("budget.charged") // the prompt, debited with the hold (#1)
		return true, modelproxy.SharedLeft{}, nil
	}
	sl := modelproxy.SharedLeft{Known: true}
	for i, q := range caps {
		if q.Tokens > 0 {
			l, f := q.Tokens-h.Spent[i].Tokens, q.Tokens-h.Spent[i].Tokens-h.Held[i].Tokens
			if !sl.TokensLimited || l < sl.Tokens {
				sl.Tokens = l
			}
			if !sl.TokensLimited || f < sl.FreeTokens {
				sl.FreeTokens = f
			}
			sl.TokensLimited = true
		}
		if q.CostNano > 0 {
			l, f := q.CostNano-h.Spent[i].CostNano, q.CostNano-h.Spent[i].CostNano-h.Held[i].CostNano
			if !sl.CostLimited || l < sl.Cost {
				sl.Cost = l
			}
			if !sl.CostLimited || f < sl.FreeCost {
				sl.FreeCost = f
			}
			sl.CostLimited = true
		}
	}
	return false, sl, nil
}

// Unhold implements modelproxy.Holder: the turn lets go of what it holds.
func (c *Cluster) Unhold(ctx context.Context, turn string) error {
	if err := c.st.Unhold(ctx, turn); err != nil {
		return err
	}
	crashpoint.Reached("budget.unheld") // the turn charged and let go, its answer not passed on
	return nil
}

// turnRefusal is the refusal of a model turn whose budget in dim ("turn",
// "token", "cost") is spent on every instance together.
func turnRefusal(q ledgerLink, dim, spent string) *reach.Error {
	who := "this request"
	if q.sub {
		who = "this sub-agent"
	}
	return &reach.Error{Guard: "admit", Type: reach.TypeBudget, Code: "budget_" + map[string]string{"turn": "turns", "token": "tokens", "cost": "cost"}[dim],
		Message:    fmt.Sprintf("The %s budget of %s (%s) is spent: %s, on every instance.", dim, who, q.id, spent),
		Suggestion: sharedSpentSuggestion("Finish with what you have and give your final answer", q)}
}

// sharedSpentSuggestion is what to do once the shared budget of q is
// spent: first, then, for a root request (whose ledger keeps what each run
// of its id spent, named again after it ended), to ask the user for more
// or for a new request. It tells the model no way round the budget: the
// ledger does not say whether this run is the first, so the words suit
// either.
func sharedSpentSuggestion(first string, q ledgerLink) string {
	if q.sub {
		return first + ", or ask the user for a larger budget."
	}
	return first + ", or ask the user for a larger budget, or for a new request if this is new work: " +
		"a request's budget counts every run of its id (a request named again keeps what it spent)."
}

// errJoinLeft is the store's refusal of a join that reached it after a
// leave of this life's part begun later (postgres.JoinLeft): its caller
// had given up on it.
var errJoinLeft = errors.New("the join reached the store after this instance had left the request's part")

// joinStore sends the join number seq of this life (enterJoin) to the
// store, or, in tests, to sendJoin.
func (c *Cluster) joinStore(ctx context.Context, rec *store.Request, seq int64) (*store.Request, postgres.JoinOutcome, error) {
	if h := c.sendJoin; h != nil {
		return h(ctx, rec, seq)
	}
	return c.st.JoinRequestAfter(ctx, rec, c.owner, c.ttl, seq)
}
