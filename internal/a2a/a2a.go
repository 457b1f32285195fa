// Package a2a is reach's A2A gateway (C6): it serves each configured agent
// at /a2a/NAME with the JSON-RPC binding (A2A 1.0, and 0.3 through the
// SDK's compatibility layer), and turns every message it forwards into a
// delegation of reach's runtime.
//
//	g, err := a2a.New(ctx, &a2a.Options{
//		Agents:  []a2a.Agent{{Name: "executor", URL: "http://127.0.0.1:9002"}},
//		Runtime: rt,     // reach.Runtime's Delegate
//		Link:    linker, // places a message in its caller's request
//	})
//	mux.Handle("/a2a/", g) // POST /a2a/executor, GET /a2a/executor/.well-known/agent-card.json
//	defer g.Close()
//
// # Delegation frames
//
// A message that starts a task is a hand-off: the gateway finds where its
// caller stands in reach's call graph (see [Link]), and calls
// [reach.Runtime.Delegate] there, which refuses it when the receiving agent
// is already on the delegation stack against its contract, when it would
// close a cycle of agents with the same task, when the same sub-task comes
// back with the same verdict a third time, or when a budget is spent. A
// refusal reaches the caller as a task in state TASK_STATE_REJECTED whose
// status message says what happened and what to do next. An accepted
// hand-off runs in a sub-request whose budget is carved from the caller's;
// the receiving agent's tool calls and model turns count against it when
// they carry reach's context, which the gateway adds to every message it
// forwards: "reach/request" and "reach/parent" in the message metadata, and
// the HTTP headers traceparent and "baggage: reach.request=ID".
//
// # Tasks
//
// Every send goes to the agent as SendStreamingMessage, so that the gateway
// learns the task's id at once and follows it to its end, whoever listens.
// The gateway's record of a task is what every reader sees: a terminal
// state is final (a late COMPLETED after CANCELED is recorded in the audit,
// and the task stays canceled). Stopping a task's sub-request (a CancelTask
// from the caller, a stop of any request above it, a spent budget) marks
// the task canceled and sends CancelTask to the agent; an agent that does
// not confirm within Options.CancelTimeout has its subtree isolated.
package a2a

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/store"
)

// Extension is the URI of reach's linking extension, announced in every
// card the gateway serves. See docs/A2A.md.
const Extension = "https://github.com/agentreach/reach/blob/main/docs/A2A.md#linking-v1"

// Metadata keys of the linking extension.
const (
	// MetaRequest is the request a message's work belongs to: on a message
	// the gateway forwards, the sub-request of the hand-off.
	MetaRequest = "reach/request"
	// MetaParent is the frame the work nests under: on a message the
	// gateway forwards, the hand-off's delegate frame.
	MetaParent = "reach/parent"
	// MetaBudget, in a message's metadata (or its request's), names the
	// budget of the request reach begins for a message that names no
	// request: a configured budget's name, or amounts ({"tool_calls": 20}),
	// as MCP's _meta "reach/budget". It beats a Reach-Budget header and a
	// baggage reach.budget; reach does not forward it.
	MetaBudget = "reach/budget"
	// MetaPriority, in a message's metadata (or its request's), is the
	// priority of the request reach begins for a message that names no
	// request (a whole number, or one as a string), as MCP's _meta
	// "reach/priority" and the Reach-Priority header, which it beats: it
	// lowers the principal's priority, never raises it. Reach does not
	// forward it.
	MetaPriority = "reach/priority"
	// MetaFrame, on a task returned to a caller that activated the
	// extension, is the hand-off's delegate frame.
	MetaFrame = "reach/frame"
	// MetaRefusal, on the status message of a refused task, says which
	// guard refused it: {"guard", "type", "code"}.
	MetaRefusal = "reach/refusal"
)

