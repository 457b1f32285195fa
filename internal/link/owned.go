package link

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/idempotency"
)

// Owned begins, finds and ends the reach requests that the gateway's
// clients work in: the requests it began for them end after an idle gap
// without calls (never while a call is in flight). Make one with NewOwned;
// its methods are safe for concurrent use.
type Owned struct {
	rt      *reach.Runtime
	life    context.Context // the gateway's lifetime: the requests it begins are its children
	gap     time.Duration
	def     *reach.Budget
	budgets map[string]reach.Budget
	namers  map[string][]Owner  // the principals (each of its tenant) that may name each budget, should it lift a limit of def's
	tenants map[string][]string // the tenants whose principals may name each budget, should it lift one
	now     func() time.Time
	// priorities is the highest priority each principal's requests may
	// have, by its principal in its tenant (WithPriorities); nil: 0 for
	// all.
	priorities func(Owner) int

	remote Remote       // frames other instances run; nil for one instance
	log    *slog.Logger // what a client is not told of a failure (a store's own text)

	mu     sync.Mutex
	owned  map[string]*owned
	traces map[traceKey]string // the request of each caller's trace (forTrace)
	// loose are the requests begun for a call that names no session (an
	// API call, a model turn, a request id a client named), by who began
	// them: at most maxLoose each (Bound).
	loose    map[Owner]map[string]*owned
	maxLoose int
	// pending counts, by owner, the loose requests being begun without
	// q.mu (beginLoose): room counts them; beginning holds a channel,
	// closed once it is tracked, for each named id being begun so.
	pending   map[Owner]int
	beginning map[string]chan struct{}
	// unknown holds the named ids being begun that the runtime knew
	// nothing of when looked up (named): Unknown. Its own map, apart
	// from q.mu: the runtime's Lookup, which named calls with q.mu held,
	// asks it.
	unknown sync.Map // string -> struct{}

	// foreign holds the sub-requests AddSub owns under roots this gateway
	// does not own (a request of the runtime's another part began), by
	// root, running: at most maxSubs each, as an owned root's; each root's
	// are let go, and ended, as its context ends.
	foreign map[*reach.Request][]*reach.Request
	// closed says EndAll ran: no request is begun from then on (a
	// call that would begin one is refused shutting_down).
	closed bool

	// handoffEnd, if set, is called as EndStoppedHandoff begins and what
	// it returns as it returns (SetHandoffEndHook: tests order two ends).
	handoffEnd func(c reach.Cause) func()
}

// Owner is who a request is owned by: its principal in its tenant.
type Owner struct{ Principal, Tenant string }

func ownerOf(who *auth.Identity) Owner {
	if who == nil {
		return Owner{Principal: LocalPrincipal}
	}
	return Owner{Principal: who.Principal, Tenant: who.Tenant}
}

// DefaultBound is how many requests begun for calls that name no session
// one principal keeps running, unless Bound says otherwise.
const DefaultBound = 1000

// Bound sets how many requests begun for calls that name no session (each
// POST /v1/calls without a request id, each model turn linked to nothing,
// each request id a client names, each trace of another tracer a
// sessionless client's calls name) one principal, in its tenant, keeps
// running: past it, its request idle the longest ends early, as the idle
// gap would have ended it, and when all of them have calls in flight the
// call is refused (429 too_many_requests). Each such request runs until
// the idle gap, and nothing else bounded how many one principal began: 10,000
// API calls in 30 s held 116 MB more. n == 0 means DefaultBound, n < 0 no
// bound.
func (q *Owned) Bound(n int) *Owned {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case n == 0:
		q.maxLoose = DefaultBound
	case n < 0:
		q.maxLoose = math.MaxInt
	default:
		q.maxLoose = n
	}
	return q
}

// room makes room for one more loose request of who: it forgets who's
// loose request idle the longest when who has maxLoose, and returns it
// for the caller to end (ending) once q.mu is let go, with its
// sub-requests, or refuses when all of them have calls in flight. q.mu
// is held.
func (q *Owned) room(who *auth.Identity) (*owned, error) {
	k := ownerOf(who)
	mine := q.loose[k]
	if len(mine)+q.pending[k] < q.maxLoose {
		return nil, nil
	}
	var idle *owned
	for _, o := range mine {
		if o.inflight == 0 && (idle == nil || o.last.Before(idle.last)) {
			idle = o
		}
	}
	if idle == nil {
		return nil, KindTooManyRequests.New(fmt.Sprintf("%s has %d requests running with calls in flight, the most one principal may have.", k.Principal, len(mine)+q.pending[k]),
			"Wait for some of these calls to end, or send the request id of one of your requests (request_id, _meta reach/request or the Reach-Request header) to work in it.")
	}
	q.forget(idle.req.ID(), idle)
	return idle, nil
}

// ending ends o, a request no longer owned (forgotten under q.mu, which
// is let go now), and the sub-requests of in-process sub-agents it owned
// (AddSub): their contexts end with its, and each is marked and stored
// ended as it would be at its root's idle gap. Before, a request made
// room for (room) ended alone, and its sub-requests, their contexts
// ended, stayed running in the store and the views
// (TestRoomEndsTheSubsOfTheRequestItEnds).
func (o *owned) ending() {
	if o == nil {
		return
	}
	o.req.End()
	endAll(o.subs)
}

// forget stops owning o (of id). q.mu is held.
func (q *Owned) forget(id string, o *owned) {
	delete(q.owned, id)
	if o.loose {
		if mine := q.loose[o.owner]; mine != nil {
			delete(mine, id)
			if len(mine) == 0 {
				delete(q.loose, o.owner)
			}
		}
	}
}

// traceKey names one caller's trace: a sessionless client's calls in one
// trace share a request.
type traceKey struct {
	owner string
	trace [16]byte
}

// Remote finds the frames that other gateway instances run, on a store
// they share with this one (internal/cluster): the request a call under a
// frame joins (a tool call's own; a hand-off's delegate frame's, its
// sub-request, where the agent works) and its stack, innermost first; no
// stack for a frame unknown there.
type Remote interface {
	Frame(ctx context.Context, id reach.FrameID) (request string, stack []reach.Ancestor, err error)
}

// WithRemote makes a call that names a frame of another instance (not
// kept here) run under that frame's stack, adopted (see
// reach.Runtime.AdoptAncestry), in the request it belongs to, joined
// here. Call it before the first call.
func (q *Owned) WithRemote(r Remote) *Owned {
	q.remote = r
	return q
}

// WithPriorities gives each request begun the priority its principal may
// use (R8: above 0 it may take the rate limits' reserve), lowered by the
// priority the call that begins it asks for (Target.Priority), never
// raised past it. of is asked by the principal in its tenant: the same
// name in another tenant is someone else. Without it a request's priority
// is 0, or lower if asked.
func (q *Owned) WithPriorities(of func(Owner) int) *Owned {
	q.priorities = of
	return q
}

// WithLogger logs there the failures a refusal does not tell (a store's,
// a driver's or a decoder's own text); without it they are not logged.
func (q *Owned) WithLogger(l *slog.Logger) *Owned {
	if l != nil {
		q.log = l
	}
	return q
}

