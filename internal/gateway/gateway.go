// Package gateway is reach's server, put together: the composition root
// that builds, from a configuration, the runtime and the parts around it,
// and serves them until closed. Each part is a room of its own:
//
//	internal/config      the configuration (one YAML file)
//	internal/link        where a client's call goes: its request, its parent frame
//	internal/front       the MCP server (Streamable HTTP and stdio)
//	internal/mcpwire     the fast tools/call reader and writer, HTTP/1.1, SSE
//	internal/upstream    the MCP client pool (the upstream servers' tools)
//	internal/modelproxy  POST /v1/chat/completions, POST /v1/responses
//	internal/httpapi     the HTTP API, the UI's data, /metrics, /healthz
//	internal/builtin     the built-in example tools
//
// New builds them in this order: config -> the runtime's reach.Catalog
// (empty: the parts look tools up in it) -> the parts the runtime is built
// with (parts.go: authenticator, policies, recorders, approvals, store) ->
// the runtime -> the upstream pool -> the tools served (catalog.go:
// overrides, pinning, registered in the catalog) -> the MCP server and the
// HTTP handler. Serve serves them; Close ends what
// runs in the background (one goroutine group, Go) and closes them.
//
//	cfg, _ := config.Load("reach.yaml")
//	g, err := gateway.New(ctx, cfg, nil) // connects upstreams, registers their tools
//	if err != nil { ... }
//	defer g.Close()
//	ln, _ := net.Listen("tcp", "127.0.0.1:7400")
//	g.Serve(ctx, ln) // /mcp, /v1/..., /healthz until ctx ends
//
// Every tool call belongs to a reach request (budgets, cancel, the call
// graph): internal/link says how a client names one and the frame its call
// nests under. With auth configured every path but the probes needs an API
// key or a JWT, Cedar policies decide calls and listings, and upstream tool
// definitions are pinned (docs/PERMISSIONS.md). docs/ARCHITECTURE.md follows
// one tools/call through the rooms.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/a2a"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/builtin"
	"github.com/agentreach/reach/internal/cluster"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/front"
	"github.com/agentreach/reach/internal/httpapi"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/modelproxy"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/openai"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/ratelimit"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/telemetry"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Gateway beyond its config.Config. A nil *Options means all
// defaults.
type Options struct {
	// Logger; if nil, logs are discarded.
	Logger *slog.Logger
	// Model answers the model calls of built-in tools; if nil, the config.Config's
	// model, or a scripted stand-in when it has none.
	Model builtin.Model
	// Offline builds the gateway without connecting to upstreams (their
	// tools are then missing), for checking a configuration.
	Offline bool
	// Version is reported to MCP clients; if empty, the module's version.
	Version string
	// Ephemeral keeps no state in the data folder (no store, audit log or
	// checkpoints), for checking a configuration.
	Ephemeral bool
	// RequireUpstreams treats every upstream as required: one that cannot
	// be reached fails New, for checking a configuration (reach validate).
	RequireUpstreams bool
	// Recorder, if not nil, is told about every frame too (after the
	// statistics, metrics and tracer), e.g. an audit log.
	Recorder reach.Recorder
	// Shown are requests of other runtimes that the web UI shows too, after
	// the gateway's own (reach demo --serve shows the scenarios it ran).
	Shown []*reach.Request
}

