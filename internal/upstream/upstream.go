package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/origin"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/toolspec"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// upstream is a client of one upstream MCP server. Its tools are registered
// in the runtime as <prefix><tool> with a Func that forwards the call.
type upstream struct {
	p      *Pool
	cfg    config.Upstream
	index  int // in config.Config.Upstreams, for line numbers
	log    *slog.Logger
	client *mcp.Client
	http   *http.Client   // nil for stdio
	wire   *mcpwire.Conns // nil but for a plain-HTTP upstream the wire client can reach

	mu      sync.Mutex
	cs      *mcp.ClientSession // nil when disconnected
	lastErr error
	// listErr says why the last listing of the tools on an open session
	// failed, nil once one went through; listWait is how long until the
	// listing is tried again after the next failure (1 s, doubling to 30 s).
	listErr  error
	listWait time.Duration

	// listRetry is the one pending retry of a failed listing, nil when
	// none is: a failure while one is pending schedules no other.
	listRetry *time.Timer

	orig     map[string]*mcp.Tool // exposed name -> the upstream's definition
	gone     map[string]bool      // exposed names the upstream no longer lists
	oversize map[string]bool      // exposed names whose definition was cut (see MaxToolDescription), warned once
	closed   bool
	dialing  *dial     // the reconnection under way, if any
	lastDial time.Time // when the last reconnection began
	// redialing: a background loop dials the upstream (dialInBackground).
	redialing bool
	subs      map[string]map[*mcp.ServerSession]bool // resource URI -> the clients subscribed to it through this upstream; guarded by p.subMu
	// updating holds the URIs whose update is being passed on: a newer
	// update of one to pass on after it, or nil; guarded by p.subMu.
	updating map[string]*mcp.ResourceUpdatedNotificationParams

	// unreachable says why the last call could not reach the upstream
	// (its connection failed), nil once a call did: a session can look
	// open while the upstream is down.
	unreachable atomic.Pointer[string]

	progress  sync.Map  // upstream progress token -> *progressRoute
	open      openCalls // calls in flight, for the sampling, elicitation and log messages that belong to them
	mirrored  mirrored  // what mirror put on the gateway's server; guarded by p.mirrorMu
	mirroring coalesced // remirror's mirror; guarded by mu
	listing   coalesced // toolsChanged's refresh; guarded by mu
	own       sync.Map  // *mcp.ServerSession -> *mcp.ClientSession: sessions of downstream clients that sample
	owner     sync.Map  // *mcp.ClientSession -> *owner: own's the other way, for what comes on an own session outside any call
	tokens    atomic.Uint64
	wired     atomic.Pointer[wireSession] // the wire client's view of the session last called (wireOf)
}

func (u *upstream) status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := Status{Name: u.cfg.Name, Transport: "stdio", Connected: u.cs != nil, Tools: len(u.orig) - len(u.gone)}
	if u.cfg.URL != "" {
		s.Transport = "http"
	}
	if u.lastErr != nil && u.cs == nil {
		s.Error = u.lastErr.Error()
	}
	if u.listErr != nil && u.cs != nil {
		// Connected, but its tools are not served: a client would see none
		// of them, and the model an unknown tool, with nothing said why.
		s.Error = "connected, but listing its tools failed (tried again in the background): " + u.listErr.Error()
	}
	if why := u.unreachable.Load(); why != nil {
		s.Connected, s.Error = false, *why
	}
	// /healthz (which asks no credentials) and the banner show it: a dial's
	// error quotes the URL, with whatever credential it carries. And it may
	// quote the upstream (its error answering initialize or tools/list), as
	// long as it likes: it is cut, after its secrets are masked (a secret
	// cut in two would not be), from a head long past the cut.
	if len(s.Error) > statusErrorHead {
		s.Error = s.Error[:statusErrorHead]
	}
	s.Error = ClipText(u.p.redactor.RedactString(s.Error), maxStatusError, "")
	return s
}

// maxStatusError bounds an upstream's status's error, in bytes; of a
// longer one, the first statusErrorHead bytes are masked before the cut.
const (
	maxStatusError  = 1024
	statusErrorHead = 64 << 10
)

// reached records whether a call reached the upstream: err is the
// transport failure of one that did not, nil for one that did.
func (u *upstream) reached(err error) {
	if err == nil {
		if u.unreachable.Load() != nil {
			u.unreachable.Store(nil)
		}
		return
	}
	msg := err.Error()
	if u.unreachable.Swap(&msg) == nil {
		u.dialInBackground() // until it answers again, with or without calls
	}
}

func (u *upstream) prefix() string {
	if u.cfg.Prefix != nil {
		return *u.cfg.Prefix
	}
	return u.cfg.Name + "__"
}

func (p *Pool) newUpstream(i int, c config.Upstream) *upstream {
	u := &upstream{p: p, cfg: c, index: i, log: p.log.With("upstream", c.Name),
		orig: map[string]*mcp.Tool{}, gone: map[string]bool{}, oversize: map[string]bool{}}
	u.client = mcp.NewClient(&mcp.Implementation{Name: "reach", Version: p.version}, &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{},
		ProgressNotificationHandler: u.onProgress,
		CreateMessageHandler:        u.onCreateMessage,
		ElicitationHandler:          u.onElicit,
		LoggingMessageHandler:       u.onLog,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.toolsChanged()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			u.resourceChanged(req.Params)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			u.remirror()
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			u.remirror()
		},
	})
	u.client.AddReceivingMiddleware(answerAsGiven)
	if c.URL != "" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 256
		tr.MaxIdleConnsPerHost = 128
		var rt http.RoundTripper = tr
		if len(c.Headers) > 0 {
			ht := &headerTransport{base: tr, headers: c.Headers}
			if o, err := url.Parse(c.URL); err == nil {
				ht.scheme, ht.host = o.Scheme, o.Host
			}
			rt = ht
		}
		u.http = &http.Client{Transport: cappedTransport{rt}}
		headers := make(map[string]string, len(c.Headers))
		for k, v := range c.Headers {
			headers[k] = v.Reveal()
		}
		u.wire = mcpwire.NewConns(c.URL, headers)
	}
	return u
}