type owned struct {
	req      *reach.Request
	last     time.Time
	inflight int
	// remote marks a request begun here for a parent frame kept elsewhere:
	// another reach in front of this one, which sends its call's frame and
	// request on as it does to every upstream (see elsewhere).
	remote bool
	// loose marks a request begun for a call that names no session,
	// counted in Owned.loose under its owner.
	loose bool
	owner Owner
	// subs are the sub-requests of in-process sub-agents begun in it
	// (AddSub), running: each ends when the turn it was handed by goes on
	// (EndSubs), or with the request.
	subs []*reach.Request
}

// Budgets are the budgets a client may name: Default for a request that
// names none (nil: the runtime's), and the configured ones by name.
// Principals lists, by budget, who may name it if it lifts a limit of the
// default's (budget.Lifts): each a principal of its tenant (Tenant "": of
// no tenant; the same name in another tenant is someone else), Principal
// "*" every principal of that tenant, and "*" of no tenant every principal
// of every tenant; Tenants lists the tenants every principal of which may.
// Any client may name one that only lowers limits, and no client one that
// lifts and lists nobody. Names are compared as identities are (Owner):
// exactly, byte for byte, no case folded and no Unicode normalized.
type Budgets struct {
	Default    *reach.Budget
	Named      map[string]reach.Budget
	Principals map[string][]Owner
	Tenants    map[string][]string
}

// NewOwned returns the requests the gateway owns in rt: begun in life,
// ended after gap without calls.
func NewOwned(life context.Context, rt *reach.Runtime, gap time.Duration, b Budgets) *Owned {
	q := &Owned{rt: rt, gap: gap, def: b.Default, budgets: b.Named, namers: b.Principals, tenants: b.Tenants, now: time.Now, owned: map[string]*owned{}, maxLoose: DefaultBound,
		log: slog.New(slog.DiscardHandler)}
	q.life = context.WithValue(life, lifeKey{}, q) // marks the requests it begins (see mergeCancel)
	return q
}

// lifeKey marks the contexts of the requests an Owned began: its life's
// children.
type lifeKey struct{}

// BudgetSpec is what a client asked for: a configured budget's name, or
// amounts (each capped at the default budget's, so a client may narrow its
// budget but never widen it).
type BudgetSpec struct {
	Name   string
	Budget *reach.Budget
}

// ParseBudgetSpec reads a "reach/budget" value: "name" or {"turns": ...}.
func ParseBudgetSpec(v any) (*BudgetSpec, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &BudgetSpec{Name: x}, nil
	case map[string]any:
		b, _ := json.Marshal(x)
		var bc struct {
			Turns     int     `json:"turns"`
			Depth     int     `json:"depth"`
			ToolCalls int     `json:"tool_calls"`
			Tokens    int64   `json:"tokens"`
			Cost      float64 `json:"cost"`
			Wall      string  `json:"wall"`
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&bc); err != nil {
			return nil, fmt.Errorf(`reach/budget: %v; send a budget name or {"turns", "depth", "tool_calls", "tokens", "cost", "wall": "10m"}`, err)
		}
		rb := reach.Budget{Turns: bc.Turns, Depth: bc.Depth, ToolCalls: bc.ToolCalls, Tokens: bc.Tokens, Cost: bc.Cost}
		if bc.Wall != "" {
			d, err := time.ParseDuration(bc.Wall)
			if err != nil {
				return nil, fmt.Errorf("reach/budget: wall %q is not a duration such as \"10m\"", bc.Wall)
			}
			rb.Wall = d
		}
		if rb.Turns < 0 || rb.Depth < 0 || rb.ToolCalls < 0 || rb.Tokens < 0 || rb.Cost < 0 || rb.Wall < 0 {
			return nil, errors.New("reach/budget: amounts must not be negative; leave one out (or 0) for the default's, or send a smaller positive one")
		}
		return &BudgetSpec{Budget: &rb}, nil
	}
	return nil, fmt.Errorf("reach/budget: want a budget name or an object, got %T", v)
}

// withinDefault is an example of amounts a caller may send without a
// budget's name: the default's own tool calls (amounts are capped at the
// default's), or, with no cap on them, a word saying so.
func (q *Owned) withinDefault() string {
	d := q.def
	if d == nil {
		rd := q.rt.DefaultBudget()
		d = &rd
	}
	if d.ToolCalls > 0 {
		return fmt.Sprintf("reach/budget {\"tool_calls\": %d} or fewer", d.ToolCalls)
	}
	return "reach/budget amounts at most the default's"
}

// budget resolves a spec to the budget a new request of who gets (nil: the
// runtime's default). A budget that lifts a limit of the default's is
// refused (403 budget_not_permitted) to a principal it does not list, and
// the budgets named in a refusal are only those who may name.
func (q *Owned) budget(s *BudgetSpec, who *auth.Identity) (*reach.Budget, error) {
	if s == nil {
		return q.def, nil
	}
	if s.Name != "" {
		caller := ownerOf(who)
		b, ok := q.budgets[s.Name]
		if ok && q.mayName(s.Name, caller) {
			return &b, nil
		}
		names := q.nameable(caller)
		if !ok {
			if len(names) == 0 {
				return nil, fmt.Errorf("there is no budget named %q, and none this principal may name; leave the budget out for the default, or send smaller amounts", s.Name)
			}
			return nil, fmt.Errorf("there is no budget named %q; budgets this principal may name: %s", s.Name, strings.Join(names, ", "))
		}
		next := "Leave the budget out for the default, or send amounts within it (" + q.withinDefault() + ")"
		if len(names) > 0 {
			next = "Name a budget you may (" + strings.Join(names, ", ") + "), send amounts within the default (" + q.withinDefault() + ") or none for the default"
		}
		return nil, KindBudgetNotPermitted.New(fmt.Sprintf("Budget %q lifts a limit of the default budget, and principal %q%s is not one it lists (budgets.%s.principals, budgets.%s.tenants); nothing ran.", s.Name, caller.Principal, ofTenant(caller.Tenant), s.Name, s.Name),
			next+"; or ask the operator to add you (or your tenant) to it"+addYou(s.Name, caller)+".")
	}
	b := *s.Budget
	d := q.def
	if d == nil { // no default configured: the runtime's caps
		rd := q.rt.DefaultBudget()
		d = &rd
	}
	b.Turns = capInt(b.Turns, d.Turns)
	b.Depth = capInt(b.Depth, d.Depth)
	b.ToolCalls = capInt(b.ToolCalls, d.ToolCalls)
	b.Tokens = int64(capInt(int(b.Tokens), int(d.Tokens)))
	b.Wall = time.Duration(capInt(int(b.Wall), int(d.Wall)))
	if d.Cost > 0 && (b.Cost == 0 || b.Cost > d.Cost) {
		b.Cost = d.Cost
	}
	return &b, nil
}

// ofTenant is " of tenant T" for a refusal's text, or nothing when the
// caller has no tenant.
func ofTenant(t string) string {
	if t == "" {
		return ""
	}
	return fmt.Sprintf(" of tenant %q", t)
}