// Gateway serves a runtime's tools over MCP and HTTP. Make one with New;
// its methods are safe for concurrent use.
type Gateway struct {
	cfg     *config.Config
	opts    Options
	rt      *reach.Runtime
	catalog *reach.Catalog // the runtime's tools, made first: the policies, approvals and telemetry look tools up in it
	log     *slog.Logger
	model   builtin.Model
	owned   *link.Owned // the requests the gateway begins for its clients
	keys    *auth.Keys  // the API keys, with auth.keys (Warnings reads them)
	// begins is owned once made, for the runtime's History (persistence),
	// which the runtime may ask before it is.
	begins  atomic.Pointer[link.Owned]
	front   *front.Server // the MCP server
	handler http.Handler
	server  *httpapi.Server // serves handler (Serve)

	ctx    context.Context // the gateway's lifetime
	cancel context.CancelFunc
	ready  chan struct{} // closed when New has built everything

	choices    link.ModelChoices   // tool_call ids the model proxy saw -> the model turns that chose them
	authn      *auth.Authenticator // non-nil when clients must authenticate
	policy     *policy.Engine      // nil: decisions by access level
	reloads    [2]atomic.Int64     // policy file changes put in force, and those that failed to load
	awaiting   sync.Map            // tool name -> struct{}: a changed upstream definition waiting for approval
	pins       *pin.Store          // nil without upstreams
	stats      *telemetry.Stats
	metrics    *telemetry.Metrics
	tracer     *telemetry.Tracer // nil without telemetry.otlp_endpoint
	approvals  *approval.Queue
	redactor   *redact.Redactor
	store      store.Store        // nil without a data folder (or store:)
	cluster    *cluster.Cluster   // the instances sharing a PostgreSQL store; nil with SQLite
	unlockData func()             // lets go of the SQLite data folder (lockDataDir); nil without one
	idem       *store.Idempotency // the runtime's idempotency records; nil without a data folder
	history    *durable.History   // the requests of earlier runs; nil without a data folder
	repeats    *Repeats           // the runs of errors the store's loggers collapse (an outage)
	audit      *audit.Log         // nil without a data folder
	bg         sync.WaitGroup     // background goroutines (see Go; counted under mu, never after closed)
	agents     *a2a.Gateway       // the A2A agents; nil without any

	levels front.Levels   // the logging levels the MCP clients asked for
	pool   *upstream.Pool // nil offline

	mu       sync.Mutex
	closed   bool
	draining atomic.Bool // Serve is shutting down: /readyz answers 503
	waited   atomic.Bool // Serve waited for the calls its end of the requests cut (endBeforeClosing): Close waits no more

	// recoveredStopped holds the ids of the requests a recovery here found
	// stopped (noteStopped): nothing follows their tasks any more. Those
	// the runtime no longer keeps are let go at the next recovery.
	recoveredStopped sync.Map
}

