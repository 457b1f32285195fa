// Package upstream is the gateway's MCP client pool: one client per
// configured upstream server (Streamable HTTP or stdio), connected and
// listed at start, reconnected when its session ends, its tools forwarded
// as reach tools (through the wire client, internal/mcpwire, on HTTP), its
// resources, prompts and completions passed through to the gateway's MCP
// server, and its progress, log messages, sampling and elicitation
// requests relayed to the downstream client of the call they belong to.
//
//	p, err := upstream.Connect(ctx, &upstream.Options{Config: cfg, Host: h, Models: rt})
//	rt.Register(p.Tools()...)
//	p.Serve(ctx, server) // mirror resources and prompts, follow list changes
//	defer p.Close()
//
// The pool needs three things of its host, each a small interface: a
// goroutine group that Close waits for (Runner), a catalog that takes
// re-listed tools in (Catalog), and the logging levels the downstream
// clients asked for (Levels); and to begin the model frames of sampling
// requests, the runtime (Models).
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Runner runs background work the pool's owner waits for when it closes.
type Runner interface {
	// Go runs f in a goroutine, or reports false, running nothing, once
	// the owner is closing. f must return soon after the pool's lifetime
	// context ends.
	Go(f func()) bool
}

// Catalog takes in the tools an upstream lists again after it said its
// list changed (or reconnected).
type Catalog interface {
	// Relisted gets the upstream's current tools (as Pool.Tools makes them)
	// and the exposed names it no longer lists.
	Relisted(upstream string, tools []reach.Tool, gone []string)
}

// Levels are the logging levels the downstream clients asked for
// (logging/setLevel), which the pool passes on to the upstream sessions
// their calls use.
type Levels interface {
	// Level is the level the client of ss asked for, if it did.
	Level(ss *mcp.ServerSession) (mcp.LoggingLevel, bool)
	// SharedLevel is the most verbose level any client asked for, "" if
	// none did: what shared upstream sessions are set to.
	SharedLevel() mcp.LoggingLevel
}

// Models begins the model frame of a sampling request under the tool call
// of ctx: a *reach.Runtime.
type Models interface {
	BeginModel(ctx context.Context, model string) (context.Context, *reach.Frame, error)
}

// Options configure a Pool. Config, Runner, Catalog, Levels and Models are
// required.
type Options struct {
	Config  *config.Config // its upstreams, its folder (stdio upstreams run there) and line numbers
	Runner  Runner
	Catalog Catalog
	Levels  Levels
	Models  Models
	// Redactor masks what an upstream sends on: results, and the texts of
	// sampling requests, elicitations, logs and progress (P6). If nil,
	// the one redactor's rules alone.
	Redactor *redact.Redactor
	Version  string       // reported to upstreams as the client's version
	Logger   *slog.Logger // if nil, logs are discarded
	// RequireAll treats every upstream as required: one that cannot be
	// reached fails Connect (reach validate).
	RequireAll bool
}

// Pool is the clients of the configured upstreams. Make one with Connect;
// its methods are safe for concurrent use.
type Pool struct {
	life     context.Context    // the pool's lifetime: sessions and background work end with it
	stop     context.CancelFunc // ends life: Close
	opens    sessions           // the sessions opened and not ended, and the handshakes under way
	cfg      *config.Config
	run      Runner
	catalog  Catalog
	levels   Levels
	models   Models
	redactor *redact.Redactor
	version  string
	log      *slog.Logger
	ups      []*upstream // as configured; fixed once connected

	ready  chan struct{} // closed by Serve: server is set
	server *mcp.Server

	// subMu guards every upstream's subs (the clients subscribed to its
	// resources), subWatched (the clients whose leaving is watched) and
	// uriLocks (a resource's subscription changes, one at a time: lockURI).
	subMu      sync.Mutex
	subWatched map[*mcp.ServerSession]bool
	uriLocks   map[string]*uriLock
	// subAsked is who asked for each subscription (subscribeKey): the
	// Guard is asked again, as that client, before an update of the
	// resource is passed on to it (forbiddenSubs).
	subAsked map[subscribeKey]asker
	// mirrorMu guards every upstream's mirrored: what it put on the
	// server of its resources and prompts.
	mirrorMu sync.Mutex
	guard    Guard  // set before Serve; nil: nothing is asked
	pinner   Pinner // set before Serve; nil: nothing is pinned
}