// Agent is one upstream A2A agent.
type Agent struct {
	// Name is the agent's name in reach: its path /a2a/NAME and the
	// receiving agent of its delegation frames.
	Name string
	// URL is the agent's base URL; its card is at URL/.well-known/agent-card.json.
	URL string
	// Budget, if not nil, is what a hand-off to the agent gets, each amount
	// capped at what the caller has left; if nil, what the caller has left.
	Budget *reach.Budget
	// Reentrancy, Key and OnViolation are the agent's contract (see
	// reach.Delegation); Key names fields of the message metadata.
	Reentrancy  reach.Reentrancy
	Key         []string
	OnViolation reach.Mode
}

// Owner is who a task belongs to: the caller that sent its first message.
type Owner struct{ Principal, Tenant string }

// TaskStore keeps tasks: internal/store's Tasks.
type TaskStore interface {
	PutTask(ctx context.Context, t *store.TaskRecord) (bool, error)
	GetTask(ctx context.Context, agent, id string) (*store.TaskRecord, error)
	ListTasks(ctx context.Context, agent, principal, tenant string, limit int) ([]*store.TaskRecord, error)
}

// Identity tells the gateway who is calling.
type Identity interface {
	Caller(ctx context.Context) Owner
}

// Link is what a message says about where its caller stands in reach's
// call graph, gathered from the message's metadata and the HTTP request.
type Link struct {
	Request string      // a request id: metadata reach/request (or the task named below)
	Parent  string      // a frame id (16 hex digits): metadata reach/parent
	Header  http.Header // the caller's headers: traceparent, baggage, Reach-Request, Reach-Parent, Reach-Scene, Reach-Budget, Reach-Priority
	Budget  any         // metadata reach/budget as sent (a name or amounts), for a new request; nil if none
	Agent   string      // the calling agent, for a request begun for the message
	// Priority is metadata reach/priority as sent, for a new request (the
	// linker reads and checks it as MCP's _meta reach/priority); nil if none.
	Priority any
}

// Linker places a message in its caller's request: under the frame the
// link names, at the top of the request it names, or at the top of a new
// request (with the caller's identity and the budget it names, or the default) when it
// names none. It checks that the caller may work in that request. It
// returns the context a hand-off from there starts with, and release,
// called when the hand-off is over.
type Linker interface {
	Place(ctx context.Context, l *Link) (ctx2 context.Context, release func(), err error)
}

// HandoffEnder is a Linker that also ends the request a message was
// placed in when the message's hand-off was stopped (a stop of it, its
// budget) and nothing else of that request is left to run
// (link.Owned.EndStoppedHandoff): the root request begun for an A2A
// client's message then ends with its hand-off's cause, not at its idle
// gap.
type HandoffEnder interface {
	EndStoppedHandoff(ctx context.Context, caller *reach.Request, c reach.Cause) bool
}

// Delegator starts hand-offs: reach.Runtime.
type Delegator interface {
	Delegate(ctx context.Context, d *reach.Delegation) (context.Context, *reach.Request, error)
}

// Auditor records what happens to tasks: their states, late states after
// a final one, cancels sent to agents and their answers, isolations and
// refusals. It must be safe for concurrent use and fast.
type Auditor interface {
	AuditTask(ctx context.Context, e *TaskEvent)
}

// TaskEvent is one audited change of a task.
type TaskEvent struct {
	Time    time.Time
	Kind    string // state, late, cancel, isolate, refused
	Agent   string
	Task    string
	Context string
	Request string        // the hand-off's sub-request (for a refusal, the caller's request if known)
	Root    string        // the root of its tree
	Frame   reach.FrameID // the hand-off's delegate frame (0 for a refusal)
	Owner   Owner
	State   string // the task's state at reach after the event
	Message string
}