// New builds a gateway from cfg: the runtime, the built-in tools, the
// upstreams (connected and listed, unless Options.Offline), the tool
// overrides, the MCP server and the HTTP handler. It fails, with the line
// of the configuration at fault where there is one, on anything that would
// not work; Close it when done.
func New(ctx context.Context, cfg *config.Config, opts *Options) (_ *Gateway, err error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	g := &Gateway{cfg: cfg, ready: make(chan struct{})}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Model != nil && cfg.Model != nil {
		return nil, errors.New("gateway.New: Options.Model and the configuration's model both name the built-in tools' model; give one")
	}
	red, err := newRedactor(cfg)
	if err != nil {
		return nil, err
	}
	// An error quotes what failed: an upstream's URL, whose query may hold
	// its key, an agent's, the store's. The log and the banner mask them;
	// so does the error, which serve and validate print.
	defer func() {
		if err != nil {
			err = maskError(red, err)
		}
	}()
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.redactor = red
	g.log = slog.New(redactHandler{g.log.Handler(), red})
	g.model = g.opts.Model
	if g.model == nil {
		if cfg.Model != nil {
			mc := cfg.Model
			g.model = builtin.NewOpenAI(mc.BaseURL, mc.APIKey.Reveal(), mc.Name, time.Duration(mc.Timeout))
		} else {
			g.model = builtin.Scripted{}
		}
	}
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if g.authn, err = g.authenticator(); err != nil {
		g.cancel()
		return nil, err
	}
	g.catalog = reach.NewCatalog()
	ro := &reach.Options{DefaultBudget: cfg.DefaultBudget(), Catalog: g.catalog, Logger: g.log, Redactor: g.redactor}
	ro.Missing = g.missingTool // a held tool is refused as held (pinning.go)
	ro.RefusedInARow = cfg.RefusedInARowOption()
	if err := g.authorizer(ro); err != nil {
		g.cancel()
		return nil, err
	}
	if cfg.Model != nil {
		ro.Prices = cfg.Model.Prices
	}
	ro.Breaker = cfg.Breaker.Policy()
	ro.RateLimit = cfg.RateLimit.Limits()
	for _, u := range cfg.Upstreams {
		if u.Breaker != nil {
			if ro.UpstreamBreakers == nil {
				ro.UpstreamBreakers = map[string]*reach.BreakerPolicy{}
			}
			ro.UpstreamBreakers[u.Name] = u.Breaker.Policy()
		}
	}
	if err := g.operators(ctx, ro); err != nil {
		g.cancel()
		g.closeStore() // and the data folder, for whoever opens it next
		return nil, err
	}
	if err := ro.Check(); err != nil { // what reach.New would panic on
		g.cancel()
		g.closeStore()
		return nil, fmt.Errorf("gateway.New: %w", err)
	}
	g.rt = reach.New(ro)
	g.metrics.WithBreakers(g.rt.Breakers)
	g.owned = link.NewOwned(g.ctx, g.rt, cfg.IdleAfter(), link.Budgets{Default: cfg.DefaultBudget(), Named: cfg.NamedBudgets(), Principals: budgetNamers(cfg), Tenants: cfg.BudgetTenants()}).Bound(cfg.SessionsCap()).WithLogger(g.log)
	g.owned.WithPriorities(func(o link.Owner) int { return cfg.RateLimit.Priority(o.Principal, o.Tenant) })
	g.begins.Store(g.owned)
	if g.cluster != nil {
		g.owned.WithRemote(g.cluster) // a call under another instance's frame sees its stack
	}

	var tools []reach.Tool
	if cfg.Examples || len(cfg.Upstreams) == 0 {
		tools = append(tools, builtin.Tools(g.rt, g.model)...)
	}
	if !g.opts.Offline {
		pool, err := upstream.Connect(ctx, g.ctx, &upstream.Options{Config: cfg, Runner: g, Catalog: g, Levels: &g.levels, Models: g.rt,
			Redactor: g.redactor, Version: g.version(), Logger: g.log, RequireAll: g.opts.RequireUpstreams})
		if err != nil {
			g.Close()
			return nil, err
		}
		g.pool = pool
		if err := g.openPins(); err != nil {
			g.Close()
			return nil, err
		}
		// Each upstream's tools as listed at start: the pins of the tools
		// of a reached upstream that no longer lists them are noted so.
		tools = append(tools, g.pinned(pool.Tools(), pool.Listed()...)...)
	}
	if err := g.register(tools); err != nil {
		g.Close()
		return nil, err
	}
	if err := g.recover(ctx); err != nil {
		g.Close()
		return nil, err
	}
	if g.agents, err = g.newAgents(); err != nil {
		g.Close()
		return nil, err
	}
	fo := &front.Options{Runtime: g.rt, Owned: g.owned, Choices: &g.choices, Authn: g.authn, Tools: g, Levels: &g.levels,
		Version: g.version(), BodyLimit: cfg.BodyLimit(), IdleAfter: cfg.IdleAfter(), Protocols: cfg.MCPProtocols,
		MaxSessions: cfg.SessionsCap(), Logger: g.log}
	if g.pool != nil {
		fo.Upstreams = g.pool
	}
	if g.store != nil {
		fo.Records = g.store
	}
	g.front = front.New(fo)
	if g.cluster != nil {
		// A session's DELETE, or its idle gap, through any instance ends it
		// on this one too, if it holds it.
		g.cluster.OnSessionEnd(&cluster.SessionEnds{Ended: g.front.EndRecorded, Recheck: g.front.RecheckRecorded})
	}
	if g.pool != nil {
		if g.policy != nil { // resources, prompts and completions under the policies (content.go)
			g.pool.SetGuard(g.contentGuard)
			g.front.MCP().AddReceivingMiddleware(g.filterContent)
		}
		if g.pins != nil { // prompts and resources pinned as tools are (catalog.go)
			g.pool.SetPinner(g.pinContent)
		}
		g.pool.Serve(ctx, g.front.MCP())
	}
	g.front.SyncTools()
	g.server = g.newServer()
	g.handler = g.server.Handler()
	g.Go(func() { g.owned.Run(g.ctx, g.front.SweepClients) })
	close(g.ready)
	return g, nil
}