// headerTransport adds the configured headers (secrets) to every request
// to the upstream's origin (scheme and host of its URL), and to no other:
// a redirect elsewhere (the endpoint moved, an open redirect, a hostile
// upstream) is followed without them.
type headerTransport struct {
	base         http.RoundTripper
	headers      map[string]config.Secret
	scheme, host string // of the upstream's URL
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.sends(r.URL) {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v.Reveal())
	}
	return t.base.RoundTrip(r)
}

// sends reports whether the configured headers go with a request to u:
// to the upstream's origin (its scheme, host and port, a default port
// written or not), or to its upgrade to https on the same host, which a
// redirect from http asks for: http's port 80 (written or not) to https's
// 443, any other port to itself. Never to another host, or port, and never
// down from https to http.
func (t *headerTransport) sends(u *url.URL) bool {
	return origin.KeyGoesTo(&url.URL{Scheme: t.scheme, Host: t.host}, u)
}

// cappedTransport bounds what the SDK reads of one answer of an upstream
// to mcpwire.MaxAnswer bytes: it reads a JSON answer whole (io.ReadAll), and
// one tools/list answer that never ended held 4.4 GB of reach serve within
// 20 s, every client's tools and calls then lost with the process. An SSE
// answer's events are bounded by the transport's MaxEventSize instead: the
// stream of a session outlives any bound on its total.
type cappedTransport struct{ base http.RoundTripper }

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return resp, nil
	}
	resp.Body = &cappedBody{rc: resp.Body, left: mcpwire.MaxAnswer}
	return resp, nil
}

// cappedBody reads its answer to a bound, and fails past it.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more tells an answer past the bound
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n, b.left = int(b.left), 0
		return n, fmt.Errorf("the upstream's answer is larger than %d bytes", mcpwire.MaxAnswer)
	}
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// safeEnv lists the variables of the gateway's environment that a stdio
// upstream inherits; everything else (API keys above all) stays here.
var safeEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

func (u *upstream) transport() mcp.Transport {
	if u.cfg.URL != "" {
		// MaxEventSize set: the SDK's 0 is no bound at all on the Streamable
		// transport (its doc says DefaultMaxEventSize; only the SSE one does so).
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.http, MaxRetries: 2,
			MaxEventSize: int(mcpwire.MaxAnswer)}
	}
	cmd := exec.Command(u.cfg.Command[0], u.cfg.Command[1:]...)
	cmd.Dir = u.cfg.Dir
	if cmd.Dir == "" {
		cmd.Dir = u.p.cfg.Dir()
	} else if !filepath.IsAbs(cmd.Dir) && u.p.cfg.Dir() != "" {
		cmd.Dir = filepath.Join(u.p.cfg.Dir(), cmd.Dir)
	}
	cmd.Env = []string{} // not nil: a nil Env would pass on the gateway's whole environment
	for _, k := range safeEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for k, v := range u.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v.Reveal())
	}
	cmd.Stderr = newLineLogger(u.log, u.p.redactor)
	return &inOrder{Transport: &commandTransport{cmd: cmd, grace: 2 * time.Second, log: u.log}, u: u}
}

func (u *upstream) timeout() time.Duration {
	if u.cfg.Timeout > 0 {
		return time.Duration(u.cfg.Timeout)
	}
	return 30 * time.Second
}

// start connects and lists the tools.
func (u *upstream) start(ctx context.Context) error {
	cs, err := u.connect(ctx)
	if err != nil {
		return err
	}
	tools, err := u.list(ctx, cs)
	if err != nil {
		cs.Close()
		return fmt.Errorf("listing tools: %w", err)
	}
	u.mu.Lock()
	u.cs = cs
	u.setToolsLocked(tools)
	u.mu.Unlock()
	return nil
}

// connect opens a session. The connection outlives ctx, which bounds the
// handshake only.
func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, error) {
	hctx, cancel := context.WithTimeout(ctx, u.timeout())
	defer cancel()
	type result struct {
		cs  *mcp.ClientSession
		err error
	}
	done := make(chan result, 1)
	// Counted from before its process starts until its session is known
	// to the pool (or closed by the SDK, its handshake failed): the pool's
	// Close ends every one (Pool.Close).
	if !u.p.opens.begin() {
		return nil, errors.New("the gateway is shutting down")
	}
	tr := u.transport()
	// The SDK ties nothing but the handshake to the context it is given;
	// give it the gateway's, and bound the wait with hctx.
	go func() {
		defer u.p.opens.end()
		// The last protocol with sessions: the wire client uses HTTP
		// sessions, and on it logging/setLevel, sampling and elicitation
		// work as the gateway relays them.
		opts := &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol}
		cs, err := u.client.Connect(u.p.life, tr, opts)
		if cs != nil {
			u.p.opens.opened(cs)
			if t, ok := tr.(*inOrder); ok {
				t.cs.Store(cs)
			}
		}
		done <- result{cs, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if why := u.exited(tr); why != "" {
				return nil, fmt.Errorf("connecting: %w; %s", r.err, why)
			}
			if why := u.notMCP(hctx); why != "" {
				return nil, fmt.Errorf("connecting: %w; %s", r.err, why)
			}
			return nil, fmt.Errorf("connecting: %w", r.err)
		}
		u.log.Info("upstream connected", "transport", u.status().Transport)
		go u.watch(r.cs)
		return r.cs, nil
	case <-hctx.Done():
		go func() {
			if r := <-done; r.cs != nil {
				r.cs.Close()
			}
		}()
		return nil, fmt.Errorf("connecting: no answer within %s%s", u.timeout(), u.silent(tr))
	}
}

// silent says, of a command upstream still running that has not answered
// within its timeout, what it may lack: only a few variables of reach's
// environment reach it (safeEnv), so a runner that downloads the server
// first (npx -y, uvx) behind a proxy, or a TLS-inspecting one, retries
// the registry for minutes without a word on stderr, and reach said
// "no answer within 30s" alone. "" for a URL upstream.
func (u *upstream) silent(tr mcp.Transport) string {
	t, ok := tr.(*inOrder)
	if !ok {
		return ""
	}
	ct, ok := t.Transport.(*commandTransport)
	if !ok {
		return ""
	}
	var b strings.Builder
	if tail := u.stderrTail(ct); tail != "" {
		fmt.Fprintf(&b, " (the last lines of its stderr: %s)", tail)
	}
	b.WriteString("; its command gets only PATH, HOME, USER, SHELL, TERM, the locale, TMPDIR and TZ of reach's environment, and its env:, so a runner that downloads the server first (npx, uvx) needs the proxy or CA settings it uses under env: (HTTPS_PROXY: \"${HTTPS_PROXY}\", NODE_EXTRA_CA_CERTS: ...), and its first download may need a longer timeout:")
	return u.p.redactor.RedactString(b.String())
}

