// Package gateway is reach's server: an MCP server (Streamable HTTP and
// stdio) and an HTTP API in front of the runtime, whose tools come from
// upstream MCP servers and built-in examples.
//
//	cfg, _ := gateway.LoadConfig("reach.yaml")
//	g, err := gateway.New(ctx, cfg, nil) // connects upstreams, registers their tools
//	if err != nil { ... }
//	defer g.Close()
//	ln, _ := net.Listen("tcp", "127.0.0.1:7400")
//	g.Serve(ctx, ln) // /mcp, /v1/..., /healthz until ctx ends
//
// # Requests
//
// Every tool call belongs to a reach request (budgets, cancel, the call
// graph). A client names one with the envelope's request_id, the
// "reach/request" _meta key or "baggage: reach.request=<id>"; otherwise each
// MCP session is one request until it has been idle for Config.IdleGap, and
// each unnamed API envelope begins a new one. Requests the gateway begins
// end after the idle gap.
//
// # Linking calls to frames
//
// A call made by a tool's implementation in another process nests under the
// frame whose id it carries, found with [reach.Request.Frame] and entered
// with [reach.WithParent]: the Reach-Parent header or "reach/parent" _meta
// key (16 hex digits), or the parent span id of a W3C traceparent. Any frame
// of a kept request can be a parent: a running tool call, a model turn. Calls
// to upstream tools carry both, so an upstream that calls back through reach
// is linked without configuration. A tool call that a model chose through
// the model proxy (POST /v1/chat/completions) nests under that model turn
// when it is sent with the same id (call_id, or "reach/call_id" _meta); an
// upstream's sampling request during a tool call is a model frame under the
// call, answered by the client that made it (see sampling.go).
//
// # Operators and permissions
//
// The handler also serves the web UI (/ui/), Prometheus metrics (/metrics),
// the approvals API (/v1/approvals) and the visible tools (/v1/tools); OTLP
// traces go to telemetry.otlp_endpoint. With auth configured every path
// but /healthz needs an API key or a JWT, Cedar policies decide calls and
// listings, and upstream tool definitions are pinned (see access.go,
// pinning.go and docs/PERMISSIONS.md).
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
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/a2a"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Gateway beyond its Config. A nil *Options means all
// defaults.
type Options struct {
	// Logger; if nil, logs are discarded.
	Logger *slog.Logger
	// Model answers the model calls of built-in tools; if nil, the Config's
	// model, or a scripted stand-in when it has none.
	Model Model
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
}

// Gateway serves a runtime's tools over MCP and HTTP. Make one with New;
// its methods are safe for concurrent use.
type Gateway struct {
	cfg     *Config
	opts    Options
	rt      *reach.Runtime
	log     *slog.Logger
	model   Model
	reqs    *requests
	server  *mcp.Server
	handler http.Handler

	ctx    context.Context // the gateway's lifetime
	cancel context.CancelFunc
	ready  chan struct{} // closed when New has built everything

	chosen    chosenCalls         // tool_call ids the model proxy saw -> their model frame
	proxyHTTP *http.Client        // the model proxy's client
	authn     *auth.Authenticator // non-nil when clients must authenticate
	policy    *policy.Engine      // nil: decisions by access level
	heldTools sync.Map            // tool name -> struct{}: a changed upstream definition waiting for approval
	pins      *pin.Store          // nil without upstreams
	stats     *telemetry.Stats
	metrics   *telemetry.Metrics
	tracer    *telemetry.Tracer // nil without telemetry.otlp_endpoint
	approvals *approval.Queue
	redactor  *redact.Redactor
	store     *store.SQLite      // nil without a data folder
	idem      *store.Idempotency // the runtime's idempotency records; nil without a data folder
	audit     *audit.Log         // nil without a data folder
	auditV    auditView          // the audit log's reader (its st nil without a data folder)
	// subMu guards every upstream's subs (the clients subscribed to its
	// resources), subWatched (the clients whose leaving is watched) and
	// uriLocks (a resource's subscription changes, one at a time: lockURI).
	subMu      sync.Mutex
	subWatched map[*mcp.ServerSession]bool
	uriLocks   map[string]*uriLock
	// mirrorMu guards every upstream's mirrored: what it put on the
	// server of its resources and prompts.
	mirrorMu sync.Mutex
	// deadBusy holds the dead letters an operator's retry or dismissal is
	// acting on (by the id in its path).
	deadMu   sync.Mutex
	deadBusy map[string]bool
	bg       sync.WaitGroup // background goroutines (see background)
	// noUsageWarned is set once the model proxy has warned of an endpoint
	// that reports no usage.
	noUsageWarned atomic.Bool
	ui            http.Handler
	agents        *a2a.Gateway // nil without agents

	sessions   sync.Map            // *mcp.ServerSession or client key -> *session
	byID       sync.Map            // Mcp-Session-Id -> *mcp.ServerSession, for the lean tools/call path
	levels     sync.Map            // *mcp.ServerSession -> mcp.LoggingLevel its client asked for
	serverInfo *mcp.Implementation // as the MCP server introduces itself
	leanHits   atomic.Int64        // calls answered by the lean path
	inflight   sync.Map            // session id + "\x00" + JSON-RPC id -> context.CancelCauseFunc, lean calls
	sdkCalls   sync.Map            // session id + "\x00" + JSON-RPC id -> the client's cancel reason ("" until it cancels), calls through the SDK

	mu        sync.Mutex
	upstreams []*upstream
	listed    map[string]bool // tool names listed over MCP
	closed    bool
	draining  atomic.Bool // Serve is shutting down: /readyz answers 503
}

