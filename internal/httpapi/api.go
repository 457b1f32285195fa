// Package httpapi is reach's HTTP surface: the calls API (POST /v1/calls),
// the requests (GET /v1/requests[/{id}[/graph]], their cancel and end), the
// visible tools, the operators' routes (approvals, dead letters, audit,
// statistics), the web UI's data, /metrics and /healthz, in front of which it
// puts authentication, the body limit, the loopback check and cross-origin
// protection; it routes /mcp and the model proxy to their own rooms
// (internal/front, internal/modelproxy).
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/a2a"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/render"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/telemetry"
	"github.com/agentreach/reach/internal/ui"
	"github.com/agentreach/reach/internal/upstream"
)

// Options are what the HTTP API serves. Runtime, Owned, Choices, Tools,
// Upstreams, Stats, Metrics and Approvals are required.
type Options struct {
	MCP   http.Handler // /mcp, and /sse (the HTTP+SSE transport)
	Model http.Handler // POST /v1/chat/completions and POST /v1/responses, GET /v1/models[/{id}]
	// A2A serves the A2A agents at /a2a/NAME, and Agents lists them for
	// GET /v1/agents; both nil without agents.
	A2A     http.Handler
	Agents  Agents
	Runtime *reach.Runtime
	Owned   *link.Owned        // the requests the calls API places calls in
	Choices *link.ModelChoices // the tool call ids the model proxy saw
	// Authn authenticates every path but the probes; nil when nobody
	// authenticates (the API then serves loopback hosts only, and every
	// caller is an operator).
	Authn     *auth.Authenticator
	Tools     Tools
	Upstreams Upstreams
	Stats     *telemetry.Stats
	Metrics   http.Handler // /metrics
	Approvals *approval.Queue
	Store     store.Store // nil without a data folder: no audit log, dead letters are the runtime's
	Audit     *audit.Log  // nil without a data folder
	// Remote stops the requests that other instances run, on a store
	// they share with this one (internal/cluster); nil for one instance.
	Remote RemoteRequests
	// Redactor masks the notes of dismissals, which are kept, shown and
	// audited (P6); if nil, the one redactor's rules alone.
	Redactor *redact.Redactor
	MaxBody  int64 // bounds a request body
	// MaxInFlight bounds the requests one authenticated principal (of one
	// tenant) has in flight at once, streams included, each on a
	// connection of its own; past it a request is refused 429. 0: no bound.
	MaxInFlight int
	Logger      *slog.Logger // if nil, logs are discarded
	// Fast answers the tools/call POSTs to /mcp it takes on the server's
	// fast lane (see Server); nil: MCP serves them all.
	Fast FastMCP
	// NotReady says why the gateway should get no traffic now (it shuts
	// down, a required upstream is down), for /readyz; nil: always ready.
	NotReady func() []string
	// Dead says why only a restart brings this process back (the other
	// instances took its life for dead and recovered its work: it admits
	// no more), for /livez; nil or "": alive.
	Dead func() string
	// Shown are requests of other runtimes the UI shows too (reach demo
	// --serve: the scenarios it ran); nil for none.
	Shown []*reach.Request
	// Retention is how long the store keeps finished requests (0: all):
	// a request it removed is answered 410 request_removed, not as one
	// never known (retention.go).
	Retention time.Duration
}

// Tools are the tools a caller may see and call.
type Tools interface {
	Visible(id *auth.Identity) []reach.Tool
}

// Agents describes the A2A agents for GET /v1/agents.
type Agents interface {
	// AgentsFor lists the agents, each's live tasks those whose owner
	// counted reports true.
	AgentsFor(ctx context.Context, counted func(a2a.Owner) bool) []a2a.Status
}

// RemoteRequests stops requests that other instances run: Stop stores
// request id stopped (waking every instance) if may says the caller may
// stop a request of that principal and tenant, and returns the stored
// cause; found is false for an id the store does not know. End stores,
// as may allows, that the client ended request id: every instance ends its
// part, and no recovery undoes its calls.
type RemoteRequests interface {
	End(ctx context.Context, id string, may func(principal, tenant string) bool) (found bool, err error)
	Stop(ctx context.Context, id string, mode reach.StopMode, by, reason string, may func(principal, tenant string) bool) (found bool, cause *reach.Cause, err error)
	NotYours(err error) bool
	// Ended reports whether err is Stop's refusal of a request that ended
	// with no stop (completed, or ended by its client): nothing stored.
	Ended(err error) bool
	// RunningElsewhere returns, of the requests ids, those the store holds
	// running on another instance, with those instances' names: for the
	// views of a request whose part here ended while another's runs on.
	RunningElsewhere(ctx context.Context, ids []string) (map[string][]string, error)
}

// Upstreams describes the upstreams for /healthz.
type Upstreams interface {
	Upstreams() []upstream.Status
}

// API is reach's HTTP surface but MCP and the model proxy, which it routes
// to: /v1/calls, /v1/requests[/...], /v1/tools, the operators' routes, the
// web UI, /metrics and /healthz. Make one with New.
type API struct {
	rt        *reach.Runtime
	owned     *link.Owned
	choices   *link.ModelChoices
	authn     *auth.Authenticator
	tools     Tools
	upstreams Upstreams
	agents    Agents
	stats     *telemetry.Stats
	metrics   http.Handler
	approvals *approval.Queue
	store     store.Store
	remote    RemoteRequests
	audit     *audit.Log
	redactor  *redact.Redactor
	auditV    auditView // the audit log's reader (its st nil without a data folder)
	ui        *ui.UI
	notReady  func() []string
	dead      func() string
	shown     []*reach.Request
	log       *slog.Logger
	retention time.Duration  // see Options.Retention
	inflight  *inFlight      // each principal's requests in flight
	handler   http.Handler   // the routes behind the middleware
	served    *http.ServeMux // the routes but the answer to any other path
}