// Options configure a Gateway. Agents, Runtime and Link are required.
type Options struct {
	Agents   []Agent
	Runtime  Delegator
	Link     Linker
	Identity Identity // if nil, every caller is the same owner
	Audit    Auditor  // if nil, nothing is recorded
	// Redactor masks what the agents say (their messages, status messages
	// and artifacts) before reach keeps, records or passes it on, and the
	// errors they answer with; if nil, nothing is masked.
	Redactor Redactor
	// PublicURL is the base URL callers reach the gateway at, for the
	// cards; if empty, the scheme and Host of each card request, when that
	// Host names the address the request came in at (a loopback name or
	// that address, at its port) or is one of Hosts; a card asked at
	// another Host is refused (421), so that no Host a client picks ends up
	// in the card a shared cache gives others. A card built from Host says
	// Cache-Control: no-store.
	PublicURL string
	// Hosts are the Host values (host, or host:port when the port is not
	// the scheme's default; case does not matter) a card may be built
	// from besides the request's own address: the names a proxy passes on.
	Hosts []string
	// HTTPClient talks to the agents; if nil, one without a timeout (a
	// task's stream may last long; each call has its own deadline). Reach
	// reads at most 64 MiB of any one answer or stream, and twice
	// MaxTaskBytes of an answer that is one task (GetTask, a polled
	// agent's answers, CancelTask), whatever client it is given (a copy of
	// this one, its transport wrapped).
	HTTPClient *http.Client
	// MaxBodyBytes bounds a request body; if zero, 4 MiB.
	MaxBodyBytes int64
	// CancelTimeout is how long an agent has to confirm a CancelTask
	// before its subtree is isolated; if zero, 3s. It also bounds how
	// long a stop of a task waits, before reach settles it canceled, for
	// what the agent's stream brings until the agent's own end of the
	// task (its answer to the cancel), and for those events to be applied
	// (kept) when the task's store writes are slow.
	CancelTimeout time.Duration
	// Late is how long the gateway goes on reading a canceled task's
	// stream, to record a late state; if zero, 30s.
	Late time.Duration
	// MaxTaskBytes bounds the bytes of a task's artifacts and messages
	// that reach keeps (and those of its feed of events): an agent's
	// answer that grows past it fails the task at reach, and the agent's
	// stream is let go; if zero, 8 MiB: a caller that falls behind gets
	// the task whole in one event, and the A2A SDK's client reads an SSE
	// event of at most 10 MB.
	MaxTaskBytes int64
	// MaxReadBytes bounds the bytes of the events that all the agents'
	// streams together have read and reach has not yet applied to their
	// tasks (stored, audited, passed on): each stream holds at most
	// MaxTaskBytes of them, and while the store is slow, streams times
	// MaxTaskBytes would not bound the memory. Past it a stream is not
	// read until the events before it are applied: the agent's
	// connection waits (its TCP window fills), nothing is dropped, and a
	// stop of its task still applies what was read before it. An event
	// larger than the budget is read when no other is held. If zero,
	// 64 MiB.
	MaxReadBytes int64
	// MaxTasks is how many ended tasks are kept for GetTask and
	// ListTasks; if zero, 10000. Past it, the principals that keep the
	// most ended tasks lose their oldest first (fair shares).
	MaxTasks int
	// MaxLiveTasks bounds the tasks one principal (in its tenant) has
	// running at reach, over all agents: a message that would start one
	// more is answered with a rejected task that says so (a continuation of
	// a running task is not counted again). Nothing forgets a running task
	// (its agent may work on it for hours), and each holds its stream and
	// what reach keeps of it: 1,000 running tasks held 128 MB. If zero,
	// DefaultMaxLiveTasks; below zero, no bound.
	MaxLiveTasks int
	// MaxTotalBytes bounds what all the tasks reach keeps hold together
	// (each as MaxTaskBytes bounds it): past it the oldest ended tasks are
	// let go first, and while the live ones alone hold more, a new task
	// is refused (rejected at reach, its message saying why). If zero,
	// 256 MiB.
	MaxTotalBytes int64
	// CardTTL is how long reach uses an agent's card before it fetches
	// it again (in the background, the request that finds it older served
	// with the one it has; a failed fetch keeps it); if zero, a minute.
	CardTTL time.Duration
	// InputWait is how long a task waiting for its caller
	// (TASK_STATE_INPUT_REQUIRED or TASK_STATE_AUTH_REQUIRED) waits for a
	// message before reach stops its hand-off: the task is canceled at
	// reach and at the agent, its message saying it waited this long with
	// no answer and to start a new task. A task waiting for its caller
	// holds its request, a slot of MaxLiveTasks and what reach keeps of it
	// as a running one does, and an abandoned one would hold them for
	// ever. If zero, 5 minutes (the gateway gives its idle_gap); below
	// zero, no bound.
	InputWait time.Duration
	// Offline fetches no card until a request needs one (for checking a
	// configuration).
	Offline bool
	// Tasks, if not nil, keeps every task's latest view and state at reach
	// (internal/store): the instances that share it answer GetTask,
	// ListTasks and CancelTask for each other's tasks, and a task's state
	// at reach never goes back, whichever instance writes.
	Tasks TaskStore
	// Stop, if not nil, stops a request that another instance runs (the
	// sub-request of a task it runs), for a CancelTask that comes here.
	Stop func(ctx context.Context, request, reason string) error
	// Over, if not nil, reports whether the request id is over at reach
	// with no gateway left to follow its tasks (a restart interrupted it):
	// a stored task still running whose hand-off's sub-request is over,
	// and that no task here follows, was cut off with it, and is shown
	// and stored failed.
	Over func(request string) bool
	// Logger; if nil, logs are discarded.
	Logger *slog.Logger
}