// New builds a gateway from cfg: the runtime, the built-in tools, the
// upstreams (connected and listed, unless Options.Offline), the tool
// overrides, the MCP server and the HTTP handler. It fails, with the line
// of the configuration at fault where there is one, on anything that would
// not work; Close it when done.
func New(ctx context.Context, cfg *Config, opts *Options) (*Gateway, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	g := &Gateway{cfg: cfg, listed: map[string]bool{}, ready: make(chan struct{})}
	if opts != nil {
		g.opts = *opts
	}
	red, err := newRedactor(cfg)
	if err != nil {
		return nil, err
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.redactor = red
	g.log = slog.New(redactHandler{g.log.Handler(), red})
	g.model = g.opts.Model
	if g.model == nil {
		if cfg.Model != nil {
			g.model = newOpenAIModel(cfg.Model)
		} else {
			g.model = ScriptedModel{}
		}
	}
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.proxyHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	if g.authn, err = g.authenticator(); err != nil {
		g.cancel()
		return nil, err
	}
	ro := &reach.Options{DefaultBudget: cfg.defaultBudget(), Logger: g.log, Redactor: g.redactor}
	ro.Missing = g.missingTool // a held tool is refused as held (pinning.go)
	if err := g.authorizer(ro); err != nil {
		g.cancel()
		return nil, err
	}
	if cfg.Model != nil {
		ro.Prices = cfg.Model.Prices
	}
	if err := g.operators(ctx, ro); err != nil {
		g.cancel()
		return nil, err
	}
	g.rt = reach.New(ro)
	g.reqs = newRequests(g.ctx, g.rt, cfg)

	var tools []reach.Tool
	if cfg.Examples || len(cfg.Upstreams) == 0 {
		tools = append(tools, exampleTools(g)...)
	}
	if !g.opts.Offline {
		ups, err := g.connectUpstreams(ctx)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.upstreams = ups
		if err := g.openPins(); err != nil {
			g.Close()
			return nil, err
		}
		var upTools []reach.Tool
		for _, u := range ups {
			upTools = append(upTools, u.tools()...)
		}
		tools = append(tools, g.pinned(upTools)...)
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
	g.server = g.newMCPServer()
	if !g.opts.Offline {
		g.mirror(ctx)
	}
	g.syncMCPTools()
	g.handler = g.newHandler()
	go g.reqs.janitor(g.sweepClients)
	close(g.ready)
	return g, nil
}

// register applies the overrides to tools, wraps their Funcs and registers
// them; an override naming no tool is an error (unless offline).
func (g *Gateway) register(tools []reach.Tool) error {
	byName := map[string]int{}
	for i, t := range tools {
		if j, dup := byName[t.Name]; dup {
			return fmt.Errorf("two tools are exposed as %s (%s); give one upstream a prefix", t.Name, describeOrigin(tools[j], t))
		}
		byName[t.Name] = i
	}
	for _, name := range g.cfg.sortedToolNames() {
		if _, ok := byName[name]; !ok && !g.opts.Offline && !g.held(name) {
			return g.cfg.errorf(g.cfg.toolLine(name), "tools: no tool is exposed as %s%s", name, suggestTool(name, tools))
		}
	}
	for _, t := range tools {
		if err := g.rt.Register(g.prepare(t)); err != nil {
			if _, ok := g.cfg.Tools[t.Name]; ok {
				return g.cfg.errorf(g.cfg.toolLine(t.Name), "%v", err)
			}
			return err
		}
	}
	return nil
}

// prepare applies the configured override to t.
func (g *Gateway) prepare(t reach.Tool) reach.Tool {
	if o, ok := g.cfg.Tools[t.Name]; ok {
		applyOverride(&t, o)
	}
	return t
}

func describeOrigin(a, b reach.Tool) string {
	return origin(a) + " and " + origin(b)
}

func origin(t reach.Tool) string {
	for _, tag := range t.Tags {
		if name, ok := strings.CutPrefix(tag, "upstream:"); ok {
			return "upstream " + name
		}
	}
	return "the built-in examples"
}

func suggestTool(name string, tools []reach.Tool) string {
	var best string
	bestD := 1 << 30
	for _, t := range tools {
		if d := names.Distance(name, t.Name); d < bestD {
			best, bestD = t.Name, d
		}
	}
	if best != "" && bestD <= max(3, len(name)/3) {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(tools) == 0 {
		return " (no tools were found)"
	}
	return "; exposed names are <upstream>__<tool> unless the upstream sets prefix"
}

// applyOverride changes t's contract as o says.
func applyOverride(t *reach.Tool, o ToolOverride) {
	if o.Access != "" {
		t.Access = o.Access
	}
	if o.Reentrancy != "" {
		t.Reentrancy = o.Reentrancy
	}
	if len(o.Key) > 0 {
		t.Key = o.Key
	}
	if o.OnViolation != "" {
		t.OnViolation = o.OnViolation
	}
	if o.Timeout > 0 {
		t.Timeout = time.Duration(o.Timeout)
	}
	if o.Retry != nil {
		t.Retry = &reach.RetryPolicy{Attempts: o.Retry.Attempts, Base: time.Duration(o.Retry.Base), Max: time.Duration(o.Retry.Max)}
	}
	if o.Idempotent != nil {
		t.Idempotent = *o.Idempotent
	}
	if o.Retryable != nil {
		t.Retryable = *o.Retryable
	}
	if len(o.Tags) > 0 {
		// The upstream's own tag stays: it is how the gateway knows which
		// upstream serves the tool (its refresh and pinning look for it).
		own := slices.DeleteFunc(slices.Clone(t.Tags), func(tag string) bool { return !strings.HasPrefix(tag, "upstream:") })
		t.Tags = append(own, o.Tags...)
	}
	if o.Description != nil {
		t.Description = *o.Description
	}
	if o.Shape != nil {
		t.Shape = &reach.Shape{Fields: o.Shape.Fields, Flatten: o.Shape.Flatten, MaxBytes: o.Shape.MaxBytes}
	}
	if len(o.Reads) > 0 {
		t.Reads = o.Reads
	}
	if len(o.Writes) > 0 {
		t.Writes = o.Writes
	}
	if o.Undo != nil {
		t.Undo = &reach.Followup{Tool: o.Undo.Tool, Args: o.Undo.Args}
	}
	if o.Refresh != nil {
		t.Refresh = &reach.Followup{Tool: o.Refresh.Tool, Args: o.Refresh.Args}
	}
	if o.Verify != nil {
		t.Verify = &reach.Verify{Followup: reach.Followup{Tool: o.Verify.Tool, Args: o.Verify.Args}, Condition: o.Verify.Condition}
	}
}

// Warnings are what `reach validate` reports without failing: every write
// or high-risk tool that declares neither an undo nor an idempotent
// upstream ("every new write tool gets its undo first"), and follow-ups
// naming tools that do not exist.
func (g *Gateway) Warnings() []string {
	var out []string
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
	}
	if mc := g.cfg.Model; mc != nil && mc.BaseURL != "" {
		name := cmp.Or(mc.Name, defaultModel) // what the proxy asks for when a client names none
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

// Runtime returns the gateway's runtime.
func (g *Gateway) Runtime() *reach.Runtime { return g.rt }

// Handler returns the HTTP handler: /mcp, /v1/... and /healthz.
func (g *Gateway) Handler() http.Handler { return g.handler }

// MCPServer returns the MCP server, for transports other than HTTP (stdio).
func (g *Gateway) MCPServer() *mcp.Server { return g.server }

// Config returns the configuration the gateway was built from.
func (g *Gateway) Config() *Config { return g.cfg }

// Upstreams returns the names of the connected upstreams and their tool
// counts, sorted by name.
func (g *Gateway) Upstreams() []UpstreamStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]UpstreamStatus, 0, len(g.upstreams))
	for _, u := range g.upstreams {
		out = append(out, u.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Serve serves the handler on ln until ctx ends, then shuts down
// gracefully: in-flight HTTP requests get up to 5 seconds to finish.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckListen(ln.Addr().String(), g.authn != nil); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           g.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return g.ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	g.log.Info("shutting down")
	g.draining.Store(true) // /readyz: no more traffic
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Streams (SSE GETs) never finish by themselves: end the sessions first.
	g.closeSessions()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// ServeStdio serves MCP on t (mcp.StdioTransport for stdin and stdout)
// until the client disconnects or ctx ends.
func (g *Gateway) ServeStdio(ctx context.Context, t mcp.Transport) error {
	err := g.server.Run(ctx, t)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (g *Gateway) closeSessions() {
	for ss := range g.server.Sessions() {
		ss.Close()
	}
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
	ups := g.upstreams
	g.mu.Unlock()
	if g.server != nil {
		g.closeSessions()
	}
	g.reqs.endAll()
	g.cancel()
	if g.agents != nil {
		g.agents.Close()
	}
	g.bg.Wait() // what runs in the background (a re-listing writing pins, say) is over
	var errs []error
	if err := g.shutdownTracer(); err != nil {
		errs = append(errs, err)
	}
	if err := g.closeStore(); err != nil {
		errs = append(errs, err)
	}
	for _, u := range ups {
		if err := u.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing upstream %s: %w", u.cfg.Name, err))
		}
	}
	return errors.Join(errs...)
}

// background runs f in a goroutine that Close waits for (f should return
// soon after g.ctx ends). Once Close began it runs nothing and reports
// false.
func (g *Gateway) background(f func()) bool {
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

// EnsureDataDir creates the data folder (mode 0700) and returns its path.
func (c *Config) EnsureDataDir() (string, error) {
	d := c.DataDir()
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("creating the data folder: %w", err)
	}
	return d, nil
}