// New returns the HTTP handler of the whole gateway: opts' routes behind
// authentication (when configured), a body limit, a loopback-host check
// (when not), cross-origin protection and a recovery from panics.
func New(opts *Options) http.Handler { return newAPI(opts).handler }

func newAPI(opts *Options) *API {
	a := &API{rt: opts.Runtime, owned: opts.Owned, choices: opts.Choices, authn: opts.Authn, tools: opts.Tools, upstreams: opts.Upstreams,
		agents: opts.Agents, stats: opts.Stats, metrics: opts.Metrics, approvals: opts.Approvals, store: opts.Store, remote: opts.Remote, audit: opts.Audit, redactor: opts.Redactor,
		notReady: opts.NotReady, dead: opts.Dead, shown: opts.Shown, log: opts.Logger, retention: opts.Retention, inflight: &inFlight{max: opts.MaxInFlight}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.redactor == nil {
		a.redactor, _ = redact.New(nil) // fails only on a rule set given to it
	}
	a.ui = a.newUI()
	mux := http.NewServeMux()
	a.served = http.NewServeMux()
	for _, rt := range a.routes(opts) {
		mux.HandleFunc(rt.pattern, rt.h)
		if rt.pattern != "/" {
			a.served.HandleFunc(rt.pattern, rt.h)
		}
	}
	// The body limit comes after the authentication, which reads no body:
	// it reads a chunked body whole, which a client without credentials
	// could have made it do on each connection it opened. The UI, which
	// authenticates by its cookie, takes forms of up to preAuthBody (as
	// the server reads them, see Server).
	var h http.Handler = limitBody(opts.MaxBody, mux)
	if a.authn != nil {
		h = a.authn.Middleware(a.inflight.bound(h)) // every path but /healthz, /livez and /readyz
		h = uiSignsIn(limitBody(min(opts.MaxBody, preAuthBody), a.ui), h)
	}
	a.handler = endpointSlash(a.wrapOuter(h))
	return a
}

// endpointSlash serves /mcp/ as /mcp and /sse/ as /sse: an MCP client
// configured with the endpoint's URL and a trailing slash (the form some
// servers' documentation gives, and the one others redirect to) got 404 on
// its initialize, and its fallback to the HTTP+SSE transport 404 again.
// The request goes on with the path the routes, the authentication, the
// bounds and the MCP handler know; only those two paths are rewritten.
func endpointSlash(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/mcp/" || p == "/sse/" {
			r2 := new(http.Request)
			*r2 = *r
			u := *r.URL
			u.Path, u.RawPath = p[:len(p)-1], ""
			r2.URL = &u
			r = r2
		}
		h.ServeHTTP(w, r)
	})
}

// route is one entry of the API's routing table.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// routes is the API's routing table, all of it: MCP, the model proxy, the
// calls and requests, A2A (when served), the UI and the operators' routes,
// and the answer to any other path.
func (a *API) routes(opts *Options) []route {
	// Operators' routes check who asks before anything else (a body, an
	// id): whoever is not an operator learns nothing but that.
	const dead = "Dead letters are for operators."
	const counts = ": they count every principal's calls."
	approvals := a.approvals.Handler(&approval.HandlerOptions{Actor: approvalActor}).ServeHTTP
	rs := []route{
		{"/mcp", opts.MCP.ServeHTTP},
		{"/sse", opts.MCP.ServeHTTP}, // the HTTP+SSE transport (2024-11-05)
		{"GET /healthz", a.healthz},
		{"GET /livez", a.livez},
		{"GET /readyz", a.readyz},
		{"POST /v1/calls", a.postCalls},
		{"POST /v1/chat/completions", opts.Model.ServeHTTP},
		{"POST /v1/responses", opts.Model.ServeHTTP},
		{"GET /v1/models", opts.Model.ServeHTTP},
		{"GET /v1/models/{id...}", opts.Model.ServeHTTP},
		{"GET /v1/tools", a.listTools},
		{"GET /v1/requests", a.listRequests},
		{"GET /v1/requests/{id}", a.getRequest},
		{"GET /v1/requests/{id}/graph", a.getGraph},
		{"POST /v1/requests/{id}/cancel", a.cancelRequest},
		{"POST /v1/requests/{id}/end", a.endRequest},
		{"GET /v1/agents", a.listAgents},
		{"/ui/", a.ui.ServeHTTP},
		{"GET /ui", toUI},
		{"GET /{$}", toUI},
		{"GET /metrics", a.operatorsOnly("Metrics are for operators"+counts, a.metrics.ServeHTTP)},
		{"/v1/approvals", approvals},
		{"/v1/approvals/", approvals},
		{"GET /v1/deadletters", a.anyOperatorsOnly(dead, a.listDeadLetters)},
		{"POST /v1/deadletters/{id}/retry", a.anyOperatorsOnly(dead, a.retryDeadLetter)},
		{"POST /v1/deadletters/{id}/dismiss", a.anyOperatorsOnly(dead, a.dismissDeadLetter)},
		{"GET /v1/audit", a.auditEvents},
		{"GET /v1/audit/verify", a.auditVerify},
		{"GET /v1/stats", a.toolStats}, // operators only, each its tenant's (toolStats)
		{"/", a.notFound},
	}
	if opts.A2A != nil {
		rs = append(rs, route{"/a2a/", opts.A2A.ServeHTTP})
	}
	return rs
}

// toUI sends a browser to the UI.
func toUI(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) }