// watch forgets the session when it ends, so the next call reconnects.
func (u *upstream) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	u.mu.Lock()
	lost := u.cs == cs && !u.closed
	if u.cs == cs {
		u.cs = nil
		u.lastErr = errors.New("the connection closed")
		if err != nil {
			u.lastErr = fmt.Errorf("the connection closed: %w", err)
		}
		if !u.closed {
			u.log.Warn("upstream disconnected", "err", u.lastErr)
		}
	}
	u.mu.Unlock()
	if lost {
		u.dialInBackground()
	}
}

// dialInBackground dials the upstream until it answers (after 1 s, then
// twice as long each time, at most 30 s apart), unless a loop already does
// or the gateway closes. So an upstream that comes back is connected again
// by itself: /healthz is ok and /readyz 200 again without waiting for a
// call to it, which a load balancer that saw /readyz answer 503 (a
// required upstream down) would never send.
func (u *upstream) dialInBackground() {
	u.mu.Lock()
	if u.closed || u.redialing {
		u.mu.Unlock()
		return
	}
	u.redialing = true
	u.mu.Unlock()
	started := u.p.run.Go(func() {
		for {
			u.keepDialing()
			// A session lost again before the loop ended is dialled again
			// here: its watch found the loop still running.
			u.mu.Lock()
			again := (u.cs == nil || u.unreachable.Load() != nil) && !u.closed && u.p.life.Err() == nil
			u.redialing = again
			u.mu.Unlock()
			if !again {
				return
			}
		}
	})
	if !started { // the gateway closes
		u.mu.Lock()
		u.redialing = false
		u.mu.Unlock()
	}
}

// dial is one reconnection; the calls that find no session wait for the
// same one.
type dial struct {
	done chan struct{} // closed when cs and err are set
	cs   *mcp.ClientSession
	err  error
}

// session returns the open session, reconnecting when there is none. Calls
// that come in while a reconnection is under way wait for it rather than
// start one each (for stdio, a process each); a call that ends meanwhile
// stops waiting, and the reconnection goes on for the others.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, errors.New("the gateway is shutting down")
	}
	if cs := u.cs; cs != nil {
		u.mu.Unlock()
		return cs, nil
	}
	d := u.dialing
	if d == nil {
		d = &dial{done: make(chan struct{})}
		u.dialing = d
		if !u.p.run.Go(func() { u.redial(d) }) {
			u.dialing = nil
			u.mu.Unlock()
			return nil, errors.New("the gateway is shutting down")
		}
	}
	u.mu.Unlock()
	select {
	case <-d.done:
		return d.cs, d.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// keepDialing dials an upstream that could not be reached at start, or
// whose session was lost, until it answers: then redial lists its tools,
// which join the gateway's. The waits grow from 1 s to 30 s.
func (u *upstream) keepDialing() {
	ctx := u.p.life
	select { // the gateway's tools are registered first, its server set
	case <-u.p.ready:
	case <-ctx.Done():
		return
	}
	delay := time.Second
	for tries := 1; ; tries++ {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		if err := u.probe(ctx); err == nil {
			u.log.Info("upstream reached; its tools join the gateway's", "tries", tries)
			return
		} else if tries%10 == 0 {
			u.log.Warn("upstream still not reachable; dialling it again", "tries", tries, "err", err)
		}
		delay = min(delay*2, 30*time.Second)
	}
}

// probe is one try of keepDialing: a session that looks open while calls
// could not reach the upstream is pinged (and, if the ping fails, let go);
// without one, a session is dialled. Either success makes the upstream
// reachable again.
func (u *upstream) probe(ctx context.Context) error {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs != nil && u.unreachable.Load() != nil {
		pctx, cancel := context.WithTimeout(ctx, u.timeout())
		err := cs.Ping(pctx, nil)
		cancel()
		if err == nil {
			u.reached(nil)
			return nil
		}
		u.forget(cs, err) // dialled anew below
	}
	if _, err := u.session(ctx); err != nil {
		return err
	}
	u.reached(nil)
	return nil
}

// neverListed reports whether the upstream has not listed its tools yet
// (not reached since the gateway started), and why not.
func (u *upstream) neverListed() (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.orig) == 0 && u.cs == nil, u.lastErr
}

// redial reconnects for the calls waiting on d, then lists the tools,
// resources and prompts again.
func (u *upstream) redial(d *dial) {
	ctx := u.p.life
	// An upstream that dies as soon as it is up (a stdio server that
	// crashes after its handshake) is dialled at most once a second.
	u.mu.Lock()
	wait := time.Until(u.lastDial.Add(time.Second))
	u.mu.Unlock()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	u.mu.Lock()
	u.lastDial = time.Now()
	u.mu.Unlock()
	cs, err := u.connect(ctx)
	if err == nil {
		if lvl := u.p.levels.SharedLevel(); lvl != "" { // a new session logs nothing until told
			lctx, cancel := context.WithTimeout(ctx, u.timeout()) // an upstream that never answers must not hold every call
			u.passLevel(lctx, cs, lvl)
			cancel()
		}
	}
	u.mu.Lock()
	u.dialing = nil
	switch {
	case err != nil:
		u.lastErr = err
	case u.closed:
		go cs.Close()
		cs, err = nil, errors.New("the gateway is shutting down")
	default:
		u.cs = cs
	}
	d.cs, d.err = cs, err
	u.mu.Unlock()
	close(d.done)
	if err == nil {
		// The upstream may have restarted with other tools, resources or
		// prompts, and a new session owes no list_changed for what an old
		// one listed.
		u.toolsChanged()
		u.remirror()
		u.p.run.Go(func() { u.resubscribe(cs) })
	}
}