// addYou is how the operator lists caller in budget name, for a refusal's
// suggestion: a principal of a tenant is listed with its tenant, since a
// bare name is that principal of no tenant.
func addYou(name string, caller Owner) string {
	if caller.Tenant == "" {
		return fmt.Sprintf(" (budgets.%s.principals: [%q])", name, caller.Principal)
	}
	return fmt.Sprintf(" (budgets.%s.principals: [{principal: %q, tenant: %q}], not a bare %q, which is the principal of no tenant; or budgets.%s.tenants: [%q])", name, caller.Principal, caller.Tenant, caller.Principal, name, caller.Tenant)
}

// mayName reports whether caller may name the budget name (one it knows):
// it lowers the default's limits only, or lists caller's principal in
// caller's tenant (a bare name is of no tenant), "*" in caller's tenant,
// "*" of no tenant (every one), or caller's tenant (a caller with no
// tenant is in none).
func (q *Owned) mayName(name string, caller Owner) bool {
	d := q.def
	if d == nil {
		rd := q.rt.DefaultBudget()
		d = &rd
	}
	if len(budget.Lifts(q.budgets[name], *d)) == 0 {
		return true
	}
	for _, p := range q.namers[name] {
		if p.Principal == "*" && p.Tenant == "" || (p.Principal == "*" || p.Principal == caller.Principal) && p.Tenant == caller.Tenant {
			return true
		}
	}
	return caller.Tenant != "" && slices.Contains(q.tenants[name], caller.Tenant)
}