// notFound answers a path the API does not serve, with the ones it does. A
// path it serves for other methods gets 405 and those methods in Allow:
// "nothing at GET /v1/calls" sent whoever tried it to look for a path that
// is there. A model API's call the proxy does not serve is told what to
// change (modelAPICall).
func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	if allow := a.allowed(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		httpjson.WriteError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes %s, not %s.", r.URL.Path, strings.Join(allow, " or "), r.Method),
			fmt.Sprintf("Send %s %s.", allow[0], r.URL.Path))
		return
	}
	if msg, hint, ok := modelAPICall(r); ok { // a model client's call (modelapis.go)
		writeModelAPIError(w, msg, hint)
		return
	}
	httpjson.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("There is nothing at %s %s.", r.Method, r.URL.Path),
		"Use /mcp (MCP; /sse for the HTTP+SSE transport), POST /v1/calls, GET /v1/tools, POST /v1/chat/completions, POST /v1/responses, GET /v1/models, GET /v1/requests, GET /v1/requests/{id}[/graph], POST /v1/requests/{id}/cancel|end, GET /v1/agents, /a2a/NAME (A2A), /v1/approvals, /v1/deadletters, GET /v1/audit[/verify], GET /v1/stats, /ui/, /metrics, GET /livez, /readyz or /healthz.")
}

// allowed returns the methods a route serves r's path with, when that is
// not r's method.
func (a *API) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := a.served.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

// wrapOuter puts the middleware that comes before the body limit around h:
// the loopback check (when nobody authenticates), cross-origin protection,
// the UI's headers and the recovery from panics.
func (a *API) wrapOuter(h http.Handler) http.Handler {
	if a.authn == nil {
		h = localOnly(h)
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteError(w, http.StatusForbidden, "cross_origin",
			fmt.Sprintf("A cross-origin %s from a browser is refused.", r.Method),
			"Call the gateway from a program, or use the UI at /ui/ on the gateway's own address.")
	}))
	h = cop.Handler(h)
	return recoverPanics(a.log, uiHeaders(h))
}

// uiSignsIn sends /ui and /ui/... to the UI, which authenticates them
// itself (a session cookie from its login page, or credentials in the
// headers), redirects a browser's GET / to it, and sends everything else
// to next.
func uiSignsIn(u http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/ui" || strings.HasPrefix(p, "/ui/"):
			u.ServeHTTP(w, r)
		case p == "/" && r.Method == http.MethodGet && r.Header.Get("Authorization") == "" && r.Header.Get("X-Reach-Key") == "":
			http.Redirect(w, r, "/ui/", http.StatusFound) // a browser's first visit
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// uiHeaders gives every answer under /ui the UI's headers (no framing,
// its CSP) before anything else answers: a 401, a cross-origin 403, the
// redirect of /ui. Every other answer is data for a program, never a page:
// it gets apiCSP and nosniff, so that what an API route passes on of
// another server (the model endpoint's answer and its Content-Type, on
// /v1/models and the turns' routes) or draws (a graph's SVG) runs no
// script in a browser sent to it, with the gateway's origin (its UI
// session, its API when it authenticates nobody).
func uiHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/ui" || strings.HasPrefix(p, "/ui/") {
			ui.SetHeaders(w.Header())
		} else {
			w.Header().Set("Content-Security-Policy", apiCSP)
			w.Header().Set("X-Content-Type-Options", "nosniff")
		}
		next.ServeHTTP(w, r)
	})
}

// apiCSP is the Content-Security-Policy of the API's answers: nothing is
// loaded or run, nothing frames them, and a page among them is sandboxed
// (an opaque origin: no cookie, no storage, no script).
const apiCSP = "default-src 'none'; frame-ancestors 'none'; sandbox"

// identity is who makes an HTTP request, as the auth middleware found
// (nil when nobody authenticates).
func identity(r *http.Request) *auth.Identity {
	id, _ := auth.IdentityFrom(r.Context())
	return id
}

// limitBody answers 413 (as JSON) for a body larger than n, whether its
// length is declared or not.
func limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody && encoded(r.Header.Values("Content-Encoding")) {
			unsupportedEncoding(w)
			return
		}
		if r.ContentLength > n {
			bodyTooLarge(w, r.ContentLength, n)
			return
		}
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
			// A body of no declared length (chunked): read it here, so that
			// every route answers its excess alike.
			data, err := io.ReadAll(io.LimitReader(r.Body, n+1))
			switch {
			case err != nil:
				httpjson.WriteError(w, http.StatusBadRequest, "bad_body", "Reading the request body failed: "+err.Error()+".", "Send the body again.")
				return
			case int64(len(data)) > n:
				bodyTooLarge(w, -1, n)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.ContentLength = int64(len(data))
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, n)
		}
		next.ServeHTTP(w, r)
	})
}

// encoded reports whether Content-Encoding values name a coding other than
// identity: a compressed body, which the gateway does not decode (its JSON
// parsers met gzip's bytes and said "invalid character '\x1f'", and a
// decoder would be one more place for a small body to grow into a large
// one).
func encoded(values []string) bool {
	for _, v := range values {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}

// unsupportedEncoding answers 415 for a body with a content coding
// (RFC 9110 §15.5.16), saying to send it uncompressed.
func unsupportedEncoding(w http.ResponseWriter) {
	w.Header().Set("Accept-Encoding", "identity")
	httpjson.WriteError(w, http.StatusUnsupportedMediaType, "unsupported_encoding",
		"The request body is compressed or otherwise encoded (Content-Encoding); the gateway reads bodies as they are sent and did not read this one: nothing was done.",
		"Send the body uncompressed, without a Content-Encoding header.")
}

// bodyTooLarge answers 413 for a body of length n (-1: not declared, and
// found to be) over the limit.
func bodyTooLarge(w http.ResponseWriter, n, limit int64) {
	msg := fmt.Sprintf("The request body is larger than %d bytes.", limit)
	if n > limit {
		msg = fmt.Sprintf("The request body is %d bytes; the limit is %d.", n, limit)
	}
	httpjson.WriteError(w, http.StatusRequestEntityTooLarge, "body_too_large", msg,
		"Send fewer or smaller calls per request, or raise max_body_bytes in the configuration.")
}

// localHost reports whether a request's Host names this machine: a
// loopback address or localhost.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	// net.ParseIP's reading (an address without a zone), without the
	// allocation of its result: every call on the fast lane asks.
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// localOnly refuses requests whose Host is not a loopback name, so that a
// web page cannot reach the gateway through DNS rebinding.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			httpjson.WriteError(w, http.StatusForbidden, "not_local",
				fmt.Sprintf("Host %q is not a loopback name; reach serves this machine only.", r.Host),
				"Connect to 127.0.0.1, [::1] or localhost.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic serving a request", "path", r.URL.Path, "panic", fmt.Sprint(v))
				internalError(w)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// The probes, with the meanings Kubernetes gives them:
