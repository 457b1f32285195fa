// Package reach is the runtime between an LLM agent and the tools it calls.
// Every call goes through one chain of guards that knows the call stack of
// the request: it refuses cycles and re-entries that break a tool's contract,
// keeps the request inside its budgets, retries safely, and turns every
// refusal into a structured error the model can act on.
//
//	rt := reach.New(nil)
//	rt.MustRegister(reach.Tool{Name: "search_kb", Reentrancy: reach.Reentrant, Func: search})
//	ctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{Principal: "alice"})
//	defer req.End()
//	mctx, turn, _ := rt.BeginModel(ctx, "gpt-4o") // a turn of the agent loop
//	res := rt.Call(mctx, &reach.Call{ID: "c1", Tool: "search_kb", Arguments: args})
//	turn.EndModel(reach.TokenUsage{Input: 1200, Output: 80})
//	if res.Error != nil { fmt.Println(res.Error.ModelText()) }
//
// # Frames and nesting
//
// A request's work is a tree of frames: model calls, tool calls and
// delegations. The current frame travels in the context: a tool's Func that
// calls [Runtime.BeginModel] with its own ctx nests the model call under the
// tool call, and the tools that model picks nest under it. [Runtime.Delegate]
// starts a sub-request whose budget is carved from its parent's.
//
// # The call path
//
// [Runtime.Call] runs these stages in order; the first refusal ends the call:
//
//  1. admit: the request is running (not stopped, ended or interrupted), within its tool-call, token, cost and wall budgets
//  2. resolve: the tool exists
//  3. validate: the arguments match the tool's schema (and are normalized)
//  4. graph: no cycle, no broken reentrancy contract, within the depth budget
//  5. loops: no repetition without progress
//  6. authorize: the access level and the Authorizer allow it
//  7. state: entity versions: stale reads refused, writes serialized, deadlocks broken
//  8. limit: rate limits
//  9. idempotency: a recorded result for this key is returned as is; a key used for other arguments is refused
//  10. checkpoint: a durable "executing" record (with Options.Checkpoints)
//  11. execute: first the circuit breakers of the tool and of its upstream: an open one fails the call at once (type unavailable) and nothing runs; then timeout, retries with backoff for transient failures, each attempt counted by the breakers, and no retry once one opened
//  12. verify and saga: verify after write; register the undo, or compensate
//  13. shape: the result shaped for the model
//  14. record: the Recorder is told
//
// A read that failed transiently after its retries, or met an open
// breaker, is answered by its first healthy fallback (Tool.Fallback), a
// call of its own under it; the stage sits between 9 and 10.
//
// Options.Middleware wraps stage 11 after the breakers: user middleware
// runs after every guard, just around the tool.
//
// # Circuit breakers
//
// Every tool has a circuit breaker, and so has every upstream
// (Tool.Upstream), shared by its tools. A breaker is closed: it lets calls
// through and counts their transient failures (the runtime's one
// classification: a timeout, a ToolError of type timeout, unavailable or
// rate_limited, a Retryable tool's failure, a message that says HTTP 429
// or 5xx or "temporarily"); a refusal, a permanent failure or a cancel
// never counts. After BreakerPolicy.Failures transient failures in a row
// (5), or a failure rate of Rate (0.5) over Window (1m) once MinCalls (20)
// were made, it opens: every call fails at once with an error of type
// unavailable that says what is down and since when, when it will be
// tried again and what to use instead. After OpenFor (10s) it is
// half-open: one call goes through to probe, and its success closes it.
// An upstream's breaker counts only the failures that say it could not be
// reached (a ToolError of type unavailable, a timeout). Changes of state
// are logged and recorded (Event.Breaker); Runtime.Breakers lists them.
package reach

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/deadletter"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/ratelimit"
	"github.com/agentreach/reach/internal/records"
	"github.com/agentreach/reach/internal/toolspec"
)

// Handler handles one call: it is the signature of the chain and of every
// stage in it. A refusal or breakage is an error (an *Error); a tool that ran
// and failed is a Result with Status StatusError.
type Handler func(ctx context.Context, c *Call) (*Result, error)

// Middleware wraps a Handler.
type Middleware func(Handler) Handler

// Chain returns h wrapped so that mw[0] runs first (outermost).
func Chain(h Handler, mw ...Middleware) Handler {
	for _, m := range slices.Backward(mw) {
		h = m(h)
	}
	return h
}

// Decision is an authorization outcome.
type Decision int

// Decisions.
const (
	Deny Decision = iota
	Permit
	NeedsApproval
)

// Authorizer decides whether a call may run. It is stage 6. An error denies;
// with Deny, a returned *Error replaces the default refusal (and should say
// what the caller may do instead).
type Authorizer interface {
	Authorize(ctx context.Context, c *Call) (Decision, *Error)
}

// Lister is an Authorizer that can also tell whether the caller of c
// could call tool t at all, whatever its arguments: what a listing shows
// it (the policy engine's Visible). The runtime asks it before it names a
// tool to the model as one to use instead of a name that is no tool's.
type Lister interface {
	Lists(c *Call, t Tool) bool
}

// Approver decides calls that the Authorizer says need a human (P4). It may
// hold the call while it waits for a decision, until ctx ends. It returns
// Permit to run the call, Deny (with the refusal), or NeedsApproval with an
// *Error saying who must approve: the caller then gets a pending result and
// may retry the same call later, which the Approver recognizes.
type Approver interface {
	Approve(ctx context.Context, c *Call) (Decision, *Error)
}

// ApprovalFinder is an optional interface of an Approver. Asked reports,
// without changing anything, whether c (its tool and normalized arguments,
// Call.Args) was asked for a human's approval before and that approval
// stands: pending, approved, or used and still remembered. Such a call was
// admitted, its tool call counted, when it was asked: a retry that collects
// it (the agent calls again once a human approved) is not refused by the
// request's tool-call budget spent since, and is not counted again
// (Call.CountedWhenAsked). A call never asked is refused by it as before.
type ApprovalFinder interface {
	Asked(ctx context.Context, c *Call) bool
}

// Redactor removes secrets from what the model, logs and records see (P6):
// Redact masks JSON (keeping it JSON) or text, RedactString masks text.
// Both return their input when there is nothing to mask. It must be safe
// for concurrent use. The runtime's default, and the gateway's, is the one
// redactor of internal/redact.
type Redactor interface {
	Redact(b []byte) []byte
	RedactString(s string) string
}