// Gateway serves the agents. Make one with New; it is safe for concurrent
// use and implements http.Handler for the paths under /a2a/.
type Gateway struct {
	opts   Options
	log    *slog.Logger
	agents map[string]*agent
	names  []string
	tasks  *registry
	live   liveTasks   // each principal's running tasks, for MaxLiveTasks
	follow followers   // each principal's open streams of its tasks (SubscribeToTask)
	reads  *readBudget // the events all the streams read and not yet applied (MaxReadBytes)

	base   context.Context // the gateway's lifetime
	cancel context.CancelFunc
	bg     bgGroup // what runs in the background, which Close waits for
	stops  armed   // the tasks whose hand-off's end runs their stop (task.stopped), which Close waits for once begun
	writes gate    // the store writes under way; none begins once Close waited for them

	auditQ      chan *TaskEvent // to the Auditor, in order, off the call path
	auditDone   chan struct{}
	auditMu     sync.RWMutex // guards closing auditQ
	auditClosed bool

	// stopTold, for tests, runs in a stop that waits for the agent, once
	// the agent is being told of it and before the stop looks at what the
	// streams brought: a test has the agent's answer arrive first.
	stopTold func(*task)
}

var _ http.Handler = (*Gateway)(nil)

// New checks the agents and returns a gateway; it fetches their cards in
// the background (an agent that is not up yet is asked again when a
// message or card request needs it). Close it when done.
func New(ctx context.Context, o *Options) (*Gateway, error) {
	if o == nil || o.Runtime == nil || o.Link == nil {
		return nil, errors.New("a2a: the runtime and the linker are required")
	}
	g := &Gateway{opts: *o, agents: map[string]*agent{}}
	op := &g.opts
	op.MaxBodyBytes = cmp.Or(op.MaxBodyBytes, 4<<20)
	op.CancelTimeout = cmp.Or(op.CancelTimeout, 3*time.Second)
	op.InputWait = cmp.Or(op.InputWait, 5*time.Minute)
	op.CardTTL = cmp.Or(op.CardTTL, time.Minute)
	op.Late = cmp.Or(op.Late, 30*time.Second)
	op.MaxTaskBytes = cmp.Or(op.MaxTaskBytes, 8<<20)
	op.MaxTasks = cmp.Or(op.MaxTasks, 10000)
	op.MaxLiveTasks = cmp.Or(op.MaxLiveTasks, DefaultMaxLiveTasks)
	op.MaxTotalBytes = cmp.Or(op.MaxTotalBytes, 256<<20)
	op.MaxReadBytes = cmp.Or(op.MaxReadBytes, 64<<20)
	g.reads = newReadBudget(op.MaxReadBytes)
	if op.HTTPClient == nil {
		op.HTTPClient = &http.Client{Transport: capped{http.DefaultTransport.(*http.Transport).Clone(), maxAnswerBytes}}
	} else {
		// An embedder's client is read to the same bounds: a copy whose
		// transport caps each answer (the embedder's is left as it was).
		hc := *op.HTTPClient
		hc.Transport = capped{cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), maxAnswerBytes}
		op.HTTPClient = &hc
	}
	op.HTTPClient.CheckRedirect = sameOrigin(op.HTTPClient.CheckRedirect)
	if op.PublicURL != "" {
		u, err := url.Parse(op.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("a2a: public URL %q: want http(s)://host[:port][/path]", op.PublicURL)
		}
		op.PublicURL = strings.TrimSuffix(op.PublicURL, "/")
	}
	hosts := make([]string, 0, len(op.Hosts))
	for _, h := range op.Hosts {
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return nil, fmt.Errorf("a2a: host %q: want a Host as callers send it, host or host:port", h)
		}
		hosts = append(hosts, strings.ToLower(h))
	}
	op.Hosts = hosts
	g.log = cmp.Or(op.Logger, slog.New(slog.DiscardHandler))
	for i, a := range op.Agents {
		if err := CheckAgent(&a); err != nil {
			return nil, fmt.Errorf("agents[%d]: %w", i, err)
		}
		if _, dup := g.agents[a.Name]; dup {
			return nil, fmt.Errorf("agents[%d]: two agents are named %s", i, a.Name)
		}
		g.agents[a.Name] = newAgent(g, a)
		g.names = append(g.names, a.Name)
	}
	slices.Sort(g.names)
	g.tasks = newRegistry(op.MaxTasks, op.MaxTotalBytes)
	g.base, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if op.Audit != nil {
		g.auditQ, g.auditDone = make(chan *TaskEvent, 4096), make(chan struct{})
		go func() {
			defer close(g.auditDone)
			for e := range g.auditQ {
				op.Audit.AuditTask(context.Background(), e)
			}
		}()
	}
	for _, name := range g.names {
		if a := g.agents[name]; !op.Offline {
			g.background(func() { a.resolve(g.base) })
		}
	}
	return g, nil
}