//
//   - GET /livez: the process serves HTTP and can do its work. 200 while
//     it does; 503 {"status": "restart", "reason"} once Options.Dead says
//     only a restart brings it back (its life was taken for dead by the
//     other instances). A restart would not fix a down upstream, so
//     nothing else counts here.
//   - GET /readyz: send this instance traffic. 503 while Options.NotReady
//     says why not (it shuts down, its PostgreSQL store failed its last
//     heartbeat, its SQLite store its last write or its file is gone, an
//     upstream marked required: true is not connected); 200
//     otherwise, also when an optional upstream is down
//     (its tools are refused with a structured error; the rest work).
//   - GET /healthz: the report, for people and monitors: {"status": "ok" |
//     "degraded" (an upstream is not connected, or the audit log lost
//     recorded events), "ready", "tools", "upstreams": [...], "audit":
//     {"appended", "dropped", "failed"} with a data folder}, always 200 while the process serves, like /livez:
//     decide on traffic with /readyz, not on this.
//
// None of them needs credentials, and none tells more than names, counts
// and connection states to a caller without them: /healthz adds the
// upstreams' and breakers' errors for a caller with valid credentials (or
// when the gateway asks for none).

func (a *API) livez(w http.ResponseWriter, _ *http.Request) {
	if a.dead != nil {
		if why := a.dead(); why != "" {
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]any{"status": "restart", "reason": why})
			return
		}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"status": "ok"})
}

func (a *API) whyNotReady() []string {
	if a.notReady == nil {
		return nil
	}
	return a.notReady()
}

func (a *API) readyz(w http.ResponseWriter, _ *http.Request) {
	if why := a.whyNotReady(); len(why) > 0 {
		httpjson.Write(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "reasons": why})
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"status": "ready"})
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	// With authentication on, /healthz answers anyone, and what an
	// upstream or a tool said when it failed (a path, a host, a user's
	// name in an error) stays with those who may see it: a caller without
	// valid credentials gets each upstream's name, transport, state and
	// count, and the breakers' states, without their errors. A breaker's
	// error (a tool's, an upstream's or a model endpoint's) is what one
	// tenant's call said: the principal whose call it was, in its tenant,
	// and a global operator (the role operator of no tenant) see it; one of
	// no request (reported outside any request) may name any tenant's host
	// or account: a global operator's only (reach.BreakerErrorFor). An
	// upstream's connection error is the gateway's own, of its
	// configuration, which a call's refusal tells its model too. The audit
	// log's figures count every tenant's events: a global operator's.
	detailed := a.authn == nil || !a.authn.Enabled()
	global := detailed
	var caller *auth.Identity
	if !detailed {
		id, err := a.authn.Authenticate(r)
		detailed = err == nil
		global = detailed && globalOperator(id)
		if detailed {
			caller = id
		}
	}
	ups := a.upstreams.Upstreams()
	status := "ok"
	for i, u := range ups {
		if !u.Connected || u.Error != "" {
			status = "degraded"
		}
		if !detailed {
			ups[i].Error = ""
		}
	}
	// The breakers of the upstreams and model endpoints, and those of the
	// tools that are not closed: what is down, since when, when it is
	// tried again.
	breakers := []reach.BreakerStatus{}
	for _, b := range a.rt.Breakers() {
		if b.Kind == reach.BreakerTool && b.State == reach.BreakerClosed {
			continue
		}
		if b.State != reach.BreakerClosed {
			status = "degraded"
		}
		// A breaker's last failure is what one call said, of one
		// principal in one tenant, whatever the breaker's kind (an
		// upstream's or a model endpoint's too): its owner's and a
		// global operator's (reach.BreakerErrorFor).
		if !global && (caller == nil || !reach.BreakerErrorFor(b, caller.Principal, caller.Tenant)) {
			b.LastError = ""
		}
		breakers = append(breakers, b)
	}
	out := map[string]any{"status": status, "ready": len(a.whyNotReady()) == 0, "tools": len(a.rt.Tools()), "upstreams": ups, "breakers": breakers}
	if a.audit != nil {
		// Recorded events the audit log lost since the gateway started:
		// the log lacks them (its loss notes say where), so the instance
		// is degraded until a restart.
		st := a.audit.Stats()
		if global {
			out["audit"] = map[string]int64{"dropped": st.Dropped, "failed": st.Failed, "appended": st.Appended}
		}
		if st.Dropped+st.Failed > 0 {
			out["status"] = "degraded"
		}
	}
	httpjson.Write(w, http.StatusOK, out)
}