// Recorders fans events out to several recorders, in order, and the news of
// requests to those of them that are RequestObservers.
func Recorders(rs ...Recorder) Recorder { return records.Fan[*Request](rs...) }

// StandardBudget is the budget of requests that name none when the
// runtime is given no other: {Turns: 30, Depth: 8, ToolCalls: 200, Wall:
// 10m}, tokens and cost unlimited.
func StandardBudget() Budget {
	return Budget{Turns: 30, Depth: 8, ToolCalls: 200, Wall: 10 * time.Minute}
}

// Options configure a Runtime. A nil *Options means all defaults; every
// zero field has the default its comment states.
type Options struct {
	// DefaultBudget applies to requests begun without one; if nil,
	// StandardBudget's.
	DefaultBudget *Budget
	// DefaultTimeout bounds one attempt of a tool without its own; if zero, 30s.
	DefaultTimeout time.Duration
	// MaxResultBytes truncates larger results for the model; if zero, 32 KiB.
	MaxResultBytes int
	// MaxFrames per request kept for inspection (in memory, or let go to
	// StoredFrames); if zero, 10000. Later ones run, and are not kept.
	MaxFrames int
	// StoredFrames, if not nil, reads back the ended frames of a request
	// of this run from a store that keeps them (a PastRequest's frames,
	// as Load gives them): with it, a request keeps in memory only its
	// newest FrameWindow ended tool frames besides those still running,
	// and Frames and Frame read the older ones back from the store. A tool
	// frame is let go once its last event was handed to the Recorder (a
	// Keeper: once it kept it, and never if it dropped an event of the
	// frame), so StoredFrames must see every event the Recorder was given
	// (flush what the recorder queues before it reads).
	StoredFrames func(request string) []PastFrame
	// FrameWindow is how many ended tool frames a request keeps in memory
	// with StoredFrames (up to twice as many between two lets go); if
	// zero, 4.
	FrameWindow int
	// MaxRequests is how many ended requests are kept for inspection; if zero, 1000.
	MaxRequests int
	// LowContext is the fraction of the token budget left below which results
	// carry a note that the context runs low; if zero, 0.2.
	LowContext float64
	// Prices per model, for the cost budget.
	Prices map[string]Price
	// RateLimit, if not nil, limits calls.
	RateLimit *RateLimit
	// Authorizer, if nil, decides by access level: read and write run,
	// high_risk needs approval, forbidden never runs.
	Authorizer Authorizer
	// Approver, if not nil, decides calls that need approval; if nil they are refused.
	Approver Approver
	// ApprovalKey, if not nil, names the approval that let an approved call
	// through (the approval queue's ApprovalKey): the call runs under it as
	// its idempotency key, so that one approval runs a call once, however
	// often it is retried. It needs an Approver.
	ApprovalKey func(c *Call) string
	// Redactor masks secrets in every text that leaves the runtime, once,
	// where it is made: results and errors for the model, and what frames
	// keep and events carry for views and records (summaries, what a model
	// said, errors, reasons, arguments as shown). If nil, the one redactor
	// of internal/redact with its default names and no registered values
	// (a value under a secret name, such as "password", is masked).
	Redactor Redactor
	// Idempotency stores results by key; if nil, in memory for IdempotencyTTL.
	Idempotency IdempotencyStore
	// IdempotencyTTL is how long a recorded result answers a repeated key; if zero, 24h.
	IdempotencyTTL time.Duration
	// CutOffs, if not nil, keeps the writes cut off before their answer was
	// delivered, for every instance that shares it and the next life
	// (cutoff.go); if nil, the process remembers them.
	CutOffs CutOffStore
	// CutOffsShared says that CutOffs is shared by several instances:
	// each write without a key of its own looks it up (in its key's claim,
	// where the idempotency store can: PostgreSQL's). Otherwise New reads
	// it once, and the runtime keeps its writes in memory too.
	CutOffsShared bool
	// Checkpoints, if not nil, records every write (and, with
	// CheckpointReads, every call) durably before it runs (C5).
	Checkpoints     Checkpointer
	CheckpointReads bool
	// Requests, if not nil, is told when a request begins, is stopped and
	// ends, and may refuse one (see RequestRecorder): a store that keeps
	// the requests (internal/durable).
	Requests RequestRecorder
	// DeadLetters keeps the compensations that failed after their
	// retries; if nil, in memory (see DeadLetterQueue).
	DeadLetters DeadLetterQueue
	// History, if not nil, is asked by Lookup for a request this run does
	// not keep: one of an earlier run, which a store kept. It is restored
	// (see RestorePast) and kept like the ended requests of this run.
	History func(id string) (*PastRequest, bool)
	// Entities, if not nil, keeps the entities' versions that the
	// stale-read check compares (effects reads and writes), for runtimes
	// that share it (several instances on one store): a write claims what
	// its request read at the versions read, in the store, before it runs,
	// and again after, so that a write based on a read that another
	// runtime's write made stale is refused (or refreshed) as one of this
	// runtime's. If nil, versions are kept in memory, exact for one
	// runtime. Write locks (per-entity order, deadlocks) stay per runtime.
	Entities EntityStore
	// Recorder, if not nil, is told about every frame.
	Recorder Recorder
	// Middleware wraps the execute stage, first listed outermost.
	Middleware []Middleware
	// Missing, if not nil, explains a call of a tool that is not
	// registered: the refusal it returns (a tool held for review, say)
	// replaces unknown_tool; nil keeps unknown_tool.
	Missing func(name string) *Error
	// Breaker is the default policy of every circuit breaker (tools',
	// upstreams', and those made with Runtime.Breaker); nil means the
	// defaults of BreakerPolicy.
	Breaker *BreakerPolicy
	// UpstreamBreakers configure the breakers of upstreams, by name
	// (Tool.Upstream); an upstream not named has Breaker.
	UpstreamBreakers map[string]*BreakerPolicy
	// Loops tune the loop detectors; nil means the defaults.
	Loops *LoopOptions
	// DisableLoopGuard turns the loop detectors (stage 5) off.
	DisableLoopGuard bool
	// RefusedInARow stops a request (cancel, with its subtree) once this
	// many of its agent's tool calls in a row were refused for a reason
	// the agent could act on (a loop, a denial, a spent budget, a cycle, a
	// reentrancy contract) with none let through in between: an agent that
	// ignores refusals is stopped, not refused until its step limit. If
	// zero, DefaultRefusedInARow; below zero, never. Its model turns and
	// hand-offs refused for such a reason count too (refusalstreak.go).
	RefusedInARow int
	// RefusalCounter, if set, keeps each request's count of refusals in a
	// row where every runtime that shares the request, and this one's next
	// life, counts on it (the gateway's store): the count is the
	// request's, not this process's. A call let through costs it nothing.
	RefusalCounter RefusalCounter
	// RefusalsShared says that other runtimes count on RefusalCounter too,
	// and that it sets a request's count back itself when any of them lets
	// a tool call through (the PostgreSQL store, in the admission's
	// debit): this runtime then never starts the count over for a tool
	// call it let through earlier, since another may have counted refusals
	// since. What no admission sees (a hand-off, a call answered from its
	// record) it still starts over at its next refusal counted.
	RefusalsShared bool
	// Catalog is where the runtime registers its tools; if nil, a new one.
	// Make it first (NewCatalog) to give the parts built before the runtime
	// (an Authorizer, an Approver, a Recorder) the tools to look up. A
	// catalog belongs to one runtime.
	Catalog *Catalog
	// Logger; if nil, logs are discarded.
	Logger *slog.Logger
}