// unknownScopes warns about a policy scoped to a tool or an upstream that
// the gateway does not have (offline, a tool no upstream could expose): a
// typo that makes the policy apply to nothing, silently, a forbid too.
func (g *Gateway) unknownScopes() []string {
	var out []string
	ups := make([]string, 0, len(g.cfg.Upstreams))
	for _, u := range g.cfg.Upstreams {
		ups = append(ups, u.Name)
	}
	for _, sc := range g.policy.Policies().Scopes() {
		if sc.Upstream {
			if slices.Contains(ups, sc.Name) {
				continue
			}
			hint := "the upstreams are " + strings.Join(ups, ", ")
			if len(ups) == 0 {
				hint = "no upstream is configured"
			}
			if c := names.Closest(sc.Name, slices.Values(ups), 1); len(c) > 0 {
				hint = "did you mean " + c[0] + "?"
			}
			out = append(out, fmt.Sprintf("policy: %s is scoped to Reach::Upstream::%q, which is no upstream here (%s): it applies to nothing; an upstream is named as configured (upstreams[].name), whatever its prefix", sc.Policy, sc.Name, hint))
			continue
		}
		if _, ok := g.rt.Tool(sc.Name); ok || (g.opts.Offline && g.upstreamMayExpose(sc.Name)) || g.awaitingApproval(sc.Name) {
			continue
		}
		out = append(out, fmt.Sprintf("policy: %s is scoped to Reach::Tool::%q, which is no tool here%s: it applies to nothing", sc.Policy, sc.Name, suggestTool(sc.Name, g.rt.Tools())))
	}
	return out
}