func (u *upstream) list(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	lctx, cancel := context.WithTimeout(ctx, u.timeout())
	defer cancel()
	var out []*mcp.Tool
	var size int64
	err := paged(func(cursor string) (int, string, error) {
		res, err := cs.ListTools(lctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return 0, "", err
		}
		for _, t := range res.Tools {
			if t == nil { // a null in the list: no tool (kept, it crashed the gateway)
				continue
			}
			t, n := u.masked(t)
			out = append(out, t)
			if len(out) > maxListed {
				return 0, "", fmt.Errorf("the upstream lists more than %d tools", maxListed)
			}
			// Each tool is kept whole (its pin is of the whole definition), so
			// its pages together are bounded as one answer is: pages of one
			// tool of 32 MiB each, a next cursor on every one, were all kept
			// until the listing's timeout.
			if size += int64(n); size > mcpwire.MaxAnswer {
				return 0, "", fmt.Errorf("the upstream's tool definitions are larger than %d bytes (of JSON) together", mcpwire.MaxAnswer)
			}
		}
		return len(res.Tools), res.NextCursor, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// masked returns t with the registered secrets masked (the redactor's
// values alone: a schema's member named "token" is a schema, not a secret)
// in all of it but its name, and the size of t's JSON (a tool named by one is not offered, see
// setToolsLocked): an upstream that writes one into a tool's
// definition (a connection string in its description, a key as a schema's
// default) would put it before every client's model on every listing. The
// pin is taken of what is shown, as it is of the tool as listed.
func (u *upstream) masked(t *mcp.Tool) (*mcp.Tool, int) {
	b, err := json.Marshal(t)
	if err != nil {
		return t, 0
	}
	m := u.p.redactor.Values(b)
	if len(m) == len(b) && (len(b) == 0 || &m[0] == &b[0]) { // nothing masked: the same bytes
		return t, len(b)
	}
	var out mcp.Tool
	if json.Unmarshal(m, &out) != nil {
		return t, len(b)
	}
	out.Name = t.Name // calls go by it
	return &out, len(b)
}

// setToolsLocked records the upstream's tool list. Called with u.mu held.
func (u *upstream) setToolsLocked(tools []*mcp.Tool) {
	now := map[string]*mcp.Tool{}
	for _, t := range tools {
		name := u.prefix() + t.Name
		if !toolspec.ValidName(name) {
			u.log.Warn("tool skipped: its name is not usable", "tool", t.Name)
			continue
		}
		if u.p.redactor.Spells(name) {
			// A name is shown as it is, to every client's model, and
			// masked it could not be called: a tool whose name spells a
			// secret is not offered. One that only ends in a secret's
			// start is (no text cut mid-secret: Values would mask it).
			u.log.Warn("tool skipped: its name holds a secret", "tool", string(u.p.redactor.Values([]byte(name))))
			continue
		}
		now[name] = t
	}
	for name := range u.orig {
		if _, ok := now[name]; !ok {
			u.gone[name] = true
		}
	}
	for name, t := range now {
		delete(u.gone, name)
		u.orig[name] = t
	}
}

func (u *upstream) isGone(name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gone[name]
}

func (u *upstream) original(name string) *mcp.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone[name] {
		return nil
	}
	return u.orig[name]
}

// tools returns the runtime tools of the upstream's current list.
func (u *upstream) tools() []reach.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]reach.Tool, 0, len(u.orig))
	for name, t := range u.orig {
		if u.gone[name] {
			continue
		}
		out = append(out, u.reachTool(name, t))
	}
	return out
}

// reachTool converts an upstream tool. Its annotations give the access
// level: readOnlyHint is read, an explicit destructiveHint is high_risk,
// anything else (no annotations included) is write.
func (u *upstream) reachTool(name string, t *mcp.Tool) reach.Tool {
	rt := reach.Tool{
		Name:        name,
		Description: ClipText(t.Description, MaxToolDescription, "description"),
		Access:      accessFrom(t.Annotations),
		Tags:        []string{Tag + u.cfg.Name},
		Upstream:    u.cfg.Name, // its calls share the upstream's circuit breaker
		Func:        u.forward(name, t.Name),
	}
	if a := t.Annotations; a != nil && !a.ReadOnlyHint {
		rt.Idempotent = a.IdempotentHint
	}
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			rt.InputSchema = b
		}
	}
	if t.OutputSchema != nil {
		if b, err := json.Marshal(t.OutputSchema); err == nil {
			rt.OutputSchema = b
		}
	}
	if n := len(rt.InputSchema); n > MaxToolSchema {
		rt.InputSchema = nil
		rt.Description += fmt.Sprintf("\n[reach: the input schema (%d bytes) is larger than %d bytes and is not forwarded; the upstream checks the arguments]", n, MaxToolSchema)
	}
	if len(rt.OutputSchema) > MaxToolSchema {
		rt.OutputSchema = nil
	}
	u.warnOversize(name, t)
	if len(rt.InputSchema) > 0 && !schemaCompiles(rt) {
		u.log.Warn("tool's input schema does not compile; its arguments are not validated here", "tool", t.Name)
		rt.InputSchema = nil
	}
	return rt
}

// Bounds on what an upstream's tool definition puts before every client's
// model, on every tools/list and GET /v1/tools: a longer description or
// title is cut, with a note saying so; a larger input or output schema, or
// icons, are not forwarded (the upstream still checks the arguments). The
// pinned definition is the whole one: a change past the cut is held too.
const (
	MaxToolDescription = 8 << 10  // bytes of a description
	MaxToolTitle       = 256      // bytes of a title (the tool's or its annotations')
	MaxToolSchema      = 64 << 10 // bytes of JSON of a schema, and of the icons
)

// ClipText cuts s to max bytes, at a rune boundary, with a note of what
// was cut; with what "" (a title, a name) an ellipsis only.
func ClipText(s string, max int, what string) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	cut := s[:i]
	if what == "" {
		return cut + "…"
	}
	return fmt.Sprintf("%s…\n[reach: this %s was cut from %d to %d bytes]", cut, what, len(s), max)
}