// Check returns an error naming the first option that contradicts
// another or is out of range: ApprovalKey without an Approver,
// CheckpointReads without Checkpoints, IdempotencyTTL with an Idempotency
// store (the TTL is the in-memory store's), Loops with DisableLoopGuard,
// a negative amount, or a breaker policy out of range. A nil *Options is
// fine.
func (o *Options) Check() error {
	switch {
	case o == nil:
		return nil
	case o.ApprovalKey != nil && o.Approver == nil:
		return errors.New("Options.ApprovalKey names approvals, but there is no Approver to give any")
	case o.CheckpointReads && o.Checkpoints == nil:
		return errors.New("Options.CheckpointReads asks to checkpoint reads, but there is no Checkpoints to record them")
	case o.IdempotencyTTL != 0 && o.Idempotency != nil:
		return errors.New("Options.IdempotencyTTL is the in-memory idempotency store's; the Idempotency store given keeps its own")
	case o.Loops != nil && o.DisableLoopGuard:
		return errors.New("Options.Loops tunes the loop detectors, and DisableLoopGuard turns them off: keep one")
	case o.DefaultTimeout < 0, o.MaxResultBytes < 0, o.MaxFrames < 0, o.FrameWindow < 0, o.MaxRequests < 0, o.IdempotencyTTL < 0:
		return errors.New("Options: DefaultTimeout, MaxResultBytes, MaxFrames, FrameWindow, MaxRequests and IdempotencyTTL must not be negative (zero means the default)")
	case o.LowContext < 0 || o.LowContext > 1:
		return fmt.Errorf("Options.LowContext is a fraction of the token budget, from 0 to 1; got %v", o.LowContext)
	}
	if err := o.Breaker.Check(); err != nil {
		return fmt.Errorf("Options.Breaker: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(o.UpstreamBreakers)) {
		if err := o.UpstreamBreakers[name].Check(); err != nil {
			return fmt.Errorf("Options.UpstreamBreakers[%s]: %w", name, err)
		}
	}
	return nil
}

// Runtime registers tools, runs requests and dispatches calls through the
// chain. Safe for concurrent use. Make one with New.
type Runtime struct {
	opts   Options
	tools  *toolspec.Catalog[*Request]
	chain  Handler
	limits *ratelimit.Limiter
	idem   IdempotencyStore
	log    *slog.Logger

	// awaiting are the calls that wait for an approval, by request: a
	// stop of their request ends the wait (stopwait.go).
	awaiting stopWaits

	entities *entityTable
	dead     DeadLetterQueue

	requests *records.Kept[*Request]

	breakers *breaker.Registry[*Request]

	cutOffs cutOffs // writes cut off before their answer was delivered (cutoff.go)

	// heldEnds are the timers that bound the ends of stopped requests
	// held for their writes in flight (boundHeldEnd), by request: stopped
	// once the end is recorded, so that a request is not kept for its
	// tools' time after it ended.
	heldEnds sync.Map // *Request -> *time.Timer

	calls calls // the calls in flight, for Drain (drain.go)

	// lockLetGo, set only by tests, is called as a write of entities on a
	// shared store has let go of their locks (entityMove.letGo), before its
	// call goes on: a test holds the call there to see what a call that
	// waited for them finds.
	lockLetGo func(c *Call)
}

// New returns a Runtime with the options (nil for defaults). It panics on
// options that contradict each other or are out of range (see
// Options.Check), which are a programmer's error.
func New(opts *Options) *Runtime {
	if err := opts.Check(); err != nil {
		panic("reach.New: " + err.Error())
	}
	rt := &Runtime{entities: newEntities()}
	rt.calls.idle = make(chan struct{}, 1)
	if opts != nil {
		rt.opts = *opts
	}
	o := &rt.opts
	if o.DefaultBudget == nil {
		o.DefaultBudget = new(StandardBudget())
	}
	o.DefaultTimeout = cmp.Or(o.DefaultTimeout, 30*time.Second)
	o.Redactor = cmp.Or(o.Redactor, defaultRedactor)
	o.MaxResultBytes = cmp.Or(o.MaxResultBytes, 32<<10)
	o.MaxFrames = cmp.Or(o.MaxFrames, 10000)
	o.FrameWindow = cmp.Or(o.FrameWindow, 4)
	o.MaxRequests = cmp.Or(o.MaxRequests, 1000)
	o.LowContext = cmp.Or(o.LowContext, 0.2)
	o.IdempotencyTTL = cmp.Or(o.IdempotencyTTL, 24*time.Hour)
	o.Authorizer = cmp.Or[Authorizer](o.Authorizer, accessLevels{})
	rt.requests = records.NewKept(o.MaxRequests, (*Request).ID, func(r *Request) bool { return r.ended.Load() })
	rt.idem = o.Idempotency
	rt.cutOffs.store, rt.cutOffs.shared = o.CutOffs, o.CutOffs != nil && o.CutOffsShared
	if o.CutOffs != nil && !o.CutOffsShared {
		rt.cutOffs.load()
	}
	if rt.idem == nil {
		rt.idem = NewMemoryIdempotency(o.IdempotencyTTL)
	}
	rt.log = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	rt.cutOffs.log = rt.log
	rt.dead = o.DeadLetters
	if rt.dead == nil {
		rt.dead = deadletter.NewMemory()
	}
	rt.limits = ratelimit.New(*cmp.Or(o.RateLimit, &RateLimit{}))
	rt.breakers = rt.newBreakers()
	rt.tools = cmp.Or(o.Catalog, NewCatalog()).c
	if !rt.tools.Own() {
		panic("reach.New: Options.Catalog belongs to another runtime already (its tools are compiled with that runtime's defaults); give each runtime its own")
	}
	rt.chain = rt.buildChain()
	return rt
}

// Register adds tools. It fails, adding none, on an invalid tool or a name
// already registered.
func (rt *Runtime) Register(tools ...Tool) error { return rt.register(false, tools) }

// MustRegister is Register that panics on error, for tools defined in code.
func (rt *Runtime) MustRegister(tools ...Tool) {
	if err := rt.Register(tools...); err != nil {
		panic(err)
	}
}

// Replace registers tools, replacing any of the same name.
func (rt *Runtime) Replace(tools ...Tool) error { return rt.register(true, tools) }

// register compiles tools and registers them in the catalog, all or none.
func (rt *Runtime) register(replace bool, tools []Tool) error {
	return rt.tools.Update(func(next map[string]*tool) error {
		for _, t := range tools {
			ct, err := toolspec.Compile[*Request](t, rt.opts.DefaultTimeout, rt.opts.MaxResultBytes)
			if err != nil {
				return err
			}
			if _, dup := next[t.Name]; dup && !replace {
				return fmt.Errorf("tool %s is already registered", t.Name)
			}
			next[t.Name] = ct
		}
		for _, t := range tools {
			ct := next[t.Name]
			ct.ToolBreaker = rt.breakers.Get(BreakerTool, t.Name, t.Breaker, true)
			if t.Upstream != "" {
				ct.UpstreamBreaker = rt.breakers.Get(BreakerUpstream, t.Upstream, rt.opts.UpstreamBreakers[t.Upstream], false)
			}
		}
		return nil
	})
}

// Unregister removes tools by name (an upstream that dropped them). Calls
// in flight finish; later calls get "unknown tool". Unknown names are
// ignored.
func (rt *Runtime) Unregister(names ...string) {
	rt.tools.Update(func(next map[string]*tool) error {
		for _, n := range names {
			delete(next, n)
		}
		return nil
	})
}

// Tools returns the registered tools sorted by name (their Func included).
func (rt *Runtime) Tools() []Tool { return rt.tools.Tools() }

// Tool returns the registered tool of that name.
func (rt *Runtime) Tool(name string) (Tool, bool) { return rt.tools.Tool(name) }

// ToolName returns the name of the registered tool that name spells, as
// registered (the runtime's string, not a copy of name), and whether there
// is one: a server that reads a call's tool name from a request's bytes
// takes it without a copy of its own.
func (rt *Runtime) ToolName(name []byte) (string, bool) {
	if t := rt.tools.Get(string(name)); t != nil {
		return t.Name, true
	}
	return "", false
}

func (rt *Runtime) lookup(name string) *tool { return rt.tools.Get(name) }

// Catalog is a runtime's registered tools (Options.Catalog): made before
// the runtime, it is what the parts built around the runtime look tools up
// in. It shows the tools as registered; the runtime alone changes them.
// Make one with NewCatalog.
type Catalog struct{ c *toolspec.Catalog[*Request] }

// NewCatalog returns an empty catalog, for one runtime.
func NewCatalog() *Catalog { return &Catalog{toolspec.NewCatalog[*Request]()} }

// Tools returns the registered tools sorted by name (their Func included).
func (c *Catalog) Tools() []Tool { return c.c.Tools() }

// Tool returns the registered tool of that name.
func (c *Catalog) Tool(name string) (Tool, bool) { return c.c.Tool(name) }

// Has reports whether a tool of that name is registered.
func (c *Catalog) Has(name string) bool { return c.c.Has(name) }

// Begin starts a request. The returned context carries it: pass it (or
// contexts derived from it) to BeginModel, Call and Delegate. It ends when
// the request is cancelled, isolated, ended, or out of wall clock. Call End
// when the request's work is done. Begin fails if a request with the same id
// is still running.
func (rt *Runtime) Begin(ctx context.Context, o *RequestOptions) (context.Context, *Request, error) {
	var opts RequestOptions
	if o != nil {
		opts = *o
	}
	fresh := opts.ID == ""
	if fresh {
		opts.ID = newID()
	}
	if opts.Principal == "" {
		opts.Principal = "anonymous"
	}
	opts.Agent = agentName(opts.Agent)
	b := *rt.opts.DefaultBudget
	if opts.Budget != nil {
		b = *opts.Budget
	}
	// A completed root request of its owner, named again, goes on under
	// its id (track) with what its earlier runs spent: looked up first
	// (after a restart, or on another instance, read back from the store:
	// Options.History), so that its budget bounds what the request spends
	// over all its runs, not each run.
	var from *Request
	if !fresh {
		if old, ok := rt.Lookup(opts.ID); ok && continues(old, nil, opts.Principal, opts.Tenant) {
			from = old
		}
	}
	at := time.Now()
	opts.Carried = nil // a RequestJoiner's to set
	if j, ok := rt.opts.Requests.(RequestJoiner); ok {
		// Another runtime may run it: then it is that request, as begun there.
		opts.Budget = &b
		began, err := j.JoinRequest(ctx, &opts)
		if err != nil {
			return nil, nil, fault.RefusedBegin(err, opts.ID)
		}
		if opts.Budget != nil {
			b = *opts.Budget
		}
		if !began.IsZero() {
			at = began
		}
	}
	r := rt.newRequestAt(ctx, opts, b, nil, nil, at, from, opts.Carried)
	r.fresh = fresh
	if err := rt.trackFrom(r, from, !fresh); err != nil {
		r.cancel(nil)
		if a, ok := rt.opts.Requests.(JoinAbandoner); ok {
			a.JoinAbandoned(opts.ID) // joined above: RequestBegan is not called
		}
		return nil, nil, err
	}
	if err := rt.began(ctx, r); err != nil {
		return nil, nil, err
	}
	return r.ctx, r, nil
}

// began tells the RequestRecorder that r began; if it refuses r, r is
// forgotten and the refusal returned (an InterruptedError as an *Error).
func (rt *Runtime) began(ctx context.Context, r *Request) error {
	if rt.opts.Requests == nil {
		rt.observeBegan(r)
		return nil
	}
	err := rt.opts.Requests.RequestBegan(ctx, r)
	if err == nil {
		rt.observeBegan(r)
		return nil
	}
	rt.requests.Remove(r)
	r.cancel(err)
	return fault.RefusedBegin(err, r.id)
}

func (rt *Runtime) observeBegan(r *Request) {
	if o, ok := rt.opts.Recorder.(RequestObserver); ok {
		o.RequestBegan(context.Background(), r)
	}
}

// RestoreInterrupted keeps among the requests (Lookup, Requests) one that
// a restart interrupted, as recovery found it: o as it was begun (its ID,
// principal, tenant, roles, attributes, agent and scene), and c, why it
// stopped. It is ended, its State is "interrupted", and every call made in
// it, like a Begin of its id, is refused with a structured error (code
// request_interrupted), so that no new work runs under its id. Ending or
// stopping it changes nothing, and records nothing. It fails if a request
// of that id is running.
func (rt *Runtime) RestoreInterrupted(o *RequestOptions, c Cause) (*Request, error) {
	opts := *o
	opts.Principal, opts.Agent = cmp.Or(opts.Principal, "anonymous"), agentName(opts.Agent)
	c.Request = opts.ID
	r := rt.newRequest(context.Background(), opts, Budget{}, nil, nil)
	r.interrupted = &c
	r.ended.Store(true)
	r.cancel(&InterruptedError{Cause: c})
	if err := rt.track(r); err != nil {
		return nil, err
	}
	return r, nil
}

func (rt *Runtime) newRequest(ctx context.Context, o RequestOptions, b Budget, parent *Request, delegate *Frame) *Request {
	return rt.newRequestAt(ctx, o, b, parent, delegate, time.Now(), nil, nil)
}

// newRequestAt is newRequest for a request that began at at (its wall
// clock counts from then) and, if from is not nil, goes on from the
// earlier runs of its id (from the last of them): its meter counts on from
// what they spent, and its wall clock has what they left of it. carried,
// if not nil, is what those runs spent as a shared store keeps it (a part
// joined of a run another runtime began: RequestOptions.Carried), counted
// on from in place of from's.
func (rt *Runtime) newRequestAt(ctx context.Context, o RequestOptions, b Budget, parent *Request, delegate *Frame, at time.Time, from *Request, carried *Usage) *Request {
	r := &Request{id: o.ID, principal: o.Principal, scene: o.Scene, agent: o.Agent,
		roles: slices.Clone(o.Roles), tenant: o.Tenant, attrs: maps.Clone(o.Attributes), priority: int32(max(min(o.Priority, math.MaxInt32), math.MinInt32)),
		parent: parent, delegate: delegate, rt: rt, started: at, halt: make(chan struct{})}
	r.root = r
	r.meter.Limit = b
	if parent != nil {
		r.root, r.meter.Parent = parent.root, &parent.meter
	} else if r.trace = o.Trace; r.trace == ([16]byte{}) {
		rand.Read(r.trace[:]) // never fails
	}
	wall, counted := b.Wall, false
	if from != nil || carried != nil {
		var u Usage
		if carried != nil {
			u = *carried
		} else {
			u = from.Usage()
		}
		r.meter.Restore(u)
		// Time is the sum of the runs' wall clocks, each from its begin to
		// its end: not the time since the first run began, which would
		// count the gaps between runs (a client's idle time, a restart)
		// as work.
		wall, counted = b.Wall-u.Wall, true
	}
	var cctx context.Context
	cctx, r.cancel = context.WithCancelCause(ctx)
	if b.Wall > 0 {
		// The reason is written only for a request with a wall clock: a
		// call of one without pays nothing for it (TestFastCallSessionlessAllocations).
		reason := fmt.Sprintf("wall clock of %s used", b.Wall)
		if counted {
			reason += " over its runs under this id (a request named again keeps what it spent: ask the user for more time, or for a new request if this is new work)"
		}
		cause := &StopError{Cause: Cause{Mode: Cancel, By: "budget", Budget: "wall", Request: r.id, Reason: reason}}
		var stop context.CancelFunc
		cctx, stop = context.WithDeadlineCause(cctx, r.started.Add(wall), cause)
		context.AfterFunc(cctx, stop)
	}
	r.ctx = context.WithValue(cctx, posKey{}, r)
	return r
}

func (rt *Runtime) track(r *Request) error { return rt.trackFrom(r, nil, false) }

// continues reports whether a root request (parent nil) of principal and
// tenant begun by old's id goes on from old: old completed, and is theirs.
func continues(old, parent *Request, principal, tenant string) bool {
	return parent == nil && old.State() == RequestCompleted && old.principal == principal && old.tenant == tenant
}

// trackFrom is track for a request begun from from (newRequestAt), named
// by its client if named: a named request that would go on from another
// completed request of its id than from (begun and ended by another call
// since from was looked up: its spend is not counted in r's meter) is
// refused, as one begun while its id runs is.
func (rt *Runtime) trackFrom(r, from *Request, named bool) error {
	return rt.requests.Add(r, func(old *Request, ok bool) error {
		if named && ok && old != from && continues(old, r.parent, r.principal, r.tenant) {
			return fmt.Errorf("request %s was begun again by another call meanwhile; send it again", r.id)
		}
		if ok && old.interrupted != nil {
			return (&InterruptedError{Cause: *old.interrupted}).Refusal()
		} else if c := old.stopCause(); ok && c != nil && (old.past != nil || old.ended.Load()) {
			// A stopped request stays stopped: of an earlier run, and of
			// this one once it ended (begun afresh it would lose its stop
			// and get a whole budget again).
			return (&StopError{Cause: *c}).Refusal()
		} else if ok && !old.ended.Load() {
			return fmt.Errorf("request %s is already running", r.id)
		}
		if ok && continues(old, r.parent, r.principal, r.tenant) {
			// Named again once it completed (after a restart too, restored
			// by Lookup) by its owner: it goes on under its id, and its
			// views keep what ran before (Frames, Children). Of another
			// principal or tenant it begins afresh: its views show none of
			// another owner's calls (the gateway refuses it before this,
			// link.CheckOwner).
			if e := old.earlier.Load(); e != nil && e.req != nil && rt.opts.StoredFrames != nil && rt.opts.History != nil {
				// The runs before old are in the store: their frames are
				// read back from it (Request.storedFrames), their
				// sub-requests looked up by id, however many runs there are.
				old.earlier.Store(&earlierRuns{kids: e.req.earlierKids()})
			}
			r.earlier.Store(&earlierRuns{req: old})
		}
		return nil
	})
}

// Lookup returns a request by id: running, or ended and still kept, or
// one of an earlier run that Options.History knows (restored).
func (rt *Runtime) Lookup(id string) (*Request, bool) {
	r, ok := rt.requests.Get(id)
	if ok || rt.opts.History == nil || id == "" {
		return r, ok
	}
	p, ok := rt.opts.History(id)
	if !ok {
		return nil, false
	}
	return rt.RestorePast(p), true
}

// DefaultBudget is the budget of a request begun without one.
func (rt *Runtime) DefaultBudget() Budget { return *rt.opts.DefaultBudget }

// Requests lists the known requests, newest first: by when they began,
// not when this runtime came to keep them (a request that a restart
// interrupted is kept by recovery before the earlier ones are restored, and
// one of an earlier run when first looked up; they were listed first or
// last, whatever their age).
func (rt *Runtime) Requests() []*Request {
	rs := rt.requests.List()
	slices.SortStableFunc(rs, func(a, b *Request) int { return b.started.Compare(a.started) })
	return rs
}

// newID returns a new request id, "req_" and 32 hex digits in time order
// (package ids): a millisecond, then 80 random bits.
func newID() string { return ids.Text("req_") }

// newFrameID returns a new frame id, in time order (package ids).
func newFrameID() FrameID { return FrameID(ids.Frame()) }

// Delegate hands a sub-task to another agent: it records a delegate frame
// under the frame in ctx and starts a sub-request whose budget is carved
// from the parent's remaining budget (never a fresh default). Before that,
// as the call path's graph stage does for tools, it refuses a hand-off that
// would re-enter an agent already on the stack against its contract, or
// hand the same normalized task to an agent already working on it (a
// cycle: A -> B -> A); then the admit checks (stopped, budgets, depth) and
// the loop guard (the same sub-task handed over again with the same
// verdict). A refusal is an *Error and leaves a refused delegate frame. The
// returned context carries the sub-request; its model turns nest under the
// delegate frame. End the sub-request when the sub-agent is done.
func (rt *Runtime) Delegate(ctx context.Context, d *Delegation) (context.Context, *Request, error) {
	parent, pf := position(ctx)
	if parent == nil {
		return nil, nil, fault.NoRequest()
	}
	if d == nil || d.Agent == "" {
		return nil, nil, fmt.Errorf("delegate: the receiving agent is required")
	}
	ag, err := callgraph.CompileAgent(d)
	if err != nil {
		return nil, nil, err
	}
	f := &Frame{ID: newFrameID(), Kind: DelegateFrame, Name: d.Agent, Agent: parent.agent,
		Parent: pf, Request: parent, Started: time.Now(), Args: jsonString(d.Task), Depth: 1}
	if pf != nil {
		// A hand-off nests one level below the frame it is made in, as a
		// tool call does: the depth budget bounds a chain of hand-offs
		// (agents handing each other new tasks through reach) as it
		// bounds nested tool calls (TestCore37HandOffsNestWithinTheDepthBudget).
		f.Depth = pf.Depth + 1
		f.mark.Filter = pf.mark.Filter
	}
	ag.Mark(&f.mark, d.Task)
	parent.addFrame(f)
	if err := rt.admitFrame(ctx, parent, f.Depth); err != nil {
		if err.Code == "budget_depth" {
			err.Message = fmt.Sprintf("This hand-off to agent %s would nest %d deep (hand-offs and tool calls on one stack); the depth budget is %d.",
				d.Agent, f.Depth, parent.meter.Limit.Depth)
			err.Suggestion = "Do this step yourself instead of handing it on, or answer with what you have: the agents above are waiting for you."
		}
		return nil, nil, rt.refuseFrame(ctx, f, err)
	}
	left, e := rt.leftOf(ctx, parent) // what every runtime that shares it spent too
	if e != nil {
		return nil, nil, rt.refuseFrame(ctx, f, e)
	}
	if e := rt.checkAgent(f, ag); e != nil {
		return nil, nil, rt.refuseFrame(ctx, f, e)
	}
	f.mark.Seal(ag.NameHash)
	if err := rt.loopDelegate(f, d.Task, ag.LeavesReentry()); err != nil {
		return nil, nil, rt.refuseFrame(ctx, f, err)
	}
	f.setState(Executing)
	rt.letThrough(ctx, parent, false)
	id, fresh := d.ID, d.ID == ""
	if fresh {
		id = newID()
	}
	b := budget.Carve(parent.meter.Limit, left, d.Budget, d.Fraction)
	child := rt.newRequest(ctx, RequestOptions{ID: id, Principal: parent.principal, Scene: parent.scene, Agent: d.Agent,
		Roles: parent.roles, Tenant: parent.tenant, Attributes: parent.attrs, Priority: int(parent.priority)}, b, parent, f)
	child.fresh = fresh
	if err := rt.track(child); err != nil {
		f.finish(Failed, asError(err), "")
		return nil, nil, err
	}
	if err := rt.began(ctx, child); err != nil { // so that recovery finds its writes too
		f.finish(Refused, asError(err), "")
		rt.record(ctx, f)
		return nil, nil, err
	}
	f.sub.Store(child)
	parent.mu.Lock()
	parent.children = append(parent.children, child)
	parent.mu.Unlock()
	// A stop of the parent, or above it, that walked the parent's
	// sub-requests before child joined them (after the admit above, while
	// its begin was recorded) missed it: it is stopped here as that walk
	// would have stopped it. A stop marks before it walks, and child
	// joined before this look: one of the two sees the other
	// (TestCore37StopRacingDelegate).
	if c := strongestStop(parent); c != nil {
		child.stop(*c)
	}
	// The delegate frame ends with the sub-request: at once on End, or when
	// a stop or deadline ends its context.
	context.AfterFunc(child.ctx, child.endDelegate)
	return child.ctx, child, nil
}

// strongestStop returns the strongest stop in force on r or above it
// (the nearest of equal modes), or nil.
func strongestStop(r *Request) *Cause {
	var out *Cause
	for q := r; q != nil; q = q.parent {
		if c := q.stopCause(); c != nil && (out == nil || c.Mode > out.Mode) {
			out = c
		}
	}
	return out
}

// lastText returns what the last model turn of r said.
func lastText(r *Request) string {
	fs := r.Frames()
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Kind == ModelFrame {
			if t := fs[i].Text(); t != "" {
				return t
			}
		}
	}
	return ""
}