// Warnings are what `reach validate` reports without failing: every write
// or high-risk tool that declares neither an undo nor an idempotent
// upstream ("every new write tool gets its undo first"), follow-ups
// naming tools that do not exist, and policies that can never apply.
func (g *Gateway) Warnings() []string {
	var out []string
	if g.policy != nil {
		for _, w := range g.policy.Policies().Warnings() {
			out = append(out, "policy: "+w)
		}
		out = append(out, g.unknownScopes()...)
	}
	out = append(out, g.cfg.InertWarnings()...)
	out = append(out, g.cfg.BudgetWarnings()...)
	if g.keys != nil {
		if list, err := g.keys.List(); err == nil {
			out = append(out, g.cfg.BareBudgetPrincipalWarnings(func(p string) []string {
				var ts []string
				for _, k := range list {
					if k.Principal == p && k.Revoked == nil {
						ts = append(ts, k.Tenant)
					}
				}
				slices.Sort(ts)
				return ts
			})...)
		}
	}
	for _, t := range g.rt.Tools() {
		if (t.Access == reach.Write || t.Access == reach.HighRisk) && t.Undo == nil && !t.Idempotent {
			out = append(out, fmt.Sprintf("tool %s is a %s tool with neither an undo nor an idempotency key: a failed chain cannot be compensated and a retry may repeat it (declare tools.%s.undo, or idempotent: true if the upstream honours the key)", t.Name, t.Access, t.Name))
		}
		for what, f := range map[string]*reach.Followup{"undo": t.Undo, "refresh": t.Refresh} {
			if f != nil {
				if _, ok := g.rt.Tool(f.Tool); !ok {
					out = append(out, fmt.Sprintf("tool %s: its %s names %s, which is not a tool here", t.Name, what, f.Tool))
				}
			}
		}
		if t.Verify != nil {
			if _, ok := g.rt.Tool(t.Verify.Tool); !ok {
				out = append(out, fmt.Sprintf("tool %s: its verify names %s, which is not a tool here", t.Name, t.Verify.Tool))
			}
		}
		for _, f := range t.Fallback {
			if ft, ok := g.rt.Tool(f.Tool); !ok {
				out = append(out, fmt.Sprintf("tool %s: its fallback names %s, which is not a tool here", t.Name, f.Tool))
			} else if ft.Access != reach.Read {
				out = append(out, fmt.Sprintf("tool %s: its fallback %s is a %s tool; reach calls only reads in a read's place, and skips it", t.Name, f.Tool, ft.Access))
			}
		}
	}
	// The MCP TypeScript SDK, the client of Mastra, Genkit, LangGraph and
	// LlamaIndex, gives up on a request after 60 s on its defaults (and a
	// progress notification does not reset it): a call held as long ends
	// at the client as "Request timed out", without the approval's id or
	// what to do, while the approval waits on.
	if a := g.cfg.Approvals; a != nil && time.Duration(a.Wait) >= clientTimeout {
		out = append(out, fmt.Sprintf("approvals.wait is %v: MCP clients on the TypeScript SDK's defaults (Mastra, Genkit, LangGraph, LlamaIndex) give up on a call after %v, and the model then reads \"Request timed out\" instead of the approval's id and what to do; set wait under %v (the call then answers pending, and is run when called again in its request, or with its idempotency key, once approved: the pending text names the request)", time.Duration(a.Wait), clientTimeout, clientTimeout))
	}
	if mc := g.cfg.Model; mc != nil && mc.BaseURL != "" {
		name := cmp.Or(mc.Name, openai.DefaultModel) // what the proxy asks for when a client names none
		if _, priced := mc.Prices[name]; !priced {
			for _, b := range slices.Sorted(maps.Keys(g.cfg.Budgets)) {
				if g.cfg.Budgets[b].Cost > 0 {
					out = append(out, fmt.Sprintf("budget %s has a cost, and the model %s has no price: the example tools' model calls cost nothing against it, and the model proxy refuses that model for requests with a cost budget (add model.prices.%s)", b, name, name))
				}
			}
		}
	}
	return out
}

// clientTimeout is the MCP TypeScript SDK's default request timeout
// (DEFAULT_REQUEST_TIMEOUT_MSEC), which the agent frameworks built on it keep.
const clientTimeout = 60 * time.Second

// Runtime returns the gateway's runtime.
func (g *Gateway) Runtime() *reach.Runtime { return g.rt }

// Handler returns the HTTP handler: /mcp, /v1/... and /healthz.
func (g *Gateway) Handler() http.Handler { return g.handler }

// MCPServer returns the MCP server, for transports other than HTTP (stdio).
func (g *Gateway) MCPServer() *mcp.Server { return g.front.MCP() }

// config.Config returns the configuration the gateway was built from.
func (g *Gateway) Config() *config.Config { return g.cfg }

// Upstreams returns the names of the connected upstreams and their tool
// counts, sorted by name.
func (g *Gateway) Upstreams() []upstream.Status {
	if g.pool == nil {
		return []upstream.Status{}
	}
	return g.pool.Statuses()
}