// nameable returns the budgets caller may name, sorted.
func (q *Owned) nameable(caller Owner) []string {
	var out []string
	for n := range q.budgets {
		if q.mayName(n, caller) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// capInt caps v at limit, where zero means unlimited for both (a
// negative v, refused before, counts as unlimited too).
func capInt(v, limit int) int {
	if limit == 0 {
		return v
	}
	if v <= 0 || v > limit {
		return limit
	}
	return v
}

// begin starts a request the gateway owns for a call linked by t, with the
// budget t names, and tracks it (inflight 1): t's agent and scene, the caller's trace when t
// has one. An empty id is made by the runtime (the request is then Fresh:
// its begin need not wait for the store). q.mu is held.
func (q *Owned) begin(id string, t Target, who *auth.Identity) (*reach.Request, error) {
	_, r, err := q.beginAs(id, t, who, false)
	return r, err
}

// beginAs is begin; a loose request (loose) is counted as one of who's
// (room). q.mu is held.
func (q *Owned) beginAs(id string, t Target, who *auth.Identity, loose bool) (*owned, *reach.Request, error) {
	if q.closed {
		return nil, nil, shuttingDown()
	}
	r, err := q.rtBegin(id, t, who)
	if err != nil {
		return nil, nil, err
	}
	return q.trackLocked(r, who, loose), r, nil
}

// rtBegin begins request id (made by the runtime if "") in the runtime:
// on several instances, a round trip to the store (the request joined, or
// written). It needs no q.mu.
func (q *Owned) rtBegin(id string, t Target, who *auth.Identity) (*reach.Request, error) {
	b, err := q.budget(t.Budget, who)
	if err != nil {
		return nil, err
	}
	o := &reach.RequestOptions{ID: id, Principal: LocalPrincipal, Agent: t.Agent, Scene: t.Scene, Budget: b, Trace: t.TraceID}
	if who != nil {
		who.Apply(o)
	}
	if q.priorities != nil {
		o.Priority = q.priorities(ownerOf(who))
	}
	if t.Priority != nil {
		o.Priority = min(o.Priority, *t.Priority)
	}
	_, r, err := q.rt.Begin(q.life, o)
	return r, err
}

// trackLocked owns r, begun for who, with one call in flight. q.mu is
// held.
func (q *Owned) trackLocked(r *reach.Request, who *auth.Identity, loose bool) *owned {
	ow := &owned{req: r, last: q.now(), inflight: 1, loose: loose}
	q.owned[r.ID()] = ow
	if loose {
		k := ownerOf(who)
		ow.owner = k
		if q.loose == nil {
			q.loose = map[Owner]map[string]*owned{}
		}
		if q.loose[k] == nil {
			q.loose[k] = map[string]*owned{}
		}
		q.loose[k][r.ID()] = ow
	}
	return ow
}

// named returns the request t names for one call (release it when the
// call is done): a running or stopped request of that id, or a new one
// with t's budget spec when there is none or it has completed (a
// completed sub-request is refused: 409 request_ended).
func (q *Owned) named(t Target, who *auth.Identity) (*reach.Request, *callHold, error) {
	id := t.Request
	q.mu.Lock()
	for ch := q.beginning[id]; ch != nil; ch = q.beginning[id] {
		// Being begun by another call (beginLoose): it is that request.
		q.mu.Unlock()
		<-ch
		q.mu.Lock()
	}
	if r, ok := q.rt.Lookup(id); ok {
		if err := CheckCaller(who, r); err != nil {
			q.mu.Unlock()
			return nil, nil, err
		}
		if r.State() != reach.RequestCompleted {
			defer q.mu.Unlock()
			return r, q.holdLocked(r), nil
		}
		if p := r.ParentID(); p != "" {
			// A hand-off's sub-request, completed (held, or restored by
			// its id after a restart): begun again by its id it would be a
			// root of its own, outside its parent's budget and stops (with
			// a budget its caller names, or the default).
			q.mu.Unlock()
			return nil, nil, KindRequestEnded.New(fmt.Sprintf("Request %s was a hand-off of request %s and has ended; nothing ran.", id, p),
				fmt.Sprintf("Work in request %s (reach/request, Reach-Request), or leave the request id out to begin a new request.", p))
		}
	} else if id != "" {
		// The runtime has no request id (nor its history): Begin need not
		// read the store for it again (Unknown). Its begin is the only
		// one of id here (beginning, below).
		q.unknown.Store(id, struct{}{})
	}
	return q.beginLoose(id, t, who)
}

// Unknown reports whether id is a named request being begun that the
// runtime knew nothing of, in memory or in its history, when the call that
// begins it looked it up: the runtime's Options.History may answer none
// for it without reading the store again. Another instance may begin and
// end it meanwhile; its shared ledger still counts what that run spent.
func (q *Owned) Unknown(id string) bool {
	_, ok := q.unknown.Load(id)
	return ok
}

// beginLoose begins a loose request for one call, making room for it
// (room); q.mu is held, and let go. The runtime's Begin runs without q.mu:
// on several instances it is the store's join of the request, which may
// wait up to a TTL (a busy ledger lock, a slow store), and every call of
// the gateway that finds or begins its request waited behind it. A call
// naming id meanwhile waits for this begin (named), not for the lock.
func (q *Owned) beginLoose(id string, t Target, who *auth.Identity) (*reach.Request, *callHold, error) {
	gone, err := q.room(who)
	if err == nil && q.closed {
		gone, err = nil, shuttingDown()
	}
	if err != nil {
		q.unknown.Delete(id) // not begun: its mark (named) goes with it
		q.mu.Unlock()
		return nil, nil, err
	}
	k := ownerOf(who)
	if q.pending == nil {
		q.pending = map[Owner]int{}
	}
	q.pending[k]++
	var ch chan struct{}
	if id != "" {
		if q.beginning == nil {
			q.beginning = map[string]chan struct{}{}
		}
		ch = make(chan struct{})
		q.beginning[id] = ch
	}
	q.mu.Unlock()
	gone.ending()
	r, err := q.rtBegin(id, t, who)
	q.mu.Lock()
	if q.pending[k]--; q.pending[k] == 0 {
		delete(q.pending, k)
	}
	if ch != nil {
		delete(q.beginning, id)
		q.unknown.Delete(id)
		close(ch)
	}
	ended := err == nil && q.closed // EndAll ran meanwhile: r is not owned, and ends here
	if err == nil && !ended {
		q.trackLocked(r, who, true)
	}
	q.mu.Unlock()
	if ended {
		r.End()
		err = shuttingDown()
	}
	if err != nil {
		return nil, nil, err
	}
	return r, q.releaser(r), nil
}

// shuttingDown refuses a call that would begin a request once EndAll ran:
// the gateway stops.
func shuttingDown() *Error {
	return KindShuttingDown.New("The gateway is shutting down and begins no more requests. Nothing ran.",
		"Call again in a moment: through another instance of the gateway, or this one once it is back; the call did not run, so it is safe to repeat.")
}

// elsewhere reports whether a parent frame that is not kept here, in the
// request id, is another process's rather than a client's mistake: the
// request is not kept here either (another reach in front of this one
// names its own call's frame and request, and the call then begins that
// request here), or it was begun here that way (markRemote). A parent
// unknown in a request this reach began for itself is still refused
// (unknown_parent): a frame id mistyped or from another request.
func (q *Owned) elsewhere(id string) bool {
	if id == "" {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if o, ok := q.owned[id]; ok {
		return o.remote
	}
	_, ok := q.rt.Lookup(id)
	return !ok
}

// markRemote marks r as begun for a parent frame kept elsewhere.
func (q *Owned) markRemote(r *reach.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if o, ok := q.owned[r.ID()]; ok {
		o.remote = true
	}
}

// fresh begins a new request with a random id for one call.
func (q *Owned) fresh(t Target, who *auth.Identity) (*reach.Request, *callHold, error) {
	q.mu.Lock()
	return q.beginLoose("", t, who)
}

// Session is the request a client session works in, made on its first call
// and again once the request ended or has been idle for the gap. The zero
// Session has no request yet; a Session's fields are guarded by its
// Owned's lock.
type Session struct {
	request string    // the current request
	made    time.Time // when the session was made, for Current
	// client marks the calls of a sessionless client (NewClient), which
	// several runs may share: see forClient.
	client   bool
	inflight int // the client's calls in flight (a sessionless client's)
}

// NewSession returns a session made now.
func (q *Owned) NewSession() *Session { return &Session{made: q.now()} }

// IsClient reports whether s is a sessionless client's (NewClient).
func (s *Session) IsClient() bool { return s.client }

// NewClient returns the state of a sessionless client (all the calls of
// one principal and clientInfo without a session), made now. Unlike a
// session's, its calls share a request only while they follow one another
// (see forClient).
func (q *Owned) NewClient() *Session { return &Session{made: q.now(), client: true} }

// forSession returns the request of a client session for one call: the
// session's current request while it is running or stopped and has been
// idle less than the gap, otherwise a new one, which becomes current.
func (q *Owned) forSession(s *Session, t Target, who *auth.Identity) (*reach.Request, *callHold, error) {
	if s.client {
		return q.forClient(s, t, who)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.request != "" {
		if o, ok := q.owned[s.request]; ok && o.req.State() != reach.RequestCompleted && (o.inflight > 0 || q.now().Sub(o.last) < q.gap) {
			if err := CheckCaller(who, o.req); err != nil {
				return nil, nil, err
			}
			return o.req, q.holdLocked(o.req), nil
		}
	}
	r, err := q.begin("", t, who)
	if err != nil {
		return nil, nil, err
	}
	s.request = r.ID()
	return r, q.releaser(r), nil
}

// forClient returns the request of a sessionless client's call that names
// no request and is linked to nothing. A sessionless client is known only
// by its principal and clientInfo, which every run of one app shares, so its
// calls share a request only while there is evidence that one agent makes
// them, one after another: a call made while none of the client's is in
// flight, within the idle gap of the last one, continues the client's
// current request, if that request is still running (a stopped one never
// captures a new run: the call begins a new request, which becomes
// current). A call made while another of the client's is in flight is
// another run's, or one of several calls an agent makes at once: it runs in
// a request of its own, which ends with it, and the current request is no
// longer current — several runs may be under way, so the next call that
// follows none begins a new one. The coincident calls of many clients of
// one app are thus never counted as one agent's repeats, while an agent
// that calls one tool after another in a loop is.
func (q *Owned) forClient(s *Session, t Target, who *auth.Identity) (*reach.Request, *callHold, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.inflight == 0 && s.request != "" {
		if o, ok := q.owned[s.request]; ok && o.req.State() == reach.RequestRunning && (o.inflight > 0 || q.now().Sub(o.last) < q.gap) {
			if err := CheckCaller(who, o.req); err != nil {
				return nil, nil, err
			}
			return o.req, q.clientHold(s, q.holdLocked(o.req)), nil
		}
	}
	r, err := q.begin("", t, who)
	if err != nil {
		return nil, nil, err
	}
	if s.inflight > 0 { // concurrent: a request of its own, for this call
		s.request = ""
		h := q.clientHold(s, q.releaser(r))
		h.end = true
		return r, h, nil
	}
	s.request = r.ID()
	return r, q.clientHold(s, q.releaser(r)), nil
}

// forTrace returns the request of a sessionless client's call in another
// tracer's trace (a traceparent whose parent span is not a frame of ours):
// the calls of one caller in one trace share a request while it is running
// and has been idle less than the gap; otherwise the call begins a new
// one, in that trace.
func (q *Owned) forTrace(t Target, who *auth.Identity) (*reach.Request, *callHold, error) {
	key := traceKey{trace: t.TraceID}
	if who != nil {
		lead, principal, tenant := idempotency.Owner(who.Principal, who.Tenant)
		key.owner = lead + tenant + "\x00" + principal
	}
	q.mu.Lock()
	if id, ok := q.traces[key]; ok {
		if o, ok := q.owned[id]; ok && o.req.State() == reach.RequestRunning && (o.inflight > 0 || q.now().Sub(o.last) < q.gap) {
			defer q.mu.Unlock()
			return o.req, q.holdLocked(o.req), nil
		}
		delete(q.traces, key)
	}
	// Each trace a client names begins a request: loose, bounded as the
	// requests of calls that name nothing are.
	gone, err := q.room(who)
	var r *reach.Request
	if err == nil {
		_, r, err = q.beginAs("", t, who, true)
	}
	if err == nil {
		if q.traces == nil {
			q.traces = map[traceKey]string{}
		}
		q.traces[key] = r.ID()
	}
	q.mu.Unlock()
	gone.ending()
	if err != nil {
		return nil, nil, err
	}
	return r, q.releaser(r), nil
}

// clientHold counts one more call of a sessionless client s in flight on
// h, which its release counts done. q.mu is held.
func (q *Owned) clientHold(s *Session, h *callHold) *callHold {
	s.inflight++
	h.client = s
	return h
}

// Current reports whether a session's request is still one the gateway
// owns, or, for a session without one yet, whether it was made within the
// idle gap.
func (q *Owned) Current(s *Session) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.inflight > 0 {
		return true
	}
	if s.request == "" {
		return q.now().Sub(s.made) < q.gap
	}
	_, ok := q.owned[s.request]
	return ok
}

// Request returns the id of a session's current request ("" before its
// first call).
func (q *Owned) Request(s *Session) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return s.request
}

// EndSession ends a session's request now (its client left).
func (q *Owned) EndSession(s *Session) {
	q.mu.Lock()
	id := s.request
	q.mu.Unlock()
	if id != "" {
		q.End(id)
	}
}

// hold marks one more call in flight on r (if the gateway owns it).
func (q *Owned) hold(r *reach.Request) *callHold {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.holdLocked(r)
}

func (q *Owned) holdLocked(r *reach.Request) *callHold {
	o, ok := q.owned[r.ID()]
	if !ok || o.req != r {
		return &callHold{q: q}
	}
	o.inflight++
	o.last = q.now()
	return q.releaser(r)
}

// releaser returns the hold of a call on r, whose inflight count the
// caller has counted it in.
func (q *Owned) releaser(r *reach.Request) *callHold { return &callHold{q: q, r: r} }

// callHold is one call's hold on the request it runs in (the request's
// calls in flight, and a sessionless client's), and what ends the call's
// context: all that done (finish) undoes, in one allocation, where each
// part was a closure with a sync.Once of its own (6 allocations for a
// sessionless client's call in a request of its own).
type callHold struct {
	q      *Owned
	r      *reach.Request // nil: a request the gateway does not own, not counted
	client *Session       // a sessionless client's call, counted in its client's too
	end    bool           // a request of the call's own, ended with it
	// The call's context's stop (mergeCancel's), or its cancel when stop
	// is nil.
	stop   func()
	cancel context.CancelCauseFunc
	done   atomic.Bool
}

// release counts the call done, once: in its request (which becomes idle
// from now) and its client; a request of the call's own then ends.
func (h *callHold) release() {
	if !h.done.CompareAndSwap(false, true) {
		return
	}
	q := h.q
	q.mu.Lock()
	if h.r != nil {
		if o, ok := q.owned[h.r.ID()]; ok && o.req == h.r {
			o.inflight--
			o.last = q.now()
		}
	}
	if h.client != nil {
		h.client.inflight--
	}
	q.mu.Unlock()
	if h.end {
		q.End(h.r.ID())
	}
}

// finish is a call's done: its context ends, then its hold is released.
func (h *callHold) finish() {
	if h.stop != nil {
		h.stop()
	} else {
		h.cancel(nil)
	}
	h.release()
}

// Sweep ends the owned requests idle for longer than the gap and forgets
// ended ones.
func (q *Owned) Sweep() {
	q.mu.Lock()
	var ending []*reach.Request
	now := q.now()
	for id, o := range q.owned {
		if o.inflight > 0 || now.Sub(o.last) < q.gap {
			continue
		}
		ending = append(ending, o.req)
		ending = append(ending, o.subs...)
		q.forget(id, o)
	}
	for k, id := range q.traces {
		if _, ok := q.owned[id]; !ok {
			delete(q.traces, k)
		}
	}
	q.mu.Unlock()
	for _, r := range ending {
		r.End()
	}
}

// Run sweeps until ctx ends, a tenth of the gap apart (10 ms to 30 s),
// calling after after each sweep.
func (q *Owned) Run(ctx context.Context, after func()) {
	every := min(max(q.gap/10, 10*time.Millisecond), 30*time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		q.Sweep()
		after()
	}
}

// End ends the owned request id now.
func (q *Owned) End(id string) {
	q.mu.Lock()
	o, ok := q.owned[id]
	if ok {
		q.forget(id, o)
	}
	q.mu.Unlock()
	if ok {
		o.req.End()
		endAll(o.subs)
	}
}

// endAll ends rs.
func endAll(rs []*reach.Request) {
	for _, r := range rs {
		r.End()
	}
}

// maxSubs bounds the in-process sub-agents' sub-requests one request
// keeps running (AddSub), owned here or not: past it the oldest is ended.
const maxSubs = 256

// AddSub owns sub, the sub-request an in-process sub-agent runs in (a
// tool of the agent's whose code runs another agent): it ends when the
// turn that handed it its task goes on (EndSubs), or with its root, as no
// client ends it (an A2A hand-off ends with its task). A root not owned
// here ends it as its context ends. At most maxSubs run in one root,
// owned here or not: past them the oldest ends (its sub-agent's next turn
// is refused request_ended, which says to begin a new request). Before,
// the sub-requests of a root not owned here were not counted: a client
// could keep any number of them running under one
// (TestForeignRootSubsBounded).
func (q *Owned) AddSub(sub *reach.Request) {
	root := sub.Root()
	q.mu.Lock()
	var old *reach.Request
	if o, ok := q.owned[root.ID()]; ok && o.req == root {
		old, o.subs = addBounded(o.subs, sub)
		q.mu.Unlock()
	} else {
		subs, seen := q.foreign[root]
		if q.foreign == nil {
			q.foreign = map[*reach.Request][]*reach.Request{}
		}
		old, q.foreign[root] = addBounded(subs, sub)
		q.mu.Unlock()
		if !seen {
			// The root's sub-requests are let go as its context ends,
			// ended if it did (not when its context ended with it
			// running).
			context.AfterFunc(root.Context(), func() {
				q.mu.Lock()
				subs := q.foreign[root]
				delete(q.foreign, root)
				q.mu.Unlock()
				if root.State() != reach.RequestRunning {
					endAll(subs)
				}
			})
		}
	}
	if old != nil {
		old.End()
	}
}

// addBounded adds sub to subs, those completed left out: past maxSubs it
// leaves out the oldest too, and returns it, for the caller to end once
// q.mu is let go.
func addBounded(subs []*reach.Request, sub *reach.Request) (old *reach.Request, _ []*reach.Request) {
	subs = slices.DeleteFunc(subs, completed)
	if len(subs) >= maxSubs {
		old, subs = subs[0], subs[1:]
	}
	return old, append(subs, sub)
}

// completed reports whether r has ended, not stopped.
func completed(r *reach.Request) bool { return r.State() == reach.RequestCompleted }

// EndSubs ends the sub-requests of the in-process sub-agents that model
// turn f handed their tasks to (AddSub): the conversation f is in goes on,
// with what the tool that ran each returned.
func (q *Owned) EndSubs(f *reach.Frame) {
	root := f.Request.Root()
	var ending []*reach.Request
	q.mu.Lock()
	if o, ok := q.owned[root.ID()]; ok && o.req == root {
		o.subs = slices.DeleteFunc(o.subs, func(r *reach.Request) bool {
			if d := r.DelegateFrame(); d != nil && d.Parent == f {
				ending = append(ending, r)
				return true
			}
			return completed(r)
		})
	}
	q.mu.Unlock()
	endAll(ending)
}

// EndAll ends every request the gateway owns, and the sub-requests it
// owns under roots it does not (AddSub). From then on it begins no
// request: a call that would begin one is refused shutting_down (the
// gateway stops), as the runtime refuses a call once it drains.
func (q *Owned) EndAll() {
	q.mu.Lock()
	q.closed = true
	rs := make([]*reach.Request, 0, len(q.owned))
	for id, o := range q.owned {
		rs = append(rs, o.req)
		rs = append(rs, o.subs...)
		q.forget(id, o)
	}
	for root, subs := range q.foreign {
		rs = append(rs, subs...)
		delete(q.foreign, root)
	}
	q.mu.Unlock()
	for _, r := range rs {
		r.End()
	}
}

// MaxRequestID bounds a request id a client names.
const MaxRequestID = 128

// unshown reports whether r is a character a request id may not hold: a
// control or format character, or a line or paragraph separator. The id
// is shown to operators (the UI's pages, the audit, the logs), where a
// right-to-left override or a zero-width space would make one request
// look like another ("r1" and "r1\u200b"), as an agent's name may not.
func unshown(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// CallContext returns the context a call from a client runs in: under the frame
// t names (Reach-Parent, reach/parent, or the parent span of a traceparent
// when that is one of ours), found with [reach.Request.Frame] and entered
// with [reach.WithParent], so that any frame of a kept request can be a
// parent: a running tool call, a model turn, an ended call. A call naming
// no frame runs at the top of its request: the one t names, else the
// client session's (s), else a new one (s nil). The returned context ends
// when the parent's request or ctx does. Call done when the call is over.
// A client's mistake is an *Error.
func (q *Owned) CallContext(ctx context.Context, t Target, s *Session) (_ context.Context, _ *reach.Request, done func(), _ error) {
	cctx, r, _, h, err := q.callContext(ctx, t, s)
	if err != nil {
		return nil, nil, nil, err
	}
	return cctx, r, h.finish, nil
}

// CancelableCallContext is CallContext that also returns the call's
// cancel: cancel(cause) ends the returned context with that cause. A
// caller that must be able to end one call (a client's cancellation) uses
// it rather than deriving a context of its own from ctx first, which
// would cost every call a context more. Its done is a CallDone, not a
// func: the func, a method value of the call's hold, was an allocation
// of its own on every call.
func (q *Owned) CancelableCallContext(ctx context.Context, t Target, s *Session) (_ context.Context, cancel context.CancelCauseFunc, _ *reach.Request, done CallDone, _ error) {
	cctx, r, cancel, h, err := q.callContext(ctx, t, s)
	return cctx, cancel, r, CallDone{h}, err
}

// CallDone ends a call begun with CancelableCallContext (Done), as
// CallContext's done does. The zero CallDone, an error's, does nothing.
type CallDone struct{ h *callHold }

// Done is the call's done: its context ends, then its hold on its request
// is released.
func (d CallDone) Done() {
	if d.h != nil {
		d.h.finish()
	}
}

func (q *Owned) callContext(ctx context.Context, t Target, s *Session) (_ context.Context, _ *reach.Request, _ context.CancelCauseFunc, done *callHold, _ error) {
	who, _ := auth.IdentityFrom(ctx)
	if len(t.Request) > MaxRequestID { // however it came: _meta, a header, baggage
		return nil, nil, nil, nil, KindBadRequestID.New(fmt.Sprintf("The request id is longer than %d characters.", MaxRequestID), "Use a shorter id.")
	}
	if !utf8.ValidString(t.Request) || strings.ContainsFunc(t.Request, unshown) { // it is shown to operators
		return nil, nil, nil, nil, KindBadRequestID.New("The request id has a control character or a format character (a right-to-left override, a zero-width space, a line separator), or is not UTF-8.",
			"Use printable characters only.")
	}
	if id := t.Parent; id != 0 || t.Trace != 0 {
		if id == 0 {
			id = t.Trace
		}
		f := q.findFrame(t.Request, id)
		// A frame of another principal found by its id alone is answered
		// as one that is not there: a frame id is the time and a count,
		// not a secret, and the refusal of its owner's request (or the
		// mismatch of another request) named that request, which is not
		// the caller's to know. Named with its request, it is that
		// request's refusal, of an id the caller sent.
		foreign := f != nil && t.Request == "" && CheckOwner(who, f.Request) != nil
		if foreign {
			f = nil
		}
		if f == nil && t.Request != "" {
			if o := q.findFrame("", id); o != nil && CheckOwner(who, o.Request) != nil {
				foreign = true
			} else if o != nil {
				return nil, nil, nil, nil, KindParentMismatch.New(fmt.Sprintf("Frame %s does not belong to request %s.", id, t.Request),
					"Send the request id of the parent frame, or drop one of the two.")
			}
		}
		if f == nil && q.remote != nil && !foreign {
			cctx, r, cancel, done, err := q.adopt(ctx, t, id, who)
			if err != nil || r != nil {
				return cctx, r, cancel, done, err
			}
		}
		if f == nil && t.Parent != 0 && !q.elsewhere(t.Request) {
			where := "any request kept here"
			if t.Request != "" {
				where = "request " + t.Request
			}
			return nil, nil, nil, nil, KindUnknownParent.New(fmt.Sprintf("There is no frame %s in %s.", t.Parent, where),
				"Send the id of a frame (reach graph REQUEST --format json, or GET /v1/requests/{id}/graph, lists them), or omit the parent.")
		}
		if f == nil {
			// Not a frame of ours: the call is linked as if it named none
			// (below), by the model turn that chose it, if its caller's.
			if c := t.modelTurn(); c != nil && CheckCaller(who, c.Request) == nil {
				f = c
			}
		}
		if f != nil {
			if err := CheckCaller(who, f.Request); err != nil {
				return nil, nil, nil, nil, err
			}
			return q.under(ctx, f)
		}
		// A traceparent from another tracer: not a frame of ours.
	}
	if f := t.modelTurn(); f != nil && CheckCaller(who, f.Request) == nil {
		return q.under(ctx, f)
	}
	var r *reach.Request
	var release *callHold
	var err error
	switch {
	case t.Request != "":
		r, release, err = q.named(t, who)
		if err == nil && t.Parent != 0 { // a parent found here ran the call above
			q.markRemote(r)
		}
	case s != nil && s.client && t.TraceID != ([16]byte{}):
		r, release, err = q.forTrace(t, who)
	case s != nil:
		r, release, err = q.forSession(s, t, who)
	default:
		r, release, err = q.fresh(t, who)
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return nil, nil, nil, nil, err
	}
	if re, ok := errors.AsType[*reach.Error](err); ok {
		// A refusal of the id (an interrupted request's, kept by the store
		// only): as structured as a call's.
		return nil, nil, nil, nil, refusedID(re)
	}
	if err != nil {
		return nil, nil, nil, nil, KindBadRequestSpec.New(err.Error()+".",
			"Fix the request id or budget, or leave them out.")
	}
	cctx, cancel, stop := q.mergeCancel(r.Context(), ctx)
	if t.Trace != 0 && t.TraceID != ([16]byte{}) {
		// Another tracer's span called: in its trace, the call's span is
		// that span's child (the runtime checks the request is in it).
		var span [8]byte
		binary.BigEndian.PutUint64(span[:], uint64(t.Trace))
		cctx = reach.WithRemoteParent(cctx, t.TraceID, span)
	}
	return cctx, r, cancel, join(stop, cancel, release), nil
}

// adopt places a call under frame id of another instance: in the request
// a call under the frame joins (Remote; t's must be it), joined here,
// under its stack: a hand-off's under another instance's hand-off nests
// in its sub-request, one level below it, and is checked against its
// stack as on one instance. It returns no request for a frame no instance
// knows.
func (q *Owned) adopt(ctx context.Context, t Target, id reach.FrameID, who *auth.Identity) (context.Context, *reach.Request, context.CancelCauseFunc, *callHold, error) {
	reqID, stack, err := q.remote.Frame(ctx, id)
	if err != nil {
		// The store's own text (a driver's, with its host or SQL) is
		// logged, not told.
		q.log.Warn("parent frame not looked up: the shared store did not answer", "frame", id, "request", t.Request, "err", err)
		return nil, nil, nil, nil, KindStoreUnavailable.New(fmt.Sprintf("Frame %s could not be looked up in the shared store: it did not answer.", id),
			"Nothing ran. Try again in a moment.")
	}
	if len(stack) == 0 {
		return nil, nil, nil, nil, nil
	}
	if t.Request != "" && t.Request != reqID {
		return nil, nil, nil, nil, KindParentMismatch.New(fmt.Sprintf("Frame %s does not belong to request %s.", id, t.Request),
			"Send the request id of the parent frame, or drop one of the two.")
	}
	named := t.Request != ""
	t.Request = reqID
	r, release, err := q.named(t, who)
	if err != nil {
		if !named && notYours(err) {
			// Another principal's frame, found by its id alone: as one
			// no instance knows (callContext), naming no request.
			return nil, nil, nil, nil, nil
		}
		if re, ok := errors.AsType[*reach.Error](err); ok {
			return nil, nil, nil, nil, refusedID(re)
		}
		var le *Error
		if errors.As(err, &le) {
			return nil, nil, nil, nil, err
		}
		return nil, nil, nil, nil, KindBadRequestSpec.New(err.Error()+".",
			"Fix the request id or budget, or leave them out.")
	}
	f, err := q.rt.AdoptAncestry(r, stack)
	if err != nil {
		release.release()
		q.log.Warn("parent frame's stack unreadable", "frame", id, "request", r.ID(), "err", err)
		return nil, nil, nil, nil, KindBadStack.New(fmt.Sprintf("The stack of frame %s, kept by another gateway instance, could not be read from the shared store.", id),
			"Nothing ran. Omit the parent frame to run the call in a request of its own, or ask the operator (reach's log has the error).")
	}
	cctx, cancel, stop := q.mergeCancel(r.Context(), ctx)
	return reach.WithParent(cctx, f), r, cancel, join(stop, cancel, release), nil
}

// notYours reports whether err refuses a request of another principal
// (CheckOwner's, or the shared store's).
func notYours(err error) bool {
	if le, ok := errors.AsType[*Error](err); ok {
		return le.Code == "not_your_request" || le.Code == "request_id_unavailable"
	}
	re, ok := errors.AsType[*reach.Error](err)
	return ok && (re.Code == "not_your_request" || re.Code == "request_id_unavailable")
}

// under places a call under frame f, in its request (a delegation's: the
// sub-request the agent works in), holding its request tree.
func (q *Owned) under(ctx context.Context, f *reach.Frame) (context.Context, *reach.Request, context.CancelCauseFunc, *callHold, error) {
	in := f.Request
	if s := f.SubRequest(); s != nil { // a delegation: the agent's work is its sub-request's
		in = s
	}
	release := q.hold(f.Request.Root())
	cctx, cancel, stop := q.mergeCancel(in.Context(), ctx)
	return reach.WithParent(cctx, f), in, cancel, join(stop, cancel, release), nil
}

// findFrame looks a frame up by id in request reqID (its whole tree), or
// in every kept request when reqID is empty.
func (q *Owned) findFrame(reqID string, id reach.FrameID) *reach.Frame {
	if reqID != "" {
		r, ok := q.rt.Lookup(reqID)
		if !ok {
			return nil
		}
		f, _ := r.Root().Frame(id)
		return f
	}
	for _, r := range q.rt.Requests() {
		if r.Root() != r {
			continue // searched from its root
		}
		if f, ok := r.Frame(id); ok {
			return f
		}
	}
	return nil
}

// MergeCancel returns a context with vals' values that ends when either
// vals or cancelOn ends (with that one's cause). Call stop when done.
func MergeCancel(vals, cancelOn context.Context) (context.Context, func()) {
	ctx, _, stop := mergeCancel(vals, cancelOn)
	return ctx, stop
}

// mergeCancel is MergeCancel that also returns the merged context's
// cancel; stop is nil when there is nothing to stop but the cancel.
func mergeCancel(vals, cancelOn context.Context) (_ context.Context, _ context.CancelCauseFunc, stop func()) {
	ctx, cancel := context.WithCancelCause(vals)
	unhook := context.AfterFunc(cancelOn, func() { cancel(context.Cause(cancelOn)) })
	return ctx, cancel, func() { unhook(); cancel(nil) }
}

// mergeCancel is the package's mergeCancel for a call in a request's
// context (vals): when the request is one q began and cancelOn ends when
// q's life does (the gateway's own context, as the fast lane passes it),
// the request's context ends then too, with the same cause, so the call
// needs no hook of its own on cancelOn (3 allocations, and the lock of a
// context every call shares, twice); nor when cancelOn never ends. stop
// is then nil: cancel(nil) does.
func (q *Owned) mergeCancel(vals, cancelOn context.Context) (context.Context, context.CancelCauseFunc, func()) {
	if d := cancelOn.Done(); d == nil || d == q.life.Done() && vals.Value(lifeKey{}) == q {
		ctx, cancel := context.WithCancelCause(vals)
		return ctx, cancel, nil
	}
	return mergeCancel(vals, cancelOn)
}

// join returns h as the done of a call (finish): stop (the merged
// context's, or when it is nil cancel(nil)), then h's release.
func join(stop func(), cancel context.CancelCauseFunc, h *callHold) *callHold {
	h.stop, h.cancel = stop, cancel
	return h
}

// LocalPrincipal is who works with a gateway that authenticates nobody:
// the requests it begins and the approvals given at its API and UI.
const LocalPrincipal = auth.LocalPrincipal

// CheckOwner refuses a call into, or a look at, a request of another
// owner: a request is owned by the principal and tenant of its root request
// (a principal of the same name in another tenant is someone else); id nil
// is the local user, of no tenant.
func CheckOwner(id *auth.Identity, r *reach.Request) error {
	principal, tenant := LocalPrincipal, ""
	if id != nil {
		principal, tenant = id.Principal, id.Tenant
	}
	root := r.Root()
	if root.Tenant() != tenant {
		return UnusableID(r.ID())
	}
	if root.Principal() != principal {
		return KindNotYourRequest.New(fmt.Sprintf("Request %s belongs to another principal.", r.ID()),
			"Work in your own requests: omit the request id, or send one of yours.")
	}
	return nil
}

// CheckCaller refuses a call into request r (CheckOwner), and a call of its
// owner under other credentials: a request's policies see the roles and
// attributes of the credentials that began it, so a call sent with another
// of the principal's keys (one with fewer roles), or after its roles
// changed (a JWT issued since), would otherwise run with the roles it no
// longer has, a revoked key's included, for as long as the request lives
// (an MCP session's, a request named again and again).
func CheckCaller(id *auth.Identity, r *reach.Request) error {
	if err := CheckOwner(id, r); err != nil {
		return err
	}
	roles, attrs := authorityOf(id)
	root := r.Root()
	if !sameRoles(roles, root.Roles()) || !sameAttributes(attrs, root.Attributes()) {
		return KindOtherCredentials.New(fmt.Sprintf("Request %s was begun with credentials of other roles or attributes than these (another key of the principal's, or roles changed since): "+
			"its calls are checked against the roles it was begun with, so reach runs none under other credentials.", r.ID()),
			"Begin a new request with these credentials: omit the request id, or open a new session.")
	}
	return nil
}

// SameAuthority reports whether identities a and b, of one owner, carry
// the same roles and attributes (nil is the local user: none): what a
// request's or a stream's calls are checked against (CheckCaller).
func SameAuthority(a, b *auth.Identity) bool {
	ra, aa := authorityOf(a)
	rb, ab := authorityOf(b)
	return sameRoles(ra, rb) && sameAttributes(aa, ab)
}

// authorityOf is id's roles and attributes; none for nil (the local user).
func authorityOf(id *auth.Identity) ([]string, map[string]string) {
	if id == nil {
		return nil, nil
	}
	return id.Roles, id.Attributes
}

// sameRoles reports whether a and b hold the same roles, in any order,
// without allocating (a call's path).
func sameRoles(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// sameAttributes reports whether a and b hold the same attributes (nil and
// empty alike).
func sameAttributes(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// UnusableID refuses request id, named by a client, that is a request of
// another tenant: the answer (400, as an id that is not valid, which no
// client retries) says nothing of that request, not even that it is
// another principal's, only that the name cannot be used by the caller,
// and what to do. Request ids are one namespace for every tenant
// (the graph, the API and the other instances know a request by its id),
// so a name another tenant uses cannot begin a request of the caller's;
// every read of it (the API, the UI) answers as for an id no request has.
func UnusableID(id string) *Error {
	return KindRequestIDUnavailable.New(fmt.Sprintf("The request id %q cannot be used: it names no request of yours, and cannot begin one. Nothing ran.", id),
		"Leave the request id out to begin a new request, or name one of yours; an id you make should be hard to guess (a UUID).")
}

// SetClock replaces the clock the idle gap is measured by (time.Now), for
// tests.
func (q *Owned) SetClock(now func() time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.now = now
}

// SetHandoffEndHook has EndStoppedHandoff call hook with the hand-off's
// cause as it begins, and what hook returns as it returns, for tests that
// order the ends of two hand-offs.
func (q *Owned) SetHandoffEndHook(hook func(c reach.Cause) func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.handoffEnd = hook
}

// lastToEnd reports whether hand-off sub (an id) is the last of root r's
// sub-requests to end: none runs, and none ended after it (by their
// delegate frames' ends; a tie counts as last). Two hand-offs that end
// close together run their clean-ups in either order; the one whose end
// left the root with nothing running decides, so that a late clean-up of
// an earlier hand-off neither ends the root with its cause nor ends it
// where the last hand-off completed without a stop.
func lastToEnd(r *reach.Request, sub string) bool {
	children := r.Children()
	var end time.Time
	for _, ch := range children {
		if ch.State() == reach.RequestRunning {
			return false
		}
		if ch.ID() == sub && ch.DelegateFrame() != nil {
			end = ch.DelegateFrame().Ended()
		}
	}
	if end.IsZero() {
		return true // not one of r's hand-offs as it knows them: no order to keep
	}
	for _, ch := range children {
		if f := ch.DelegateFrame(); ch.ID() != sub && f != nil {
			// One stopped but not yet ended has its own clean-up to come.
			if e := f.Ended(); e.IsZero() || e.After(end) {
				return false
			}
		}
	}
	return true
}

// elsewhereAsker is a Remote that can say which requests run on other
// instances too (internal/cluster).
type elsewhereAsker interface {
	RunningElsewhere(ctx context.Context, ids []string) (map[string][]string, error)
}

// EndStoppedHandoff ends root request r with the stop cause c of its
// hand-off, a sub-request that was stopped by itself (a stop of it, its
// budget), when nothing else of r is left to run: a loose request the
// gateway owns, begun with an id of reach's (for a message that named no
// request or session: an A2A client's), with no call or stream in
// flight, no running sub-request, no frame but hand-offs, and, on a
// shared store, no part on another instance. Such a root used to run on,
// holding nothing, until its idle gap. A request whose id its client
// named is left to its idle gap: a stopped id is never begun again, and
// the client may mean to go on in it. Of two hand-offs that end close
// together, only the last to end may end r (lastToEnd), whichever's
// clean-up runs first. It reports whether it stopped r.
func (q *Owned) EndStoppedHandoff(ctx context.Context, r *reach.Request, c reach.Cause) bool {
	q.mu.Lock()
	hook := q.handoffEnd
	q.mu.Unlock()
	if hook != nil {
		defer hook(c)()
	}
	if r == nil || r.Parent() != nil || !r.Fresh() || r.State() != reach.RequestRunning {
		return false
	}
	idle := func() (*owned, bool) {
		o, ok := q.owned[r.ID()]
		if !ok || o.req != r || !o.loose || o.remote || o.inflight > 0 {
			return nil, false
		}
		for _, id := range q.traces {
			if id == r.ID() { // a trace's calls may come back to it
				return nil, false
			}
		}
		return o, true
	}
	q.mu.Lock()
	o, ok := idle()
	var last time.Time
	if ok {
		last = o.last
	}
	q.mu.Unlock()
	if !ok {
		return false
	}
	if !lastToEnd(r, c.Request) {
		return false
	}
	for _, f := range r.Frames() {
		if f.Kind != reach.DelegateFrame {
			return false
		}
	}
	if ea, ok := q.remote.(elsewhereAsker); ok {
		on, err := ea.RunningElsewhere(ctx, []string{r.ID()})
		if err != nil || len(on[r.ID()]) > 0 {
			return false // its idle gap ends it here, as before
		}
	}
	q.mu.Lock()
	o, ok = idle()
	if ok = ok && o.last.Equal(last); ok { // no call came meanwhile
		q.forget(r.ID(), o)
	}
	q.mu.Unlock()
	if !ok {
		return false
	}
	r.StopWith(c)
	r.End()
	return true
}