// BeginModel opens a model frame under the frame in ctx: a turn of the
// agent loop at the top of a request or a sub-request, or a nested model call
// inside a tool. It is refused when the request is stopped or a budget
// (turns, tokens, cost, depth) is spent. Tool calls made with the returned
// context are the model's children. Close it with [Frame.EndModel].
func (rt *Runtime) BeginModel(ctx context.Context, model string) (context.Context, *Frame, error) {
	req, pf := position(ctx)
	if req == nil {
		return nil, nil, fault.NoRequest()
	}
	// Counted in flight as a call is (drain.go), until its end is
	// recorded: Drain waits for it. Once the runtime drains it is refused,
	// nothing recorded (the store closes).
	if !rt.calls.enter(false) {
		return nil, nil, shuttingDown()
	}
	f := &Frame{ID: newFrameID(), Kind: ModelFrame, Name: model, Agent: req.agent, Parent: pf,
		Request: req, Started: time.Now(), route: routeFrom(ctx)}
	if pf != nil {
		f.Depth = pf.Depth
		f.mark.Filter = pf.mark.Filter
	} else {
		f.remote = remoteParent(ctx, req)
	}
	req.addFrame(f)
	if err := rt.admitFrame(ctx, req, f.Depth); err != nil {
		return nil, nil, rt.refuseTurn(ctx, f, err)
	}
	if e := rt.loopModel(f); e != nil {
		return nil, nil, rt.refuseTurn(ctx, f, e)
	}
	if isTurn(pf) {
		if q, detail := req.meter.AdmitTurn(); q != nil {
			return nil, nil, rt.refuseTurn(ctx, f, budgetError("turns", req, q, detail))
		}
		f.counted.Store(true)
	}
	f.turn.Store(true)
	f.setState(Executing)
	return withFrame(ctx, f), f, nil
}