// warnOversize logs, once per tool, that its definition is over the
// bounds above. Called with u.mu held.
func (u *upstream) warnOversize(name string, t *mcp.Tool) {
	var over []any
	size := func(v any) int {
		if v == nil {
			return 0
		}
		b, _ := json.Marshal(v)
		return len(b)
	}
	if n := len(t.Description); n > MaxToolDescription {
		over = append(over, "description_bytes", n)
	}
	if n := len(t.Title); n > MaxToolTitle {
		over = append(over, "title_bytes", n)
	}
	if a := t.Annotations; a != nil && len(a.Title) > MaxToolTitle {
		over = append(over, "annotations_title_bytes", len(a.Title))
	}
	if n := size(t.InputSchema); n > MaxToolSchema {
		over = append(over, "input_schema_bytes", n)
	}
	if n := size(t.OutputSchema); n > MaxToolSchema {
		over = append(over, "output_schema_bytes", n)
	}
	if len(t.Icons) > 0 {
		if n := size(t.Icons); n > MaxToolSchema {
			over = append(over, "icons_bytes", n)
		}
	}
	if len(over) == 0 || u.oversize[name] {
		return
	}
	u.oversize[name] = true
	u.log.Warn(fmt.Sprintf("an upstream tool's definition is larger than reach forwards: descriptions are cut to %d bytes and titles to %d, larger schemas and icons (%d bytes) are left out",
		MaxToolDescription, MaxToolTitle, MaxToolSchema), append([]any{"tool", name}, over...)...)
}

// schemaCompiles reports whether the runtime accepts t's input schema.
func schemaCompiles(t reach.Tool) bool {
	return reach.New(nil).Register(reach.Tool{Name: "probe", InputSchema: t.InputSchema, Func: t.Func}) == nil
}

func accessFrom(a *mcp.ToolAnnotations) reach.Access {
	switch {
	case a == nil:
		return reach.Write
	case a.ReadOnlyHint:
		return reach.Read
	case a.DestructiveHint != nil && *a.DestructiveHint:
		return reach.HighRisk
	}
	return reach.Write
}

// resourceChanged passes an update of a resource on (resourceUpdated),
// when a client subscribed to it through this upstream: one update of a
// resource at a time, the newest of those that came meanwhile after it.
// Each update began a goroutine of its own, for any URI the upstream
// named, subscribed or not: a flood of them, as many goroutines.
func (u *upstream) resourceChanged(params *mcp.ResourceUpdatedNotificationParams) {
	if params == nil {
		return
	}
	p, uri := u.p, params.URI
	p.subMu.Lock()
	if len(u.subs[uri]) == 0 {
		p.subMu.Unlock()
		return // nobody here asked for it
	}
	if _, passing := u.updating[uri]; passing {
		u.updating[uri] = params
		p.subMu.Unlock()
		return
	}
	if u.updating == nil {
		u.updating = map[string]*mcp.ResourceUpdatedNotificationParams{}
	}
	u.updating[uri] = nil
	p.subMu.Unlock()
	if !p.run.Go(func() { u.passUpdates(uri, params) }) {
		p.subMu.Lock()
		delete(u.updating, uri)
		p.subMu.Unlock()
	}
}

// passUpdates passes on params, an update of uri, and the newer ones that
// came while it did.
func (u *upstream) passUpdates(uri string, params *mcp.ResourceUpdatedNotificationParams) {
	p := u.p
	for {
		u.endForbiddenSubs(uri)
		u.resourceUpdated(params)
		p.subMu.Lock()
		next := u.updating[uri]
		if next == nil {
			delete(u.updating, uri)
			p.subMu.Unlock()
			return
		}
		u.updating[uri] = nil
		p.subMu.Unlock()
		params = next
	}
}

// resourceUpdated passes an upstream's notifications/resources/updated on
// to the gateway's clients that subscribed to the resource, its _meta
// masked as the rest of what an upstream sends a client is (the URI is
// the one the client subscribed to, and names the subscribers).
func (u *upstream) resourceUpdated(params *mcp.ResourceUpdatedNotificationParams) {
	select { // the server is made once the upstreams are connected
	case <-u.p.ready:
	case <-u.p.life.Done():
		return
	}
	if len(params.Meta) > 0 {
		c := *params
		c.Meta = withoutReachMeta(c.Meta) // reach's keys are reach's word (unforgedMeta)
		if m, ok := maskedOK(&c.Meta, u.p.redactor.Redact); ok {
			c.Meta = *m
		} else {
			c.Meta = nil // not passed on unmasked
		}
		params = &c
	}
	if err := u.p.server.ResourceUpdated(u.p.life, params); err != nil {
		u.log.Debug("passing a resource update on failed", "err", err)
	}
}

// toolsChanged re-lists the tools (refresh) after the upstream said its
// list changed: one listing at a time, and one more after it however many
// changes it announced meanwhile (a flood of announcements began a listing
// each, all at once, and an older list could be put in force after a newer).
func (u *upstream) toolsChanged() { u.coalesce(&u.listing, u.refresh) }

// coalesced is a job of an upstream run one at a time: asked for while it
// runs, it runs once more after, however many times it was asked for
// meanwhile. Guarded by the upstream's mu.
type coalesced struct {
	running, again bool
	began          time.Time // when it last began to run
}

// coalescePace is the least time between the starts of two runs of one
// coalesced job (a variable for tests): an upstream that announced its
// list changed without pause was listed again back to back, for as long
// as it went on, and each new listing told every client its list changed
// (each client then listing reach's). A change is seen within the pace.
var coalescePace = 250 * time.Millisecond

// coalesce runs f on the pool's runner as the job j (coalesced); it
// returns at once.
func (u *upstream) coalesce(j *coalesced, f func()) {
	u.mu.Lock()
	if j.running {
		j.again = true
		u.mu.Unlock()
		return
	}
	j.running = true
	u.mu.Unlock()
	run := func() {
		for {
			u.mu.Lock()
			wait := coalescePace - time.Since(j.began)
			u.mu.Unlock()
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-u.p.life.Done():
					t.Stop()
					u.mu.Lock()
					j.running, j.again = false, false
					u.mu.Unlock()
					return
				}
			}
			u.mu.Lock()
			j.began = time.Now()
			u.mu.Unlock()
			f()
			u.mu.Lock()
			if !j.again {
				j.running = false
				u.mu.Unlock()
				return
			}
			j.again = false
			u.mu.Unlock()
		}
	}
	if !u.p.run.Go(run) {
		u.mu.Lock()
		j.running = false
		u.mu.Unlock()
	}
}