// maxAnswerBytes bounds what the gateway reads of one answer of an agent
// (a whole task stream included): the SDK's readers do not.
const maxAnswerBytes = 64 << 20

// capped is a RoundTripper whose answers' bodies fail past max bytes.
type capped struct {
	rt  http.RoundTripper
	max int64
}

func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil {
		b := &cappedBody{ReadCloser: resp.Body, left: c.max}
		if n, ok := r.Context().Value(taskCapKey{}).(int64); ok && n < c.max {
			b.left, b.task = n, true
		}
		resp.Body = b
	}
	return resp, err
}

// taskCapKey marks a call whose answer is one task (GetTask, a polled
// agent's send and GetTask, CancelTask): its value, twice
// Options.MaxTaskBytes, bounds what is read of that answer, below
// maxAnswerBytes.
type taskCapKey struct{}

// taskCap bounds what is read of the answer of a call made with ctx, one
// task, to twice MaxTaskBytes (JSON carries files' bytes as base64, and
// escapes); what the task holds is then bounded by MaxTaskBytes.
func (g *Gateway) taskCap(ctx context.Context) context.Context {
	return context.WithValue(ctx, taskCapKey{}, 2*g.opts.MaxTaskBytes)
}

// errTaskTooLarge is the error of reading past that bound.
var errTaskTooLarge = errors.New("the agent's task is larger than reach reads of a task")