// RefuseModelTurn records a model turn refused before it was begun (the
// model's rate limit, R8): a model frame of model under the frame in ctx,
// ended refused with e, its event recorded, as BeginModel's refusals are,
// so that the request's graph and the audit log show it. It counts no
// turn and charges nothing; e counts among the request's refusals in a
// row only if it is one the agent can act on (a rate limit is not). It
// returns what the model should read.
func (rt *Runtime) RefuseModelTurn(ctx context.Context, model string, e *Error) *Error {
	req, pf := position(ctx)
	if req == nil || !rt.calls.enter(false) {
		return e
	}
	f := &Frame{ID: newFrameID(), Kind: ModelFrame, Name: model, Agent: req.agent, Parent: pf,
		Request: req, Started: time.Now(), route: routeFrom(ctx)}
	if pf != nil {
		f.Depth = pf.Depth
	} else {
		f.remote = remoteParent(ctx, req)
	}
	req.addFrame(f)
	return rt.refuseTurn(ctx, f, e)
}

// refuseTurn is refuseFrame for a model frame BeginModel refuses: its
// refusal recorded, it is counted out of the calls in flight.
func (rt *Runtime) refuseTurn(ctx context.Context, f *Frame, e *Error) *Error {
	defer rt.calls.exit()
	return rt.refuseFrame(ctx, f, e)
}