// refresh re-lists the tools after the upstream said its list changed,
// and hands them to the catalog.
func (u *upstream) refresh() {
	ctx := u.p.life
	select { // a change announced while the gateway is being built is seen by the build
	case <-u.p.ready:
	case <-ctx.Done():
		return
	}
	cs, err := u.session(ctx)
	if err != nil {
		return
	}
	tools, err := u.list(ctx, cs)
	if err != nil {
		u.mu.Lock()
		u.listErr = err
		u.listWait = min(max(2*u.listWait, listRetryFirst), listRetryMax)
		wait := u.listWait
		// Until a listing goes through, the upstream's tools (those of a
		// new session above all, which may be none yet) are not what it
		// serves: list it again, as a lost session is dialled again. One
		// retry pending at a time: a listing that failed while one was
		// pending (a list_changed, a redial) scheduled a retry of its
		// own, each failing retry another, the retries then multiplying.
		if u.listRetry == nil && !u.closed {
			u.listRetry = time.AfterFunc(wait, func() {
				u.mu.Lock()
				u.listRetry = nil
				u.mu.Unlock()
				if u.p.life.Err() == nil {
					u.toolsChanged()
				}
			})
		}
		u.mu.Unlock()
		u.log.Warn("re-listing tools failed; trying again", "err", err, "in", wait)
		return
	}
	u.mu.Lock()
	u.listErr, u.listWait = nil, 0
	u.stopListRetryLocked()
	u.setToolsLocked(tools)
	gone := make([]string, 0, len(u.gone))
	for name := range u.gone {
		gone = append(gone, name)
	}
	u.mu.Unlock()
	u.p.catalog.Relisted(u.cfg.Name, u.tools(), gone)
}

// forward returns the Func of an upstream tool: it calls the tool on the
// upstream with the call's arguments, and in _meta its frame (traceparent,
// reach/parent), its request and its idempotency key, and a progress token
// when the downstream client asked for progress. When ctx ends, the SDK
// sends notifications/cancelled upstream. A failure to reach the upstream
// (a connection refused or broken, an HTTP 5xx or 429, a session that
// could not be reopened) is a ToolError of type "unavailable": that is how
// the pool reports connection-level failures to the upstream's circuit
// breaker (reach.Tool.Upstream); anything the upstream answered is not.
func (u *upstream) forward(exposed, name string) reach.ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		if u.isGone(exposed) {
			return nil, &reach.ToolError{Type: "not_found", Message: fmt.Sprintf("upstream %s no longer has the tool %s", u.cfg.Name, name)}
		}
		cs, err := u.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				// Its caller went away before the upstream's session was
				// had: nothing of the call was sent (its retry runs it).
				return nil, &reach.NotSentError{Err: context.Cause(ctx)}
			}
			return nil, &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("upstream %s is not reachable: %v", u.cfg.Name, err)}
		}
		f, _ := reach.FrameFrom(ctx)
		var wl mcpwire.CallLink // the call's _meta (meta, for the SDK's client)
		if f != nil {
			// link.FrameLink's, written into the call: no traceparent made a string.
			wl.Spanned, wl.Span, wl.TraceID, wl.Request = true, uint64(f.ID), f.Request.Trace(), f.Request.ID()
		}
		wl.IdempotencyKey, _ = reach.IdempotencyKey(ctx)
		caller := CallerFrom(ctx)
		var down *mcp.ServerSession
		if caller != nil {
			down = caller.Session
		}
		// A client that can sample or elicit gets a session of its own on
		// an HTTP upstream, so the upstream's requests on it are for it.
		own := CanSample(down) && u.cfg.URL != ""
		if own {
			if cs, err = u.sessionFor(ctx, down); err != nil {
				if ctx.Err() != nil {
					return nil, &reach.NotSentError{Err: context.Cause(ctx)}
				}
				return nil, &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("upstream %s is not reachable: %v", u.cfg.Name, err)}
			}
		}
		if ws := u.wireOf(cs); ws != nil {
			if own {
				// What the upstream sends outside the call's stream (its
				// standalone GET stream) reaches onCreateMessage, onElicit or
				// onLog; on this client's own session it is this call's.
				defer u.open.add(cs, &openCall{ctx: ctx, frame: f, ss: down, own: true, relay: &relay{}})()
			}
			res, err := u.callWire(ctx, ws, name, args, wl, caller)
			if errors.Is(err, errSessionGone) {
				u.drop(cs, down)
				if own {
					cs, err = u.sessionFor(ctx, down)
				} else {
					cs, err = u.session(ctx)
				}
				if err != nil {
					return nil, &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("upstream %s is not reachable: %v", u.cfg.Name, err)}
				}
				if ws = u.wireOf(cs); ws != nil {
					res, err = u.callWire(ctx, ws, name, args, wl, caller)
				}
			}
			if errors.Is(err, errSessionGone) {
				u.drop(cs, down)
				return nil, &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("upstream %s ended the session twice in a row", u.cfg.Name)}
			}
			if err != nil {
				return nil, err
			}
			u.reached(nil)
			res.Content = u.embedsAllowedWire(ctx, res.Content)
			if res.IsError {
				t, _ := res.Text(u.p.redactor)
				return nil, &reach.ToolError{Type: "tool_error", Message: strings.TrimSpace(t)}
			}
			data := res.Data(u.p.redactor)
			keep(ctx, res, nil, res.StructuredContent, data, u.p.redactor)
			return data, nil
		}
		meta := mcp.Meta{}
		if f != nil {
			link.FrameMeta(meta, f)
		}
		if wl.IdempotencyKey != "" {
			meta[link.MetaIdempotencyKey] = wl.IdempotencyKey
		}
		params := &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta}
		rl := &relay{}
		if caller != nil && caller.Progress != nil {
			tok := u.cfg.Name + "-" + strconv.FormatUint(u.tokens.Add(1), 10)
			u.progress.Store(tok, &progressRoute{caller: caller, relay: rl})
			defer u.progress.Delete(tok)
			params.SetProgressToken(tok)
		}
		landed := u.open.add(cs, &openCall{ctx: ctx, frame: f, ss: down, own: own, relay: rl})
		res, err := cs.CallTool(ctx, params)
		landed()
		rl.flush(relayFlush)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			u.failed(cs, err)
			if _, answered := errors.AsType[*jsonrpc.Error](err); !answered {
				u.reached(err)
			}
			return nil, u.callError(err)
		}
		u.reached(nil)
		res.Content = slices.DeleteFunc(res.Content, func(c mcp.Content) bool { return c == nil }) // a null is no content
		res.Content = u.embedsAllowed(ctx, nil, res.Content)
		if res.IsError {
			return nil, &reach.ToolError{Type: "tool_error", Message: strings.TrimSpace(contentText(res.Content, u.p.redactor))}
		}
		data := resultData(res, u.p.redactor)
		keep(ctx, nil, res.Content, res.StructuredContent, data, u.p.redactor)
		return data, nil
	}
}