// postCalls runs an R3 envelope: {"request_id", "tool_calls": [...]}.
func (a *API) postCalls(w http.ResponseWriter, r *http.Request) {
	data, ok := httpjson.ReadBody(w, r)
	if !ok {
		return
	}
	env, err := reach.DecodeEnvelope(data)
	if err != nil {
		httpjson.WriteError(w, http.StatusBadRequest, "bad_envelope", upperFirst(err.Error())+".",
			`Send {"request_id": "optional", "tool_calls": [{"call_id": "c1", "tool": "<name>", "arguments": {...}}]}.`)
		return
	}
	l, err := link.FromHeaders(r.Header)
	if le := (*link.Error)(nil); errors.As(err, &le) {
		httpjson.WriteError(w, le.Status, le.Code, le.Message, le.Suggestion)
		return
	}
	if env.RequestID != "" {
		if l.Request != "" && l.Request != env.RequestID {
			httpjson.WriteError(w, http.StatusConflict, "request_mismatch",
				fmt.Sprintf("The envelope names request %s but the baggage header names %s.", env.RequestID, l.Request),
				"Name one request.")
			return
		}
		l.Request = env.RequestID
	}
	l.Agent = "api" // place bounds the request id
	caller, _ := auth.IdentityFrom(r.Context())
	for _, c := range env.ToolCalls {
		if f := a.choices.Turn(c.ID, l.Request, caller); f != nil {
			l.ModelTurn = f
			break
		}
	}
	ctx, req, done, err := a.owned.CallContext(r.Context(), l, nil)
	if err != nil {
		var le *link.Error
		if errors.As(err, &le) {
			httpjson.WriteError(w, le.Status, le.Code, le.Message, le.Suggestion)
			return
		}
		httpjson.WriteError(w, http.StatusInternalServerError, "internal", err.Error(), "")
		return
	}
	defer done()
	resp := a.rt.Batch(ctx, env)
	resp.RequestID = req.ID()
	httpjson.Write(w, http.StatusOK, resp)
}