// turnOver counts a model frame BeginModel let begin out of the calls in
// flight, once, its end recorded.
func (f *Frame) turnOver() {
	if f.turn.CompareAndSwap(true, false) {
		f.Request.rt.calls.exit()
	}
}

// EndModel closes a model frame with what it consumed, charging the tokens
// and cost to its request and every ancestor request; a request whose token
// or cost budget this exhausts is stopped (cancel) with a budget cause.
func (f *Frame) EndModel(u TokenUsage) { f.endModel(u, nil) }

// FailModelSpent closes a model frame whose call failed after the model
// had already used tokens (a stream cut after its usage, an answer too
// large to pass on): u, reported or estimated, is charged to the budget,
// and the frame ends failed with err.
func (f *Frame) FailModelSpent(err error, u TokenUsage) { f.endModel(u, err) }

func (f *Frame) endModel(u TokenUsage, failed error) {
	if f.Kind != ModelFrame || f.State().Done() {
		return
	}
	req := f.Request
	price, priced := req.rt.opts.Prices[u.Model]
	if !priced {
		price, priced = req.rt.opts.Prices[f.Name]
	}
	// budget.Charge does not trust what an endpoint or a client reports.
	tokens, costNano := budget.Charge(u.Input, u.Output, u.Cost, price, priced)
	// What the model said is kept masked (D1): a model may echo a key.
	text := req.rt.opts.Redactor.RedactString(u.Text)
	f.mu.Lock()
	f.tokens = tokens
	f.usage = TokenUsage{Input: max(u.Input, 0), Output: max(u.Output, 0), Cost: float64(costNano) / 1e9, Model: u.Model} // as charged
	if text != "" {
		f.text = text
		f.summary = oneLine(text, 120)
	}
	f.mu.Unlock()
	req.spend(tokens, costNano)
	if failed != nil {
		req.rt.loopFrameDone(f, "", true)
		f.finish(Failed, asError(failed), "")
	} else {
		req.rt.loopFrameDone(f, text, false)
		f.finish(Completed, nil, "")
	}
	req.rt.record(context.Background(), f)
	f.turnOver()
}