// drop forgets a session the upstream ended, so the next call reconnects.
func (u *upstream) drop(cs *mcp.ClientSession, down *mcp.ServerSession) {
	if down != nil {
		u.own.CompareAndDelete(down, cs)
	}
	u.owner.Delete(cs)
	u.forget(cs, errSessionGone)
}

// failed forgets the session cs when a call on it failed because its
// connection closed, so that the next call reconnects.
func (u *upstream) failed(cs *mcp.ClientSession, err error) {
	if errors.Is(err, mcp.ErrConnectionClosed) {
		u.forget(cs, err)
	}
}

// forget closes cs and, if it is still the upstream's session, drops it
// for why. Only cs: a newer session that another call made meanwhile stays.
func (u *upstream) forget(cs *mcp.ClientSession, why error) {
	u.mu.Lock()
	lost := u.cs == cs && !u.closed
	if u.cs == cs {
		u.cs = nil
		u.lastErr = why
	}
	u.mu.Unlock()
	go cs.Close()
	if lost {
		u.dialInBackground()
	}
}

// callError classifies a failed upstream call: protocol errors the upstream
// answered are permanent; transport failures are transient.
func (u *upstream) callError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if isTooLarge(we) {
			return u.tooLarge(mcpwire.MaxAnswer)
		}
		typ := "upstream_error"
		switch we.Code {
		case jsonrpc.CodeInvalidParams:
			typ = "invalid_args"
		case jsonrpc.CodeMethodNotFound:
			typ = "not_found"
		}
		return &reach.ToolError{Type: typ, Message: fmt.Sprintf("upstream %s answered: %s", u.cfg.Name, we.Message)}
	}
	return &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("calling upstream %s failed: %v", u.cfg.Name, err)}
}

// resultData turns an upstream result into the call's data: the structured
// content when there is some, the text when every content is text (masked
// across its blocks by red, see mcpwire.JoinTexts), else the content list as JSON.
func resultData(res *mcp.CallToolResult, red *redact.Redactor) json.RawMessage {
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return b
		}
	}
	allText := true
	for _, c := range res.Content {
		if _, ok := c.(*mcp.TextContent); !ok {
			allText = false
			break
		}
	}
	if allText {
		return mcpwire.TextData(contentText(res.Content, red))
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// contentText joins the texts of cs (see mcpwire.JoinTexts).
func contentText(cs []mcp.Content, red *redact.Redactor) string {
	var texts []string
	lead := false
	for i, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			lead = lead || (i > 0 && len(texts) == 0)
			texts = append(texts, t.Text)
		}
	}
	return mcpwire.JoinTexts(texts, lead, red)
}

// progressRoute is where an upstream progress token's notifications go:
// the downstream client that asked for progress, on the stream of its
// call, in order with the call's other notifications.
type progressRoute struct {
	caller *Caller
	relay  *relay
}

// relayFlush bounds how long a call's result waits for its notifications
// to be passed on to a client that reads slowly.
const relayFlush = 2 * time.Second

// onProgress passes an upstream's progress that came through the SDK
// client on to the downstream client that asked for it.
func (u *upstream) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	u.relayProgress(req.Params)
}

// relayProgress passes progress on under the downstream client's token.
func (u *upstream) relayProgress(params *mcp.ProgressNotificationParams) {
	tok, ok := params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := u.progress.Load(tok)
	if !ok {
		return
	}
	r := v.(*progressRoute)
	p := *params
	p.ProgressToken = r.caller.Progress
	p.Meta = nil
	u.p.maskProgress(&p)
	r.relay.push(func() {
		if err := r.caller.Session.NotifyProgress(r.caller.Route, &p); err != nil {
			u.log.Debug("passing progress on failed", "err", err)
		}
	})
}

// inOrder wraps a stdio upstream's transport so that its progress and log
// notifications are queued for their call's client as they are read, and
// the call's result waits for them. (The SDK queues notifications for a
// handler goroutine but hands a response to its caller at once, so a
// notification sent just before a result would reach the handler after
// the call is over.) Each call's relay writes to its client, so a client
// that reads slowly never holds up the reader.
type inOrder struct {
	mcp.Transport
	u  *upstream
	cs atomic.Pointer[mcp.ClientSession] // set once connected
}

func (t *inOrder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &inOrderConn{Connection: c, t: t}, nil
}

type inOrderConn struct {
	mcp.Connection
	t *inOrder
}

func (c *inOrderConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if r, ok := msg.(*jsonrpc.Request); ok && !r.IsCall() && c.t.u.relayed(c.t.cs.Load(), r.Method, r.Params) {
			continue
		}
		return msg, nil
	}
}

// relayed passes a progress or log notification from the upstream session
// cs on, and reports whether it was one.
func (u *upstream) relayed(cs *mcp.ClientSession, method string, params json.RawMessage) bool {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) == nil {
			u.relayProgress(&p)
		}
		return true
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if cs != nil && json.Unmarshal(params, &p) == nil {
			u.relayLog(cs, &p)
		}
		return true
	}
	return false
}

// listRetryFirst and listRetryMax bound the wait before a failed listing
// is tried again: the first, doubling to the most (variables for tests).
var listRetryFirst, listRetryMax = time.Second, 30 * time.Second