// Serve serves the handler on ln until ctx ends, then shuts down
// gracefully: in-flight HTTP requests get up to 5 seconds to finish. Serve
// it once (httpapi.Server: fasthttp reads the requests, net/http serves
// all but the fast tools/call).
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	if err := config.CheckListen(ln.Addr().String(), g.authn != nil); err != nil {
		return err
	}
	srv := g.server
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var lost <-chan struct{} // another process took this instance's name
	if g.cluster != nil {
		lost = g.cluster.Lost()
	}
	var lostErr error
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-lost:
		lostErr = fmt.Errorf("instance %s lost its name on the store to another process of the same name: this one stopped; run one process per name", g.cluster.Instance())
		g.log.Error("shutting down: " + lostErr.Error())
	}
	g.log.Info("shutting down")
	g.draining.Store(true) // /readyz: no more traffic
	if g.approvals != nil {
		g.approvals.Release() // a call held for a decision is answered pending, not cut off
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Streams (SSE GETs) never finish by themselves: end the sessions first.
	g.front.Close()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Past the grace: the handlers still running call no more (a
		// batch's next call, a model turn's tools are refused
		// shutting_down); Close waits for the calls they have in flight.
		g.rt.Drain(sctx) // sctx ended: it waits for nothing here
		g.endBeforeClosing()
		err = srv.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	if lostErr != nil {
		return lostErr
	}
	return err
}

// endBeforeClosing ends the requests the gateway began, once the HTTP
// grace is over and before their connections are closed: a call still
// running is cut (its request ended as the gateway shuts down, so its
// answer says that, and that it may be made again in a moment), and its
// answer reaches its client, the handlers given up to the grace
// (store.KeptGrace) to return and write it. Before, the connections were
// closed first, and the calls were cut after: their clients got no
// answer at all. Close ends them too (a closed gateway's requests, ended
// here, are not ended again) and waits for what is left.
func (g *Gateway) endBeforeClosing() {
	g.owned.EndAll()
	g.waited.Store(true) // the shutdown's bounds stay: one grace for them, here or in Close
	ctx, cancel := context.WithTimeout(context.Background(), store.KeptGrace)
	defer cancel()
	if g.rt.Drain(ctx) == 0 {
		g.server.Shutdown(ctx) // the handlers write the answers of the calls that returned
	}
}

// ServeStdio serves MCP on t (mcp.StdioTransport for stdin and stdout)
// until the client disconnects or ctx ends.
func (g *Gateway) ServeStdio(ctx context.Context, t mcp.Transport) error {
	err := g.front.MCP().Run(ctx, t)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Close disconnects the upstreams and ends the requests the gateway began.
// Closing a closed gateway does nothing.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	// From here on the runtime takes no new call from a client and no new
	// model turn (shutting_down), and the gateway begins no request: a
	// call or a turn that began between the requests' ends below and the
	// drain (a session's next call, which began a new request nothing
	// ended, or a turn whose end was written into the closing store) is
	// refused, nothing run. What is in flight is waited for (drainCalls).
	if g.rt != nil {
		refuse, now := context.WithCancel(context.Background())
		now()
		g.rt.Drain(refuse) // refuses from now; waits for nothing
	}
	if g.front != nil {
		g.front.Close()
	}
	g.owned.EndAll()
	g.cancel()
	if g.agents != nil {
		g.agents.Close()
	}
	g.bg.Wait() // what runs in the background (a re-listing writing pins, say) is over
	g.drainCalls()
	var errs []error
	if err := g.shutdownTracer(); err != nil {
		errs = append(errs, err)
	}
	if err := g.closeStore(); err != nil {
		errs = append(errs, err)
	}
	if g.pool != nil {
		errs = append(errs, g.pool.Close())
	}
	return errors.Join(errs...)
}

// drainCalls refuses new calls and model turns (shutting_down) and waits
// for the calls and turns still in flight, their requests ended and so
// cancelled, to return, for
// up to the grace (store.KeptGrace): the store is closed after them, so a
// call's end, its audit events and its cut-off record are written, not
// refused by a closed store. One whose tool ignores its cancellation past
// that is left as a kill leaves it (its checkpoint executing: the next
// start settles it, and a retry of its key is answered interrupted).
func (g *Gateway) drainCalls() {
	if g.rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.KeptGrace)
	defer cancel()
	if g.waited.Load() {
		cancel() // Serve waited for them its grace already
	}
	if left := g.rt.Drain(ctx); left > 0 {
		g.log.Warn("shutting down: calls or model turns still ran past the grace, deaf to their cancellation; the next start settles them as after a kill (a retry of a call's key is answered interrupted)", "calls_and_turns", left)
	}
}