// Unanswered gives back the turn BeginModel counted for model frame f on
// the turns budget of its request and the requests above it: the model
// did not answer it (reach refused it before it was sent, or the model's
// endpoint answered an error, which a client retries as the same turn).
// The turns budget counts the turns a model answered. Call it before the
// frame ends; a second call gives back nothing.
func (f *Frame) Unanswered() {
	if f.Kind == ModelFrame && f.counted.CompareAndSwap(true, false) {
		f.Request.meter.GiveBackTurn()
	}
}

// FailModel closes a model frame whose call failed.
func (f *Frame) FailModel(err error) {
	if f.Kind != ModelFrame || f.State().Done() {
		return
	}
	f.Request.rt.loopFrameDone(f, "", true)
	f.finish(Failed, asError(err), "")
	f.Request.rt.record(context.Background(), f)
	f.turnOver()
}

// RefuseModel closes a model frame that BeginModel let begin and that is
// refused after (a turns, tokens or cost budget a shared ledger says is
// spent on every instance together): err, when it is a refusal the agent
// can act on (a *Error of a loop, a denial, a spent budget), ends the
// frame refused and counts among the request's refusals in a row, as
// BeginModel's refusals do. It returns what the model should read: the
// stop's refusal when this one made the request stop, else err. Any other
// err ends the frame failed, as FailModel does, and is returned as it is.
func (f *Frame) RefuseModel(ctx context.Context, err error) error {
	e, ok := errors.AsType[*Error](err)
	if f.Kind != ModelFrame || f.State().Done() || !ok || !actionable(e) {
		f.FailModel(err)
		return err
	}
	rt := f.Request.rt
	rt.loopFrameDone(f, "", true)
	defer f.turnOver()
	if r := rt.refuseFrame(ctx, f, e); r != nil {
		return r
	}
	return err
}