// stopListRetryLocked stops the pending retry of a failed listing, if any;
// u.mu is held.
func (u *upstream) stopListRetryLocked() {
	if u.listRetry != nil {
		u.listRetry.Stop()
		u.listRetry = nil
	}
}

func (u *upstream) close() error {
	u.mu.Lock()
	u.closed = true
	u.stopListRetryLocked()
	cs := u.cs
	u.cs = nil
	u.mu.Unlock()
	u.closeOwn()
	if u.wire != nil {
		u.wire.Close()
	}
	if cs == nil {
		return nil
	}
	err := cs.Close()
	if err != nil && (errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "signal: terminated")) {
		err = nil
	}
	return err
}

// exited says, of a stdio upstream whose handshake failed on transport tr
// because its process exited, its exit status and the last lines of its
// stderr (its secrets masked) and what to do; "" for a process that did
// not exit (within its grace) or an HTTP upstream. Its handshake failed
// with no more than `calling "initialize": EOF`, which said neither why
// nor what to do.
func (u *upstream) exited(tr mcp.Transport) string {
	t, ok := tr.(*inOrder)
	if !ok {
		return ""
	}
	ct, ok := t.Transport.(*commandTransport)
	if !ok {
		return ""
	}
	st := ct.exitState(ct.grace)
	if st == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "its command %s exited (%s)", u.quoted(u.cfg.Command[0], 256), st)
	if tail := u.stderrTail(ct); tail != "" {
		fmt.Fprintf(&b, "; the last lines of its stderr: %s", tail)
	}
	b.WriteString("; run the upstream's command by hand to see why it stops, then fix its command, args, env or dir in the configuration")
	return u.p.redactor.RedactString(b.String())
}

// stderrTail is the last lines of the command's stderr, each masked, cut
// and quoted (quoted), joined by spaces; "" when there are none.
func (u *upstream) stderrTail(ct *commandTransport) string {
	ll, ok := ct.cmd.Stderr.(*lineLogger)
	if !ok {
		return ""
	}
	tail := ll.tail()
	for i, l := range tail {
		tail[i] = u.quoted(l, stderrTailLine)
	}
	return strings.Join(tail, " ")
}

// quoted returns s, its secrets masked, cut to max bytes, quoted in ASCII
// (strconv.QuoteToASCII) to be shown in a status or a log. It masks first:
// quoted, a secret with a rune past U+FFFF is spelled with Go's \U escape,
// and a secret cut at the end of s is followed by the closing quote,
// neither of which the masking reads.
func (u *upstream) quoted(s string, max int) string {
	return strconv.QuoteToASCII(ClipText(u.p.redactor.RedactString(s), max, ""))
}

// lineLogger logs what a stdio upstream writes to stderr, a line at a time
// (of at most 4 KiB), at most stderrBurst lines at once and stderrRate a
// second after that: an upstream that wrote its stderr as fast as it could
// had every line of it in reach's log, a disk filled at the pipe's speed.
// The lines past the bound are counted, and the count logged with the next
// line let through.
type lineLogger struct {
	log     *slog.Logger
	mu      sync.Mutex
	buf     []byte
	limit   *rate.Limiter // nil: newLimiter on the first line
	skipped int
	last    []string // the last stderrTail lines, masked then cut to stderrTailLine bytes, logged or not
	// mask masks the secrets of a line kept in last, before it is cut:
	// cut first, a secret the cut splits is no longer found, and its
	// first bytes were quoted in the start's error. nil: none.
	mask func(string) string
	// stream masks a line longer than 4 KiB, logged in pieces as it
	// comes: a piece ends where a read of the pipe ended, which may split
	// a secret, and masked one record at a time neither half was found.
	// The end of a piece that may begin a secret is held for the next
	// (redact.Stream). nil: pieces are logged as they come.
	stream *redact.Stream
}

// stderrTail and stderrTailLine bound what a stdio upstream that exited
// at start is quoted of its stderr: its last lines, each cut.
const (
	stderrTail     = 5
	stderrTailLine = 256
)

// tail returns the last lines written to stderr, the one without a newline
// yet last.
func (l *lineLogger) tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.last)
	if rest := strings.TrimSpace(string(l.buf)); rest != "" {
		out = append(out, ClipText(l.masked(rest), stderrTailLine, ""))
	}
	if len(out) > stderrTail {
		out = out[len(out)-stderrTail:]
	}
	return out
}

// newLineLogger is a lineLogger to log, masking with red.
func newLineLogger(log *slog.Logger, red *redact.Redactor) *lineLogger {
	return &lineLogger{log: log, mask: red.RedactString, stream: red.Stream()}
}

// masked is s with its secrets masked (mask), before it is cut.
func (l *lineLogger) masked(s string) string {
	if l.mask == nil {
		return s
	}
	return l.mask(s)
}

// stderrRate and stderrBurst bound the lines of one upstream's stderr
// logged.
const (
	stderrRate  = 100
	stderrBurst = 1000
)

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > 4096 {
				piece := string(l.buf)
				if l.stream != nil {
					piece = l.stream.Next(piece) // its end that may begin a secret held
				}
				if piece != "" {
					l.line(piece)
				}
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		line := string(l.buf[:i])
		if l.stream != nil && l.stream.Holding() { // the end of a long line
			line = l.stream.Next(line) + l.stream.Flush()
		}
		if line = strings.TrimSpace(line); line != "" {
			l.line(line)
		}
		l.buf = l.buf[i+1:]
	}
}

// line logs one line of stderr, unless past the bound; l.mu is held.
func (l *lineLogger) line(s string) {
	if len(l.last) == stderrTail {
		l.last = append(l.last[:0], l.last[1:]...)
	}
	l.last = append(l.last, ClipText(l.masked(s), stderrTailLine, ""))
	if l.limit == nil {
		l.limit = rate.NewLimiter(stderrRate, stderrBurst)
	}
	if !l.limit.Allow() {
		l.skipped++
		return
	}
	if l.skipped > 0 {
		l.log.Warn("upstream stderr: lines skipped, more than reach logs of an upstream (write less to stderr)", "skipped", l.skipped, "bound_per_second", stderrRate)
		l.skipped = 0
	}
	l.log.Info("upstream stderr", "line", s)
}