// upperFirst begins a message with a capital, unless it begins with a
// name as the client wrote it: "tool_calls[1]: ..." is the field the
// client sent, not "Tool_calls[1]".
func upperFirst(s string) string {
	word, _, _ := strings.Cut(s, " ")
	if s == "" || strings.ContainsAny(word, "_[.") {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// requestSummary is a request in GET /v1/requests.
type requestSummary struct {
	ID    string             `json:"id"`
	State reach.RequestState `json:"state"`
	// Activity is what it is doing now: running, waiting_for_approval,
	// idle, stopped or done (telemetry.RequestActivity).
	Activity  string `json:"activity"`
	Principal string `json:"principal"`
	Agent     string `json:"agent"`
	Parent    string `json:"parent,omitempty"`
	// Priority is the request's priority for the rate limits (R8), left
	// out when it is the default, 0.
	Priority  int       `json:"priority,omitempty"`
	Started   time.Time `json:"started"`
	ToolCalls int       `json:"tool_calls"`
	Turns     int       `json:"turns"`
	Tokens    int64     `json:"tokens"`
	Cost      float64   `json:"cost"`
	Refusals  int       `json:"refusals"`
	// RunningOn names the instances that run the request when its part
	// here ended (its state here is completed) and the shared store holds
	// it running there: State and Activity are then "running", as the
	// store says.
	RunningOn []string `json:"running_on,omitempty"`
}

// runsOn shows s running on the instances names, as the store says.
func (s *requestSummary) runsOn(names []string) {
	if names == nil {
		return
	}
	s.State, s.Activity, s.RunningOn = reach.RequestRunning, telemetry.StateRunning, names
}

// elsewhere returns, of rs, the requests this instance shows completed
// (its part of them ended) that the shared store holds running on another
// instance, with those instances' names; nil without a shared store, or
// when the store cannot say (then the views show this instance's part).
// One read of the store, for a view only: no call's path comes here, and
// Request.State (what the runtime acts on) is not changed.
func (a *API) elsewhere(ctx context.Context, rs ...*reach.Request) map[string][]string {
	if a.remote == nil {
		return nil
	}
	var ids []string
	for _, r := range rs {
		if r.State() == reach.RequestCompleted {
			ids = append(ids, r.ID())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	m, err := a.remote.RunningElsewhere(ctx, ids)
	if err != nil {
		a.log.Warn("reading which ended requests run on other instances", "err", err)
		return nil
	}
	return m
}

func summarize(r *reach.Request, a telemetry.Activity) requestSummary {
	u := r.Usage()
	s := requestSummary{ID: r.ID(), State: r.State(), Activity: a.State, Principal: r.Principal(), Agent: r.Agent(), Priority: r.Priority(),
		Started: r.Started().UTC(), ToolCalls: u.ToolCalls, Turns: u.Turns, Tokens: u.Tokens, Cost: u.Cost, Refusals: a.Refused}
	if p := r.Parent(); p != nil {
		s.Parent = p.ID()
	}
	return s
}

// pendingApprovals says whether a request has an approval that still
// waits, so that a request whose calls were answered "pending" is listed
// as waiting_for_approval only until their approval is decided (or
// expires); nil without an approval queue.
func (a *API) pendingApprovals() func(string) bool {
	if a.approvals == nil {
		return nil
	}
	m := a.approvals.PendingRequests()
	return func(id string) bool { return m[id] }
}

// listRequests is GET /v1/requests[?state=running|waiting_for_approval|
// idle|stopped|done&limit=N]: the requests the caller sees, newest first.
func (a *API) listRequests(w http.ResponseWriter, hr *http.Request) {
	q := hr.URL.Query()
	state := q.Get("state")
	if state != "" && state != telemetry.StateDone && !slices.Contains(telemetry.LiveStates, state) {
		msg := fmt.Sprintf("There is no request state %q.", state)
		// The filter is by a request's activity; its "state" field, the
		// first a reader sees, has other names for the ended ones.
		switch rs := reach.RequestState(state); {
		case rs == reach.RequestCompleted:
			msg = fmt.Sprintf(`state=%s filters by a request's "activity", not its "state": a request whose state is %s is done.`, state, state)
		case rs.Stopped() || rs == reach.RequestInterrupted:
			msg = fmt.Sprintf(`state=%s filters by a request's "activity", not its "state": a request whose state is %s is stopped.`, state, state)
		}
		httpjson.WriteError(w, http.StatusBadRequest, "bad_state", msg, "Use running, waiting_for_approval, idle, stopped or done.")
		return
	}
	limit := -1
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit=%q is not a number of requests.", l), "Use a whole number, e.g. limit=20.")
			return
		}
		limit = n
	}
	rs := a.rt.Requests()
	seen := rs[:0:0]
	for _, r := range rs {
		if a.sees(hr, r) {
			seen = append(seen, r)
		}
	}
	on := a.elsewhere(hr.Context(), seen...)
	out := make([]requestSummary, 0, len(seen))
	now := time.Now()
	pending := a.pendingApprovals()
	for _, r := range seen {
		if limit >= 0 && len(out) >= limit {
			break
		}
		s := summarize(r, telemetry.RequestActivityPending(r, now, pending))
		s.runsOn(on[r.ID()])
		if state != "" && s.Activity != state {
			continue
		}
		out = append(out, s)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"requests": out})
}

type usageJSON struct {
	Turns     int     `json:"turns"`
	ToolCalls int     `json:"tool_calls"`
	Tokens    int64   `json:"tokens"`
	Cost      float64 `json:"cost"`
	Wall      string  `json:"wall"`
	MaxDepth  int     `json:"max_depth"`
}

func (a *API) lookup(w http.ResponseWriter, r *http.Request) (*reach.Request, bool) {
	id := r.PathValue("id")
	req, ok := a.here(r, id)
	if !ok {
		if last, gone := a.removed(r, id); gone {
			a.writeRemoved(w, id, last)
			return nil, false
		}
		if a.notHere(w, r, id) {
			return nil, false
		}
		httpjson.WriteError(w, http.StatusNotFound, "unknown_request", fmt.Sprintf("There is no request %q here.", id),
			"List the requests with reach requests list (GET /v1/requests); ended requests are kept for a while, then forgotten.")
		return nil, false
	}
	if !a.sees(r, req) {
		httpjson.WriteError(w, http.StatusForbidden, "not_your_request", fmt.Sprintf("Request %s belongs to another principal.", id),
			"Only its principal, or a principal with the role "+operatorRole+" of its tenant or of none, may see or stop it; list yours with reach requests list (GET /v1/requests).")
		return nil, false
	}
	return req, true
}

func (a *API) getRequest(w http.ResponseWriter, r *http.Request) {
	req, ok := a.lookup(w, r)
	if !ok {
		return
	}
	u := req.Usage()
	out := struct {
		requestSummary
		Scene  string       `json:"scene,omitempty"`
		Budget budget.View  `json:"budget"`
		Used   usageJSON    `json:"used"`
		Left   budget.View  `json:"left"`
		Stop   *reach.Cause `json:"stop,omitempty"`
		// Shared: Used and Left are the shared store's (every instance's
		// spend), not this instance's part (sharedUsage).
		Shared   bool     `json:"shared,omitempty"`
		Children []string `json:"children,omitempty"`
		// AuditLost counts the events of its frames the audit log never
		// got (its queue was full) or failed to store: their frames are
		// kept in memory (each marked audit_lost), the log lacks them.
		AuditLost int64          `json:"audit_lost,omitempty"`
		Frames    []render.Frame `json:"frames"`
	}{
		requestSummary: summarize(req, telemetry.RequestActivityPending(req, time.Now(), a.pendingApprovals())),
		Scene:          req.Scene(),
		Budget:         req.Budget().View(),
		Used: usageJSON{Turns: u.Turns, ToolCalls: u.ToolCalls, Tokens: u.Tokens, Cost: u.Cost,
			Wall: u.Wall.Round(time.Millisecond).String(), MaxDepth: u.MaxDepth},
		Left:      req.Remaining().View(),
		Stop:      req.StopCause(),
		AuditLost: req.AuditLost(),
		Frames:    render.Frames(req),
	}
	out.runsOn(a.elsewhere(r.Context(), req)[req.ID()])
	if used, left, ok := a.sharedUsage(r.Context(), req); ok {
		out.Used.Turns, out.Used.ToolCalls, out.Used.Tokens, out.Used.Cost = used.Turns, used.ToolCalls, used.Tokens, used.Cost
		out.Left, out.Shared = left.View(), true
	}
	for _, c := range req.Children() {
		out.Children = append(out.Children, c.ID())
	}
	httpjson.Write(w, http.StatusOK, out)
}

// sharedUsage returns, on a store that several instances share, what req
// has spent on every instance (its row of the shared ledger), and what is
// left of its budget after that within what is left of the requests above
// it (the fewest left in each dimension; wall clock and depth as here):
// what the shared check admits its calls against. A hand-off begun here
// was carved from this instance's view of its caller's spend, which may
// not count another instance's calls. ok is false without a shared store,
// or when the store cannot say (the view then shows this instance's part).
func (a *API) sharedUsage(ctx context.Context, req *reach.Request) (used budget.Usage, left reach.Budget, ok bool) {
	if a.remote == nil || a.store == nil {
		return used, left, false
	}
	type link struct {
		id    string
		limit reach.Budget
		local budget.Usage // what it spent here (a request kept here)
	}
	var chain []link
	top := req
	for q := req; q != nil; q = q.Parent() {
		chain, top = append(chain, link{q.ID(), q.Budget(), q.Usage()}), q
	}
	// Above a sub-request another instance began (joined here): the
	// store's requests, as the shared check reads them.
	if rec, err := a.store.GetRequest(ctx, top.ID()); err == nil {
		for id := rec.Parent; id != "" && len(chain) < 65; {
			up, err := a.store.GetRequest(ctx, id)
			if err != nil {
				break
			}
			var b reach.Budget
			if len(up.Budget) > 0 && json.Unmarshal(up.Budget, &b) != nil {
				b = reach.Budget{}
			}
			chain, id = append(chain, link{id: up.ID, limit: b}), up.Parent
		}
	}
	local := req.Usage()
	var limited [4]bool // turns, tool calls, tokens, cost: limited below
	for i, l := range chain {
		s, err := a.store.Spent(ctx, l.id)
		if err != nil {
			a.log.Warn("reading a request's shared spend", "request", l.id, "err", err)
			return used, left, false
		}
		// The model calls reach makes itself are counted here only
		// (docs/INSTANCES.md): the more of the two.
		u := budget.Usage{Turns: max(int(s.Turns), l.local.Turns), ToolCalls: max(int(s.ToolCalls), l.local.ToolCalls),
			Tokens: max(s.Tokens, l.local.Tokens), Cost: max(float64(s.CostNano)/1e9, l.local.Cost), Wall: local.Wall, MaxDepth: local.MaxDepth}
		r := budget.Remaining(l.limit, u)
		if i == 0 {
			used, left = u, r
		} else {
			left.Turns = fewest(left.Turns, limited[0], l.limit.Turns > 0, r.Turns)
			left.ToolCalls = fewest(left.ToolCalls, limited[1], l.limit.ToolCalls > 0, r.ToolCalls)
			left.Tokens = fewest(left.Tokens, limited[2], l.limit.Tokens > 0, r.Tokens)
			left.Cost = fewest(left.Cost, limited[3], l.limit.Cost > 0, r.Cost)
		}
		limited[0] = limited[0] || l.limit.Turns > 0
		limited[1] = limited[1] || l.limit.ToolCalls > 0
		limited[2] = limited[2] || l.limit.Tokens > 0
		limited[3] = limited[3] || l.limit.Cost > 0
	}
	return used, left, true
}

// fewest is what is left in one dimension: cur, what the requests below
// have left (if one of them limits it: limited), narrowed by v, what a
// request above has left (if it limits it: limits).
func fewest[T int | int64 | float64](cur T, limited, limits bool, v T) T {
	switch {
	case !limits:
		return cur
	case !limited:
		return v
	default:
		return min(cur, v)
	}
}

func (a *API) getGraph(w http.ResponseWriter, r *http.Request) {
	req, ok := a.lookup(w, r)
	if !ok {
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
		httpjson.Write(w, http.StatusOK, render.GraphOf(req))
	case "dot":
		w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
		w.Write(render.DOTWith(render.Frames(req), render.Caption(req)))
	case "svg":
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(render.SVGWith(render.Frames(req), &render.SVGOptions{Caption: render.Caption(req)}))
	default:
		httpjson.WriteError(w, http.StatusBadRequest, "bad_format", fmt.Sprintf("Unknown graph format %q.", f), "Use format=json, format=dot or format=svg.")
	}
}

// here returns the request id this instance runs, as the caller of r is
// told of it: one of another tenant (hidden) is not there for it, as an
// id that no request has.
func (a *API) here(r *http.Request, id string) (*reach.Request, bool) {
	req, ok := a.rt.Lookup(id)
	if ok && a.hidden(r, req.Root().Tenant()) {
		return nil, false
	}
	return req, ok
}

// hidden reports whether the caller of r is told of a request whose root
// is of tenant as of one that is not there: it is of another tenant than
// the caller's, and the caller is no operator of it. Request ids a client
// names are one namespace; that another tenant uses a name is not told
// (the answer of an unknown id, on every route), while a request of
// another principal of the caller's own tenant is refused 403
// not_your_request.
func (a *API) hidden(r *http.Request, tenant string) bool {
	if a.operatesOn(r, tenant) {
		return false
	}
	who, ok := auth.IdentityFrom(r.Context())
	return !ok || who.Tenant != tenant
}

// mayHiding is mayFor that also records (in *hid) whether it refused a
// request of another tenant, which the caller is then answered as one
// the store does not know (hidden).
func (a *API) mayHiding(r *http.Request) (may func(principal, tenant string) bool, hid *bool) {
	hid = new(bool)
	mayFor := a.mayFor(r)
	return func(principal, tenant string) bool {
		if mayFor(principal, tenant) {
			return true
		}
		*hid = a.hidden(r, tenant)
		return false
	}, hid
}

// mayFor says whether the caller of r may act on a request of principal
// and tenant.
func (a *API) mayFor(r *http.Request) func(principal, tenant string) bool {
	return func(principal, tenant string) bool {
		if a.operatesOn(r, tenant) {
			return true
		}
		who, ok := auth.IdentityFrom(r.Context())
		return ok && who.Principal == principal && who.Tenant == tenant
	}
}

// endRemote ends a request that this instance does not run, and another
// one may: the end is stored and every instance woken, each of which ends
// its part.
func (a *API) endRemote(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	may, hid := a.mayHiding(r)
	found, err := a.remote.End(r.Context(), id, may)
	if *hid {
		found, err = false, nil // another tenant's: as one the store does not know
	}
	if a.remoteFailed(w, id, found, err, "end", "ended") {
		return
	}
	a.log.Info("request ended through the API, for another instance", "request", id)
	httpjson.Write(w, http.StatusOK, map[string]any{"id": id, "state": reach.RequestState("ended")})
}

// cancelRemote stops a request that this instance does not run, and
// another one may: the stop is stored and every instance woken. Its
// reason is redacted before it is stored, as a local stop's is (Stop):
// the store's copy is what the stop's answer and every view of the
// stored request show.
func (a *API) cancelRemote(w http.ResponseWriter, r *http.Request, mode reach.StopMode, by, reason string) {
	id := r.PathValue("id")
	may, hid := a.mayHiding(r)
	found, cause, err := a.remote.Stop(r.Context(), id, mode, by, a.redactor.RedactString(reason), may)
	if *hid {
		found, cause, err = false, nil, nil // another tenant's: as one the store does not know
	}
	if found && err != nil && a.remote.Ended(err) {
		endedConflict(w, id)
		return
	}
	if a.remoteFailed(w, id, found, err, "stop", "stopped") {
		return
	}
	a.log.Info("request stopped through the API, for another instance", "request", id, "mode", mode.String())
	state := reach.RequestState("stopped_" + cause.Mode.String())
	httpjson.Write(w, http.StatusOK, map[string]any{"id": id, "state": state, "stop": cause})
}

// cutAtRune cuts s to at most max bytes at a rune boundary: a cut at a
// byte inside a character would keep half of it (invalid UTF-8, shown as
// U+FFFD by whoever reads it).
func cutAtRune(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// endedConflict answers a stop of request id, which ended with no stop
// (completed, or ended by its client): 409, nothing changed, its writes
// kept, with its final state.
func endedConflict(w http.ResponseWriter, id string) {
	httpjson.Write(w, http.StatusConflict, map[string]any{
		"id": id, "state": reach.RequestCompleted,
		"error": httpjson.Error{Code: "request_ended",
			Message: fmt.Sprintf("Request %s ended (completed) before this stop: a request that is over is not stopped, and its writes stay done. Nothing changed.", id),
			Suggestion: "A stop of the request above a sub-request undoes the sub-request's work too; a sub-request still running is stopped by its own id. " +
				"Otherwise undo the writes you do not want with the tools' own calls."},
	})
}

// remoteFailed answers an action (verb: end or stop, past: ended or
// stopped) on a request of another instance that did not happen, and
// reports whether it did not: the store knows no such request, it is
// another principal's, or the store failed.
func (a *API) remoteFailed(w http.ResponseWriter, id string, found bool, err error, verb, past string) bool {
	switch {
	case !found && err == nil:
		httpjson.WriteError(w, http.StatusNotFound, "unknown_request", fmt.Sprintf("There is no request %q here or in the shared store.", id),
			"List the requests with GET /v1/requests; ended requests are kept for a while, then forgotten.")
	case err != nil && a.remote.NotYours(err):
		httpjson.WriteError(w, http.StatusForbidden, "not_your_request", fmt.Sprintf("Request %s belongs to another principal.", id),
			"Only its principal, or a principal with the role "+operatorRole+" of its tenant or of none, may see or "+verb+" it; list yours with GET /v1/requests.")
	case err != nil:
		// The store's own text (a driver's) is logged, not told.
		a.log.Warn("request not "+past+": the shared store did not answer", "request", id, "err", err)
		httpjson.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", fmt.Sprintf("Request %s could not be %s: the shared store did not answer.", id, past),
			"Try again in a moment; the request runs on until it is "+past+".")
	default:
		return false
	}
	return true
}

// endRequest is POST /v1/requests/{id}/end: the agent's work on the request
// is done; its sagas are settled (nothing to undo after a restart).
func (a *API) endRequest(w http.ResponseWriter, r *http.Request) {
	if _, here := a.here(r, r.PathValue("id")); !here && a.remote != nil {
		a.endRemote(w, r)
		return
	}
	req, ok := a.lookup(w, r)
	if !ok {
		return
	}
	if a.remote != nil {
		// Stored before this part ends, so that every instance ends its
		// part and no recovery undoes what the client settled.
		if _, err := a.remote.End(r.Context(), req.ID(), nil); err != nil {
			a.log.Warn("request not ended: the shared store did not answer", "request", req.ID(), "err", err)
			httpjson.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", fmt.Sprintf("Request %s could not be ended: the shared store did not answer.", req.ID()),
				"Try again in a moment; the request runs on until it is ended.")
			return
		}
	}
	a.owned.End(req.ID())
	req.End()
	httpjson.Write(w, http.StatusOK, map[string]any{"id": req.ID(), "state": req.State()})
}