type cappedBody struct {
	io.ReadCloser
	left int64
	task bool // bounded by taskCapKey's value
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.task {
			return 0, errTaskTooLarge
		}
		return 0, fmt.Errorf("the agent's answer is larger than %d MiB, more than reach reads", maxAnswerBytes>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// CheckAgent checks an agent's configuration: a name usable in a path, an
// http(s) URL, a known contract.
func CheckAgent(a *Agent) error {
	if a.Name == "" {
		return errors.New("an agent needs a name")
	}
	for _, c := range a.Name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("agent name %q: use letters, digits, '_', '-' or '.' (it is a path: /a2a/NAME)", a.Name)
		}
	}
	if len(a.Name) > 64 {
		return fmt.Errorf("agent name %q is longer than 64 characters", a.Name)
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("agent %s: url %q: want the agent's base URL, http(s)://host:port (its card is at URL/.well-known/agent-card.json)", a.Name, a.URL)
	}
	if u.User != nil {
		return fmt.Errorf("agent %s: url %q carries credentials; they would be sent in the clear to anyone who reads the logs", a.Name, a.URL)
	}
	switch a.Reentrancy {
	case "", reach.NonReentrant, reach.Reentrant:
	case reach.Keyed:
		if len(a.Key) == 0 {
			return fmt.Errorf("agent %s: reentrancy keyed needs key: [the message metadata fields that key it]", a.Name)
		}
	default:
		return fmt.Errorf("agent %s: unknown reentrancy %q (want non_reentrant, reentrant or keyed)", a.Name, a.Reentrancy)
	}
	switch a.OnViolation {
	case "", reach.Refuse, reach.Warn, reach.Allow:
	default:
		return fmt.Errorf("agent %s: unknown on_violation %q (want refuse, warn or allow)", a.Name, a.OnViolation)
	}
	return nil
}

// Close stops following the tasks in flight (they are not canceled),
// waits for the gateway's background work and for the stops begun before
// it (a task whose hand-off ended, by the gateway's own close among
// others, settled and stored canceled), and hands the last task events to
// the Auditor. Once it returns nothing is written to the store (a state
// settled after it is not stored, nor shown: logged) and nothing audited,
// so that its owner may close them. Each step is bounded: a stop waits
// for the agent no longer once the gateway closes, and a write for the
// store 10 s at most.
func (g *Gateway) Close() error {
	g.cancel() // new messages are refused, the streams let go
	bound := time.NewTimer(closeWait)
	defer bound.Stop()
	for {
		// A stop begun spawns background work (its cancel to the
		// agent), and background work ends hand-offs (a stream's last
		// event): each is waited for until neither is left.
		waited, left := g.stops.wait(bound.C)
		if left > 0 {
			g.log.Error("a2a: stops of tasks begun before the gateway closed did not end within the close's bound; what they settle after it is not stored", "stops", left, "bound", closeWait)
			g.bg.Wait()
			break
		}
		if !g.bg.Wait() && !waited {
			break
		}
	}
	g.writes.close()
	g.auditMu.Lock()
	if g.auditQ != nil && !g.auditClosed {
		g.auditClosed = true
		close(g.auditQ)
	}
	g.auditMu.Unlock()
	if g.auditDone != nil {
		<-g.auditDone
	}
	return nil
}

// record hands a task event to the Auditor, in order and without waiting
// for it (unless a burst fills the queue).
func (g *Gateway) record(e *TaskEvent) {
	g.auditMu.RLock()
	defer g.auditMu.RUnlock()
	if g.auditQ == nil {
		return
	}
	if g.auditClosed {
		g.log.Warn("a2a: a task's event came after the gateway closed; it is not audited", "kind", e.Kind, "agent", e.Agent, "task", e.Task, "state", e.State)
		return
	}
	g.auditQ <- e
}

// background runs f in a goroutine that Close waits for.
func (g *Gateway) background(f func()) {
	g.bg.Go(f)
}