// admitFrame is the admit check shared by every kind of frame: the request
// (and its ancestors) still running, the context alive, tokens and cost not
// spent, the depth budget not exceeded.
func (rt *Runtime) admitFrame(ctx context.Context, req *Request, depth int) *Error {
	if c := req.root.interrupted; c != nil {
		return (&InterruptedError{Cause: *c}).Refusal()
	}
	if c := req.stopped(); c != nil {
		return (&StopError{Cause: *c}).Refusal()
	}
	if req.ended.Load() {
		return fault.Cancelled(&Error{Guard: "admit", Type: TypeStopped, Code: "request_ended",
			Message:    fmt.Sprintf("Request %s has ended.", req.id),
			Suggestion: "Begin a new request for new work."})
	}
	if ctx.Err() != nil {
		return asError(fault.ContextCause(ctx, "admit"))
	}
	if q, dim, detail := req.meter.OverSpent(); q != nil {
		return budgetError(dim, req, q, detail)
	}
	if lim := req.meter.Limit.Depth; lim > 0 && depth > lim {
		return &Error{Guard: "admit", Type: TypeBudget, Code: "budget_depth",
			Message: fmt.Sprintf("This call would nest %d tool calls deep; the depth budget is %d.", depth, lim),
			Suggestion: "Do this step directly instead of through another nested tool or model call, " +
				"or answer with what you have."}
	}
	return nil
}

func (rt *Runtime) recordStop(r *Request, c Cause) {
	rt.log.Info("request stopped", "request", r.id, "mode", c.Mode.String(), "by", c.By, "reason", c.Reason)
	if rt.opts.Recorder != nil {
		rt.opts.Recorder.Record(context.Background(), &Event{Time: c.At, Root: r.root.id, Trace: r.root.trace, Request: r.id, Principal: r.principal, Tenant: r.tenant,
			Priority: int(r.priority), Agent: r.agent, State: Cancelled, Error: (&StopError{Cause: c}).Refusal(), Remaining: r.Remaining(), Stop: &c})
	}
}

func (rt *Runtime) record(ctx context.Context, f *Frame) {
	if rt.opts.Recorder == nil {
		return
	}
	e := &Event{Time: time.Now(), Started: f.Started, Root: f.Request.root.id, Trace: f.Request.root.trace, Request: f.Request.id,
		Principal: f.Request.principal, Tenant: f.Request.tenant, Priority: int(f.Request.priority), Frame: f.ID, CallID: f.CallID, Kind: f.Kind, Name: f.Name, Agent: f.Agent, Args: f.Args, State: f.State(), Error: f.Err(),
		Summary: f.Summary(), Tokens: f.Tokens(), Remaining: f.Request.Remaining(), Upstream: f.upstream}
	if f.Kind == ModelFrame {
		u := f.Usage()
		e.InputTokens, e.OutputTokens, e.Cost, e.ResponseModel = u.Input, u.Output, u.Cost, u.Model
		e.Route = f.route
	}
	if f.Parent != nil {
		e.Parent = f.Parent.ID
	} else {
		e.RemoteParent = f.remote
	}
	if end := f.Ended(); !end.IsZero() {
		// An ended frame's event is dated by its end, so that its start is
		// its time less its latency, exactly (a history rebuilt from the
		// audit log places it where it was).
		e.Time, e.Latency = end, end.Sub(f.Started)
	}
	e.Why = f.Why()
	e.Replayed = f.replayed.Load()
	if r := f.Result(); len(r) > 0 {
		e.Result = r[:min(len(r), 1024)] // cut after it was masked
	}
	// What the frame keeps is masked already (summary, why, error, result);
	// the arguments are masked as views show them, and the names for good
	// measure.
	e.Args = f.ShownArgs()
	rd := rt.opts.Redactor
	for _, s := range [...]*string{&e.Name, &e.Principal, &e.Tenant, &e.Agent, &e.CallID} {
		*s = rd.RedactString(*s)
	}
	if _, ok := ctx.(*detached); !ok {
		ctx = context.WithoutCancel(ctx)
	}
	last := f.Kind == ToolFrame && e.State.Done()
	k, ok := rt.opts.Recorder.(Keeper)
	if !ok {
		rt.opts.Recorder.Record(ctx, e)
		if last {
			f.recorded.Store(true) // its last event: the request may let it go (Options.StoredFrames)
		}
		return
	}
	// A frame is let go from memory once its last event is stored, not
	// when it is handed over: an event the Recorder dropped (its queue
	// full) would be in no view. A frame with an event lost stays, and the
	// request counts the loss.
	if last {
		k.Keep(ctx, e, (*keptLast)(f))
	} else {
		k.Keep(ctx, e, (*keptEvent)(f))
	}
}