func (a *API) cancelRequest(w http.ResponseWriter, r *http.Request) {
	var req *reach.Request
	if _, here := a.here(r, r.PathValue("id")); here || a.remote == nil {
		var ok bool
		if req, ok = a.lookup(w, r); !ok {
			return
		}
	}
	data, ok := httpjson.ReadBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Mode   string `json:"mode"`
		Reason string `json:"reason"`
	}
	if len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_body", "The body is not a cancel order: "+err.Error()+".",
				`Send {"mode": "soft" | "cancel" | "isolate", "reason": "why"}.`)
			return
		}
	}
	if in.Mode == "" {
		in.Mode = "cancel"
	}
	mode, err := reach.ParseStopMode(in.Mode)
	if err != nil {
		httpjson.WriteError(w, http.StatusBadRequest, "bad_mode", upperFirst(err.Error())+".",
			"soft finishes what is in flight, cancel cancels it, isolate also refuses late results.")
		return
	}
	if in.Reason == "" {
		in.Reason = "cancelled through the API"
	}
	in.Reason = cutAtRune(in.Reason, 500)
	by := "api"
	if a.authn != nil {
		by = principalOf(r)
	}
	if req != nil && a.remote != nil && req.State() == reach.RequestCompleted {
		// Its part here is over; the request may run on another
		// instance, which the stored stop reaches (its undos, this
		// part's handed over, run there). The store refuses the stop if
		// the request ended everywhere, or its client ended it.
		req = nil
	}
	if req == nil {
		a.cancelRemote(w, r, mode, by, in.Reason)
		return
	}
	req.Stop(mode, by, in.Reason)
	if req.State() == reach.RequestCompleted {
		endedConflict(w, req.ID())
		return
	}
	a.log.Info("request stopped through the API", "request", req.ID(), "mode", in.Mode)
	httpjson.Write(w, http.StatusOK, map[string]any{"id": req.ID(), "state": req.State(), "stop": req.StopCause()})
}