// Go runs f in a goroutine that Close waits for (f should return soon
// after g.ctx ends). Once Close began it runs nothing and reports false.
func (g *Gateway) Go(f func()) bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.bg.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.bg.Done()
		f()
	}()
	return true
}

// version reports the module version for MCP's serverInfo.
func (g *Gateway) version() string {
	if g.opts.Version != "" {
		return g.opts.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// StoreWhere returns the PostgreSQL store the gateway shares with other
// instances (host:port/db, no credentials), or "" for SQLite in the data
// folder (or none).
func (g *Gateway) StoreWhere() string {
	if pg, ok := g.store.(*postgres.Store); ok {
		return "PostgreSQL at " + pg.Where()
	}
	return ""
}

// Approvals returns the gateway's approval queue.
func (g *Gateway) Approvals() *approval.Queue { return g.approvals }

// Stats returns the per-tool statistics.
func (g *Gateway) Stats() *telemetry.Stats { return g.stats }

// Served returns how many requests the HTTP server's lanes served (see
// httpapi.Server.Served).
func (g *Gateway) Served() (fast, inline, handed int64) { return g.server.Served() }

func (g *Gateway) newServer() *httpapi.Server {
	mo := &modelproxy.Options{Model: g.cfg.Model, Owned: g.owned, Choices: &g.choices,
		Models: g.rt, Delegator: g.rt, Breakers: g.rt, Redactor: g.redactor, Authenticates: g.authn != nil, Logger: g.log}
	if ml := g.cfg.RateLimit.ModelLimits(); ml != nil {
		mo.Limits = ratelimit.New(*ml)
	}
	if m := g.cfg.Model; m != nil && m.SubagentBudget != "" {
		b := g.cfg.Budgets[m.SubagentBudget].Budget // checked to exist
		mo.SubagentBudget = &b
	}
	if g.cluster != nil {
		mo.Ledger = g.cluster // turns, tokens and cost on the ledger the instances share
		mo.Tasks = g.store    // the tasks turns hand, for a sub-agent whose first turn reaches another instance
		mo.Ends = g.cluster   // its sub-request ended wherever it runs, as its manager's conversation goes on
	}
	if g.store != nil {
		mo.Owners = g.store // whose each Responses API answer is, across restarts and instances
	}
	o := &httpapi.Options{
		MCP:     g.front.Handler(),
		Model:   modelproxy.New(mo),
		Runtime: g.rt, Owned: g.owned, Choices: &g.choices, Authn: g.authn, Tools: g, Upstreams: g,
		Stats: g.stats, Metrics: g.metrics, Approvals: g.approvals, Store: g.store, Audit: g.audit,
		Redactor: g.redactor, MaxBody: g.cfg.BodyLimit(), MaxInFlight: g.cfg.InFlightCap(), Logger: g.log, Fast: g.front, NotReady: g.notReady, Dead: g.dead, Shown: g.opts.Shown,
	}
	if g.cluster != nil {
		o.Remote = g.cluster // a cancel of a request another instance runs
	}
	if g.store != nil {
		o.Retention = g.cfg.RetentionPeriod() // a request it removed is answered so
	}
	if g.agents != nil {
		o.A2A, o.Agents = g.agents, g.agents
	}
	return httpapi.NewServer(o, g.ctx)
}

// budgetNamers is the principals each budget lists, each of its tenant, as
// link.Owned compares them.
func budgetNamers(cfg *config.Config) map[string][]link.Owner {
	out := map[string][]link.Owner{}
	for name, ps := range cfg.BudgetPrincipals() {
		for _, p := range ps {
			out[name] = append(out[name], link.Owner(p))
		}
	}
	return out
}