// bgGroup counts the goroutines Gateway.background runs, so that Close
// waits for them. A sync.WaitGroup may not be: a stop's settling begins a
// goroutine of its own, and a stop can come while Close waits (the
// gateway's close ends every request, and a hand-off's end cancels its
// task), which is an Add from zero concurrent with Wait, which a
// WaitGroup forbids (the race detector's report, and a Wait that may
// return before it). Here a goroutine begun while Close waits is waited
// for too; one begun after Close returned runs, and nothing waits for it.
type bgGroup struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n falls to 0 while Wait waits
}

// Go runs f in a goroutine of its own, counted.
func (b *bgGroup) Go(f func()) {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	go func() {
		defer b.done()
		f()
	}()
}

func (b *bgGroup) done() {
	b.mu.Lock()
	b.n--
	if b.n == 0 && b.zero != nil {
		close(b.zero)
		b.zero = nil
	}
	b.mu.Unlock()
}

// Wait returns once no goroutine it counts runs, and reports whether it
// waited for one.
func (b *bgGroup) Wait() bool {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return false
	}
	if b.zero == nil {
		b.zero = make(chan struct{})
	}
	ch := b.zero
	b.mu.Unlock()
	<-ch
	return true
}

// armed are the tasks whose stop (task.stopped) runs when their
// hand-off's sub-request ends. context.AfterFunc runs it on a goroutine of
// its own, which nothing counted: the gateway's close ends every request
// (link.Owned.EndAll) just before it closes this gateway, and a stop so
// begun settled the task, stored it and audited it after the store and
// the audit log were closed (an error logged, the canceled state lost).
type armed struct {
	mu sync.Mutex
	m  map[*task]chan struct{} // closed once the task's stop returned
}

// arm runs t.stopped once ctx ends, counted until it returns.
func (a *armed) arm(ctx context.Context, t *task) {
	ran := make(chan struct{})
	a.mu.Lock()
	if a.m == nil {
		a.m = map[*task]chan struct{}{}
	}
	a.m[t] = ran
	a.mu.Unlock()
	context.AfterFunc(ctx, func() {
		defer func() {
			a.mu.Lock()
			delete(a.m, t)
			a.mu.Unlock()
			close(ran)
		}()
		t.stopped()
	})
}

// closeWait bounds how long Close waits for the stops begun before it:
// each step of a stop is bounded (a stop waits for the agent no longer
// once the gateway closes, a store write 10 s at most), this whatever
// they wait for.
const closeWait = 15 * time.Second

// wait waits for the stops of the tasks whose hand-off has ended (their
// stop begun, or about to), until bound fires, and reports whether there
// was one, and how many it did not wait for (bound fired). A task whose
// hand-off goes on is not waited for: a stop of it after Close writes
// nothing.
func (a *armed) wait(bound <-chan time.Time) (waited bool, left int) {
	a.mu.Lock()
	var ended []chan struct{}
	for t, ran := range a.m {
		if t.req.Context().Err() != nil {
			ended = append(ended, ran)
		}
	}
	a.mu.Unlock()
	if len(ended) > 0 && closeWaits != nil {
		closeWaits()
	}
	for i, ran := range ended {
		select {
		case <-ran:
		case <-bound:
			return true, len(ended) - i
		}
	}
	return len(ended) > 0, 0
}

// closeWaits, if set (tests), is called as Close begins to wait for stops
// begun before it.
var closeWaits func()

// gate counts the store writes under way (enter, leave); once closed
// (close, which waits for those under way) none begins.
type gate struct {
	mu     sync.Mutex
	n      int
	closed bool
	zero   chan struct{} // closed when n falls to 0 while close waits
}

// enter counts a write about to begin, or reports false once the gate is
// closed: the write is not made.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

// close refuses the writes to come and waits for those under way.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	for g.n > 0 {
		if g.zero == nil {
			g.zero = make(chan struct{})
		}
		ch := g.zero
		g.mu.Unlock()
		<-ch
		g.mu.Lock()
	}
	g.mu.Unlock()
}