// Connect connects every configured upstream concurrently and lists its
// tools; life bounds the sessions (ctx only the connecting). A required
// upstream (or, with Options.RequireAll, any) that fails fails all, naming
// the upstream and its line; another is kept disconnected and dialled again
// in the background until it answers (the gateway starts degraded, and its
// tools come when it does: Catalog.Relisted).
func Connect(ctx, life context.Context, opts *Options) (*Pool, error) {
	life, stop := context.WithCancel(life)
	p := &Pool{life: life, stop: stop, cfg: opts.Config, run: opts.Runner, catalog: opts.Catalog, levels: opts.Levels, models: opts.Models,
		redactor: opts.Redactor, version: opts.Version, log: opts.Logger, ready: make(chan struct{})}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.redactor == nil {
		var err error
		if p.redactor, err = redact.New(nil); err != nil {
			stop()
			return nil, err
		}
	}
	p.ups = make([]*upstream, len(p.cfg.Upstreams))
	errs := make([]error, len(p.ups))
	var wg sync.WaitGroup
	for i, c := range p.cfg.Upstreams {
		u := p.newUpstream(i, c)
		p.ups[i] = u
		wg.Go(func() {
			err := u.start(ctx)
			switch {
			case err == nil:
			case c.Required || opts.RequireAll || ctx.Err() != nil:
				// Say what to do: start it, or go on without it.
				what, hint := "url", ""
				if len(c.Command) > 0 {
					what = "command"
				}
				switch {
				case ctx.Err() != nil:
				case opts.RequireAll:
					hint = "; start it or check its " + what + ", or check the rest without contacting upstreams: reach validate --offline"
				default:
					hint = "; start it or check its " + what + ", or drop required: true to serve without it (its tools refused until it answers)"
				}
				errs[i] = p.cfg.Errorf([]any{"upstreams", i}, "upstream %s: %v%s", c.Name, err, hint)
			default:
				u.mu.Lock()
				u.lastErr = err
				u.mu.Unlock()
				u.log.Warn("upstream not reachable at start; the gateway starts without its tools and dials it again in the background (required: true refuses to start instead)", "err", err)
				u.dialInBackground()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Len returns the number of upstreams.
func (p *Pool) Len() int { return len(p.ups) }

// Listed returns the names of the upstreams whose tools have been listed
// (Tools holds each one's whole listing), not those never reached.
func (p *Pool) Listed() []string {
	var out []string
	for _, u := range p.ups {
		if never, _ := u.neverListed(); !never {
			out = append(out, u.cfg.Name)
		}
	}
	return out
}

// Tools returns the runtime tools of every upstream's current list.
func (p *Pool) Tools() []reach.Tool {
	var out []reach.Tool
	for _, u := range p.ups {
		out = append(out, u.tools()...)
	}
	return out
}

// Original returns the upstream's own definition of an exposed tool (found
// by its upstream tag), nil for a tool that is no upstream's or that its
// upstream no longer lists.
func (p *Pool) Original(t reach.Tool) *mcp.Tool {
	if u := p.of(t); u != nil {
		return u.original(t.Name)
	}
	return nil
}

// of returns the upstream serving an exposed tool, by its tag.
func (p *Pool) of(t reach.Tool) *upstream {
	for _, tag := range t.Tags {
		if name, ok := strings.CutPrefix(tag, Tag); ok {
			for _, u := range p.ups {
				if u.cfg.Name == name {
					return u
				}
			}
		}
	}
	return nil
}

// Tag prefixes the tag that names the upstream of a tool ("upstream:" and
// its name): how the gateway knows which upstream serves a tool.
const Tag = "upstream:"

// ListedElsewhere reports whether an upstream other than the one named
// lists the exposed tool name.
func (p *Pool) ListedElsewhere(name, upstream string) bool {
	for _, o := range p.ups {
		if o.cfg.Name != upstream && o.original(name) != nil {
			return true
		}
	}
	return false
}

// Status describes an upstream for /healthz and the banner.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // "http" or "stdio"
	Connected bool   `json:"connected"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
}

// Statuses describes every upstream, sorted by name.
func (p *Pool) Statuses() []Status {
	out := make([]Status, 0, len(p.ups))
	for _, u := range p.ups {
		out = append(out, u.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Serve puts the upstreams' resources, resource templates and prompts on
// the gateway's MCP server, and from now on passes their list changes and
// resource updates on to it.
func (p *Pool) Serve(ctx context.Context, server *mcp.Server) {
	p.server = server
	server.AddSendingMiddleware(p.updatesOfSubscribed)
	server.AddReceivingMiddleware(p.readOwn)
	server.AddSendingMiddleware(keptAnswer)
	if p.pinner != nil {
		server.AddReceivingMiddleware(p.listedUnheld)
	}
	for _, u := range p.ups {
		u.mirror(ctx)
	}
	close(p.ready)
}

// SetLevel passes a client's logging/setLevel on to the upstream sessions
// its calls use, so that upstreams send their log messages: the client's
// own sessions get its level (a session made later gets it when it is
// made), shared sessions the most verbose level any client asked for
// (shared). Each client then gets the messages its level lets through.
func (p *Pool) SetLevel(ctx context.Context, down *mcp.ServerSession, level, shared mcp.LoggingLevel) {
	for _, u := range p.ups {
		if v, ok := u.own.Load(down); ok {
			u.passLevel(ctx, v.(*mcp.ClientSession), level)
		}
		if u.cfg.URL != "" && CanSample(down) {
			continue // its calls use a session of their own
		}
		// Only a session that exists: making one here would race the
		// client's next call, which makes it with the level.
		u.mu.Lock()
		cs := u.cs
		u.mu.Unlock()
		if cs != nil {
			u.passLevel(ctx, cs, shared)
		}
	}
}

// Close disconnects the upstreams. It returns once every session it
// opened has ended, a stdio upstream's process exited (told to by its
// stdin closing, then SIGTERM, then SIGKILL, stdinCloser): those of a
// handshake under way as it closes, and of sessions let go and being
// closed in the background, too. Before, those were closed by goroutines
// nothing waited for, and a process that was starting, or that does not
// end at the end of its stdin, outlived the gateway.
func (p *Pool) Close() error {
	p.stop() // the handshakes under way end (the SDK closes their sessions)
	defer p.opens.closeAll()
	var errs []error
	for _, u := range p.ups {
		if u == nil {
			continue
		}
		if err := u.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing upstream %s: %w", u.cfg.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Completes reports whether some upstream answers completions.
func (p *Pool) Completes() bool {
	return slices.ContainsFunc(p.ups, func(u *upstream) bool {
		c := u.capabilities()
		return c != nil && c.Completions != nil
	})
}

// Subscribes reports whether some upstream takes resource subscriptions.
func (p *Pool) Subscribes() bool {
	return slices.ContainsFunc(p.ups, func(u *upstream) bool {
		c := u.capabilities()
		return c != nil && c.Resources != nil && c.Resources.Subscribe
	})
}

// Unreached explains a tool name with the prefix of an upstream that has
// not been reached since the pool connected (its tools are not known yet),
// or returns nil.
func (p *Pool) Unreached(name string) *reach.Error {
	for _, u := range p.ups {
		pre := u.prefix()
		if pre == "" || !strings.HasPrefix(name, pre) {
			continue
		}
		never, err := u.neverListed()
		if !never {
			continue
		}
		why := ""
		if err != nil {
			why = " (" + p.redactor.RedactString(err.Error()) + ")"
		}
		return &reach.Error{Type: reach.TypeTransient, Code: "upstream_unavailable",
			Message: fmt.Sprintf("Tool %s would come from upstream %s, which has not been reachable since the gateway started%s; "+
				"the gateway dials it again in the background.", name, u.cfg.Name, why),
			Suggestion: "Try again in a minute, or do without this tool."}
	}
	return nil
}

// Serving returns the name of the upstream that serves the tool t and its
// URL ("" for a stdio one), or ok false for a tool of no upstream.
func (p *Pool) Serving(t reach.Tool) (name, url string, ok bool) {
	u := p.of(t)
	if u == nil {
		return "", "", false
	}
	return u.cfg.Name, u.cfg.URL, true
}

// sessions are the upstream sessions a pool opened and that have not
// ended (a stdio one's process not yet waited for), and the handshakes
// under way, for Close to end: a session let go (a lost one, one opened
// for a call that gave up, one opened as the gateway closed) is closed by
// a goroutine of its own, which nothing else waits for.
type sessions struct {
	mu      sync.Mutex
	closed  bool
	dialing int                             // handshakes under way (begin, end)
	idle    chan struct{}                   // closed when dialing falls to 0 while closeAll waits
	open    map[*mcp.ClientSession]struct{} // opened and not ended
}

// begin counts a handshake about to start, or reports false once the
// pool closes: none starts then.
func (s *sessions) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.dialing++
	return true
}

// end is a handshake's end (its session, if it opened one, told to
// opened first).
func (s *sessions) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialing--
	if s.dialing == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// opened keeps cs until it ends (its connection closed, a stdio
// upstream's process waited for).
func (s *sessions) opened(cs *mcp.ClientSession) {
	s.mu.Lock()
	if s.open == nil {
		s.open = map[*mcp.ClientSession]struct{}{}
	}
	s.open[cs] = struct{}{}
	s.mu.Unlock()
	go func() {
		cs.Wait()
		s.mu.Lock()
		delete(s.open, cs)
		s.mu.Unlock()
	}()
}

// closeAll refuses new handshakes, waits for those under way (the pool's
// life ended, they end), then closes every session not ended and waits
// for each: a session being closed elsewhere is waited for too (the SDK's
// Close returns once its connection is closed).
func (s *sessions) closeAll() {
	s.mu.Lock()
	s.closed = true
	for s.dialing > 0 {
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle := s.idle
		s.mu.Unlock()
		<-idle
		s.mu.Lock()
	}
	open := make([]*mcp.ClientSession, 0, len(s.open))
	for cs := range s.open {
		open = append(open, cs)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, cs := range open {
		wg.Go(func() { cs.Close() })
	}
	wg.Wait()
}