// ServeHTTP serves /a2a/NAME (JSON-RPC, with or without a trailing slash)
// and /a2a/NAME/.well-known/agent-card.json.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, sub, _ := strings.Cut(rest, "/")
	a := g.agents[name]
	if a == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"code": "unknown_agent",
			"message":    fmt.Sprintf("There is no agent named %q here.%s", name, g.suggest(name)),
			"suggestion": "Send to /a2a/NAME with one of the agents GET /v1/agents lists."}})
		return
	}
	switch sub {
	case "":
		if g.base.Err() != nil {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]string{"code": "shutting_down",
				"message":    "The gateway is shutting down and takes no more messages.",
				"suggestion": "Send the message again in a moment: to another instance, or to this one once it is back."}})
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": map[string]string{"code": "method_not_allowed",
				"message":    "The A2A endpoint takes JSON-RPC requests by POST.",
				"suggestion": fmt.Sprintf("POST to /a2a/%s, or GET /a2a/%s/.well-known/agent-card.json for the card.", name, name)}})
			return
		}
		a.serveRPC(w, r)
	case ".well-known/agent-card.json":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		a.serveCard(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"code": "not_found",
			"message":    fmt.Sprintf("/a2a/%s/%s is not an A2A path.", name, sub),
			"suggestion": fmt.Sprintf("POST JSON-RPC to /a2a/%s, or GET /a2a/%s/.well-known/agent-card.json.", name, name)}})
	}
}

func (g *Gateway) suggest(name string) string {
	if len(g.names) == 0 {
		return " No agents are configured (agents: in the configuration)."
	}
	best, bestD := "", 1<<30
	for _, n := range g.names {
		if d := names.Distance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD <= max(2, len(name)/3) {
		return fmt.Sprintf(" Did you mean %s?", best)
	}
	return " Agents: " + strings.Join(g.names, ", ") + "."
}

// Status is what GET /v1/agents shows of an agent.
type Status struct {
	Name        string       `json:"name"`
	URL         string       `json:"url"`
	Path        string       `json:"path"`
	Reentrancy  string       `json:"reentrancy"`
	Key         []string     `json:"key,omitempty"`
	Budget      *budget.View `json:"budget,omitempty"`
	Card        bool         `json:"card"` // its card was fetched
	CardName    string       `json:"card_name,omitempty"`
	Description string       `json:"description,omitempty"`
	Skills      []string     `json:"skills,omitempty"`
	Streaming   bool         `json:"streaming"`
	Protocol    string       `json:"protocol,omitempty"` // the protocol version reach speaks to it
	Error       string       `json:"error,omitempty"`    // why its card could not be fetched
	LiveTasks   int          `json:"live_tasks"`
}

// budgetView is an agent's named budget as GET /v1/agents shows it, as
// a request's is shown.
func budgetView(b *reach.Budget) *budget.View {
	if b == nil {
		return nil
	}
	return new(b.View())
}

// Agents lists the agents, sorted by name. It asks an agent whose card
// has not been fetched again (at most once a second each).
func (g *Gateway) Agents(ctx context.Context) []Status { return g.AgentsFor(ctx, nil) }

// AgentsFor is Agents with LiveTasks counting the live tasks whose owner
// counted reports true (nil: every task): GET /v1/agents counts those of
// the caller, of its tenant for a tenant's operator, of everyone for a
// global operator.
func (g *Gateway) AgentsFor(ctx context.Context, counted func(Owner) bool) []Status {
	out := make([]Status, 0, len(g.names))
	for _, n := range g.names {
		out = append(out, g.agents[n].status(ctx, counted))
	}
	return out
}

// Check fetches every agent's card and checks it, for `reach validate`:
// a card that cannot be used (no JSON-RPC interface, not a card) is an
// error; an agent that does not answer, or a card whose interface is not
// at the configured origin, is a warning.
func (g *Gateway) Check(ctx context.Context) (warnings []string, err error) {
	var errs []error
	for _, n := range g.names {
		w, e := g.agents[n].check(ctx)
		warnings = append(warnings, w...)
		if e != nil {
			errs = append(errs, e)
		}
	}
	return warnings, errors.Join(errs...)
}
