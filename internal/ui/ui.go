// Package ui is reach's web UI: server-rendered pages under /ui/ for the
// requests (live, with budget bars), one request (its call graph, timeline,
// budget and stop buttons), the approvals inbox, the audit log and per-tool
// statistics. It needs no JavaScript framework and no network: assets are
// embedded, and a small script swaps in fresh content when the server says
// something changed (server-sent events).
package ui

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/render"
	"github.com/agentreach/reach/internal/telemetry"
)

//go:embed assets
var assets embed.FS

// Approval is one entry of the approvals inbox: what the call does
// (Operation), to what (Tool and Args), with what impact, who asked and
// why, who must decide and who voted.
type Approval struct {
	ID, Tool, Args, Impact, AskedBy, Request, Needs, Status string
	Operation, Why, Agent, Scene, Note                      string
	Created, Expires                                        time.Time
	Votes                                                   []Vote
	Denial                                                  *Vote
}

// Vote is one approval or denial of an Approval: by whom, as what ("user"
// or "reviewer"), when and why.
type Vote struct {
	By, As, Reason string
	At             time.Time
}

// Approvals is the approval queue the inbox shows and acts on. Each method
// is given the HTTP request it serves and acts as the one who makes it,
// with the roles and tenant they authenticated with.
type Approvals interface {
	List(r *http.Request) []Approval // the approvals r's sender may see and decide
	// Approve and Deny return an error that matches ErrNotRecorded when
	// the store did not take the decision (it stays as it was).
	Approve(r *http.Request, id, reason string) error
	Deny(r *http.Request, id, reason string) error
}

// ErrNotRecorded is matched by an Approvals decision's error when the
// store did not take it: the page says so, and to look again and decide
// again, not that it was decided already.
var ErrNotRecorded = errors.New("decision not recorded")

// AuditQuery filters the audit view.
type AuditQuery struct {
	Request, Tool, Principal string
	// Tree adds the events of Request's sub-requests (hand-offs,
	// delegations, A2A tasks, and theirs); the rows are then the oldest
	// after the event with seq After, in seq order (a page: the next one
	// starts after the last row's seq).
	Tree  bool
	After int64
	// Before, if set, keeps a page (without Tree: a request's, or the
	// log's) to the events before the one with seq Before: the page of
	// older events after one that was full or ended short.
	Before int64
	// Owner, if set, keeps only the rows of its principal in its tenant:
	// the view of one who is not an operator.
	Owner *Actor
	// Tenant, if set, keeps only the rows of that tenant's principals:
	// the view of that tenant's operator.
	Tenant string
}

// Actor is who makes an HTTP request: a principal, and its tenant ("" for
// none).
type Actor struct{ Principal, Tenant string }

// AuditRow is one audit event.
type AuditRow struct {
	Seq                                               int64
	Time                                              time.Time
	Request, Principal, Frame, Name, Decision, Reason string
	// Removed: the store's retention removed the request (its events
	// stay); the row names it without a link to a page it no longer has.
	Removed bool
}

// Audit is the audit log the audit view searches and verifies.
type Audit interface {
	// Search returns the rows q selects, at most limit; for a page that
	// ended short of limit having read as much as one page may, or a
	// request's full page (without Tree) whose request has older events,
	// stop is the seq the next page starts after (a tree's) or before (a
	// request's), 0 otherwise.
	Search(ctx context.Context, q AuditQuery, limit int) (rows []AuditRow, stop int64, err error)
	Verify(ctx context.Context) (ok bool, message string)
}

// Options configure the UI. Runtime is required.
type Options struct {
	Runtime   *reach.Runtime
	Stats     *telemetry.Stats // per-tool statistics; nil shows zeros
	Approvals Approvals        // nil: no inbox
	Audit     Audit            // nil: no audit view
	// DeadLetters is the queue of failed compensations (nil: no page).
	DeadLetters DeadLetters
	// Actor says who makes an HTTP request (who stops, whose audit rows
	// one who is not an operator sees); if nil, or its Principal is
	// empty, the principal "operator" of no tenant.
	Actor func(*http.Request) Actor
	// Visible reports whether the one who makes an HTTP request may see
	// and stop a request; if nil, every request is visible. Operator
	// reports whether they see the whole audit log (else only the rows of
	// the principal and tenant Actor names); if nil, everyone does.
	// OperatorOf, if set, returns the tenant whose operator makes an HTTP
	// request (and true): they see that tenant's rows of the audit log.
	Visible    func(*http.Request, *reach.Request) bool
	Operator   func(*http.Request) bool
	OperatorOf func(*http.Request) (string, bool)
	// Removed, if not nil, says why a request the runtime does not know
	// is gone, when the store's retention removed it (and the one who
	// asks may know it existed): its page answers 410 with that text.
	Removed func(r *http.Request, id string) (string, bool)
	// NotHere, if not nil, says where a request the runtime does not know
	// runs, when other instances on a shared store run it (and the one who
	// asks may see it): its page answers 404 with that text.
	NotHere func(r *http.Request, id string) (string, bool)
	// Tools returns the tools the one who makes an HTTP request may see
	// (those policies let them call, say); if nil, every tool of Runtime.
	Tools func(*http.Request) []reach.Tool
	// Also are requests of other runtimes the UI shows after Runtime's
	// (reach demo --serve shows the scenarios it ran), each visible as
	// Visible says; nil for none.
	Also func() []*reach.Request
	// Elsewhere returns, of the requests rs, those whose part here ended
	// that the shared store holds running on another instance, with those
	// instances' names (a read of the store, for the pages only); nil
	// without a shared store.
	Elsewhere func(ctx context.Context, rs []*reach.Request) map[string][]string
	// Shared returns what request q spent on every instance (the shared
	// store's ledger) and what is left of its budget within what is left
	// of the requests above it; ok false without a shared store, or when
	// the store cannot say (the request page then shows this instance's
	// part). Nil without a shared store.
	Shared func(ctx context.Context, q *reach.Request) (used reach.Usage, left reach.Budget, ok bool)
	// StopElsewhere stores the stop of request id, whose part here ended,
	// in the shared store, for the instances that still run it (r is the
	// form's request, for who may stop what); ended is true, and nothing
	// stored, when the request ended there too (or its client ended it);
	// err is ErrNotYours (or wraps it) when r's principal may not stop it.
	// Nil without a shared store.
	StopElsewhere func(r *http.Request, id string, mode reach.StopMode, by, reason string) (ended bool, err error)
	// Login, if set, makes the UI sign people in itself (see [Login]);
	// the gateway sets it when it authenticates its callers, and then
	// sends /ui/ to the UI without its own authentication.
	Login  *Login
	Logger *slog.Logger
}

// UI serves the web UI. Mount it at /ui/.
type UI struct {
	o        Options
	mux      *http.ServeMux
	pages    func() map[string]*template.Template // parsed on the first page shown
	log      *slog.Logger
	sessions sessions
	csrf     string // the form token when no one signs in

	streamsMu sync.Mutex
	streams   map[Actor]int // live streams open (/ui/live), by who opened them
}

// maxLive bounds the live streams (GET /ui/live) one principal, in its
// tenant, keeps open at once. Each reads every request and approval the UI
// knows of twice a second, to see whether its page changed: 200 streams of
// one principal took a quarter of a core with 11,000 requests kept, and
// nothing else bounded them. A browser over HTTP/1.1 opens at most six
// connections to one host, a tab one stream.
const maxLive = 16

// openLive counts a live stream of a, and reports false, counting
// nothing, when a has maxLive open.
func (u *UI) openLive(a Actor) bool {
	u.streamsMu.Lock()
	defer u.streamsMu.Unlock()
	if u.streams[a] >= maxLive {
		return false
	}
	if u.streams == nil {
		u.streams = map[Actor]int{}
	}
	u.streams[a]++
	return true
}

func (u *UI) closeLive(a Actor) {
	u.streamsMu.Lock()
	defer u.streamsMu.Unlock()
	if u.streams[a]--; u.streams[a] <= 0 {
		delete(u.streams, a)
	}
}

var _ http.Handler = (*UI)(nil)

// New returns the UI.
func New(o Options) *UI {
	u := &UI{o: o, mux: http.NewServeMux(), pages: sync.OnceValue(parsePages), log: o.Logger, csrf: randomToken()}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if o.Login != nil && (o.Login.Header == nil || o.Login.Credential == nil) {
		panic("ui: Login needs Header and Credential")
	}
	static, _ := fs.Sub(assets, "assets")
	u.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	u.mux.HandleFunc("GET /ui/{$}", u.requests)
	u.mux.HandleFunc("GET /ui/requests/{id...}", u.request)
	u.mux.HandleFunc("POST /ui/stop/{id...}", u.stop)
	u.mux.HandleFunc("GET /ui/approvals", u.approvals)
	u.mux.HandleFunc("POST /ui/approvals/{id}/{action}", u.decide)
	u.mux.HandleFunc("GET /ui/audit", u.audit)
	u.mux.HandleFunc("GET /ui/deadletters", u.deadLetters)
	u.mux.HandleFunc("POST /ui/deadletters/{id}/{action}", u.settleDeadLetter)
	u.mux.HandleFunc("GET /ui/tools", u.tools)
	u.mux.HandleFunc("GET /ui/live", u.live)
	u.mux.HandleFunc("POST /ui/logout", u.logout)
	return u
}

// parsePages parses the pages' templates: when the UI first shows one, not
// when the gateway starts (most gateways serve no page for a long while).
func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{"dict3": func(a approvalView, csrf, request string) decideView {
		return decideView{A: a, CSRF: csrf, Request: request}
	}, "seg": url.PathEscape}
	base := template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/pages.html"))
	pages := map[string]*template.Template{}
	for _, p := range []string{"requests", "request", "approvals", "audit", "tools", "deadletters", "stale", "missing", "login"} {
		t := template.Must(base.Clone())
		template.Must(t.New("main").Parse(`{{template "` + p + `" .}}`))
		pages[p] = t
	}
	return pages
}

// maxForm bounds the body of a form the UI reads.
const maxForm = 64 << 10

// ServeHTTP implements http.Handler. State-changing requests must come from
// the UI's own pages: same origin, and a form token of the page (of the
// session, with Login). No other site may frame a page (its Approve and
// Stop buttons would be one click away from a hidden frame): every answer,
// a refusal or a redirect too, says so (SetHeaders).
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetHeaders(w.Header())
	if r.Method == http.MethodPost && !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "cross_origin", "Cross-site form posts are refused.",
			"Use the reach UI itself, at /ui/ on the gateway's own address.")
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	}
	switch p := r.URL.Path; {
	case p == "/ui":
		http.Redirect(w, r, "/ui/", http.StatusFound)
		return
	case strings.HasPrefix(p, "/ui/static/"):
		u.mux.ServeHTTP(w, r)
		return
	case p == "/ui/login":
		u.login(w, r)
		return
	}
	if u.o.Login != nil {
		if r = u.signIn(w, r); r == nil {
			return
		}
	} else {
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, who{csrf: u.csrf}))
	}
	if r.Method == http.MethodPost {
		if want := whoFrom(r.Context()).csrf; want != "" && !sameToken(r.PostFormValue("csrf"), want) {
			u.log.Info("a UI form without its token was refused", "path", r.URL.Path, "remote", r.RemoteAddr)
			if strings.Contains(r.Header.Get("Accept"), "text/html") {
				// A page of the UI's own origin, loaded before a restart
				// (or a sign-in) gave its forms a new token: a page saying
				// so, and a link to the page again, not the JSON error.
				u.renderStatus(w, r, http.StatusForbidden, "stale", struct {
					page
					Back   string
					SignIn bool
				}{u.page(r, "Form not sent", "", ""), formBack(r.URL.Path), false})
				return
			}
			writeError(w, http.StatusForbidden, "bad_form_token", "The form's token is missing or stale.",
				"Reload the page and send the form again.")
			return
		}
	}
	u.mux.ServeHTTP(w, r)
}

// formBack is the page a form posted to path was on, to load again: a
// request's for its stop, the approvals or the dead letters for theirs,
// the requests list for another.
func formBack(path string) string {
	switch {
	case strings.HasPrefix(path, "/ui/stop/"):
		return requestPath(strings.TrimPrefix(path, "/ui/stop/"))
	case strings.HasPrefix(path, "/ui/approvals/"):
		return "/ui/approvals"
	case strings.HasPrefix(path, "/ui/deadletters/"):
		return "/ui/deadletters"
	}
	return "/ui/"
}

func writeError(w http.ResponseWriter, status int, code, msg, suggestion string) {
	httpjson.WriteError(w, status, code, msg, suggestion)
}

// CSP is the UI's Content-Security-Policy: its own scripts, styles and
// images only, and no framing by any page (frame-ancestors 'none').
const CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"

// SetHeaders sets the headers of every answer under /ui: the CSP,
// X-Frame-Options: DENY (for browsers without frame-ancestors), nosniff,
// and no referrer (a page's address names requests).
// The gateway sets them too on what it answers for /ui before the UI does
// (a 401, the redirect of /ui).
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin" || s == "none"
	}
	if o := r.Header.Get("Origin"); o != "" {
		ou, err := url.Parse(o)
		return err == nil && ou.Host == r.Host
	}
	return true // not a browser: authentication guards it
}

func (u *UI) actor(r *http.Request) Actor {
	if u.o.Actor != nil {
		if a := u.o.Actor(r); a.Principal != "" {
			return a
		}
	}
	return Actor{Principal: "operator"}
}

// page is what every page shows around its content: its title, the
// navigation, a banner, the form token and who is signed in.
type page struct {
	Title, Nav, Flash string
	CSRF, User        string
	SignedIn          bool
	Pending           int // approvals waiting, for the navigation
	// DeadLetters: the navigation links the dead letters page (there is a
	// queue, and the viewer is an operator, of a tenant or of all).
	DeadLetters bool
}

func (u *UI) page(r *http.Request, title, nav, flash string) page {
	wh := whoFrom(r.Context())
	p := page{Title: title, Nav: nav, Flash: flash, CSRF: wh.csrf, User: wh.principal, SignedIn: wh.signedIn}
	p.DeadLetters = u.o.DeadLetters != nil && u.anyOperator(r)
	if u.o.Approvals != nil {
		for _, a := range u.o.Approvals.List(r) {
			if a.Status == "pending" {
				p.Pending++
			}
		}
	}
	return p
}

// anyOperator reports whether r's sender is an operator, of a tenant or
// of all (everyone, when the UI is told of no operators).
func (u *UI) anyOperator(r *http.Request) bool {
	if u.o.OperatorOf != nil {
		if _, ok := u.o.OperatorOf(r); ok {
			return true
		}
	}
	return u.o.Operator == nil || u.o.Operator(r)
}

// Banners a page shows after a form posts and redirects to it
// (?flash=CODE): fixed texts, so that a link cannot put words in the UI's
// mouth. %s is what the message is about.
var (
	requestFlashes = map[string]string{
		"stopped":      "Your stop is recorded.",
		"not_stopped":  "Your stop changed nothing: the request had ended (completed), and its writes stay done. A stop of the request above a sub-request undoes the sub-request's work too.",
		"approved":     "Your approval is recorded.",
		"denied":       "Your denial is recorded.",
		"not_decided":  "Your decision was not recorded: it was decided or expired already, you approved it already, or it is not yours to decide.",
		"not_recorded": "Your decision was not recorded: the store did not take it in time. Look at the approval again in a moment, and decide it again if it still waits.",
	}
	approvalFlashes = map[string]string{
		"approved":     "Your approval of %s is recorded.",
		"denied":       "Your denial of %s is recorded.",
		"not_decided":  "Your decision on %s was not recorded: it was decided or expired already, you approved it already, or it is not yours to decide.",
		"not_recorded": "Your decision on %s was not recorded: the store did not take it in time. Look at it again in a moment, and decide it again if it still waits.",
	}
)

// flash returns the banner for the code in r's query, about subject, or
// "" for no or an unknown code.
func flash(r *http.Request, table map[string]string, subject string) string {
	f, ok := table[r.URL.Query().Get("flash")]
	if !ok {
		return ""
	}
	if strings.Contains(f, "%s") {
		return fmt.Sprintf(f, subject)
	}
	return f
}

func (u *UI) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	u.renderStatus(w, r, http.StatusOK, name, data)
}

func (u *UI) renderStatus(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	tmpl := "layout"
	if r.Header.Get("X-Reach-Fragment") != "" {
		tmpl = "main"
	}
	if err := u.pages()[name].ExecuteTemplate(&buf, tmpl, data); err != nil {
		u.log.Error("rendering the UI", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	buf.WriteTo(w)
}

// meter is a budget bar.
type meter struct {
	Used, Limit int64
	Pct         int
}

func newMeter(used, limit int64) meter {
	m := meter{Used: used, Limit: limit}
	if limit > 0 {
		m.Pct = int(min(100, used*100/limit))
	}
	return m
}

// The states the UI shows a request in (its live state, from its frames).
const (
	stateRunning  = "running"              // a call or model turn is in flight
	stateWaiting  = "waiting for approval" // a call waits for a human
	stateIdle     = "idle"                 // nothing in flight, not ended
	stateStopped  = "stopped"
	stateDone     = "done"
	classWaiting  = "waiting"
	filterAll     = ""
	requestsPage  = 50
	maxFoldParams = 200
)

var stateFilters = []string{stateRunning, stateWaiting, stateIdle, stateStopped, stateDone}

// apiStates are the states as the API spells them (GET /v1/requests?state=),
// which the list's filter takes too.
var apiStates = []string{telemetry.StateRunning, telemetry.StateWaiting, telemetry.StateIdle, telemetry.StateStopped, telemetry.StateDone}

// parseStateFilter reads the list's ?state=: a state as the page names it
// ("waiting for approval") or as the API does ("waiting_for_approval"),
// in any case, "waiting" for short, and "" or "all" for every state. A
// state it does not know is not ok (before, it showed every request, as
// if no filter were asked).
func parseStateFilter(s string) (string, bool) {
	s = strings.Join(strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(strings.ToLower(s))), " ")
	switch s {
	case "", "all":
		return filterAll, true
	case classWaiting:
		return stateWaiting, true
	}
	if slices.Contains(stateFilters, s) {
		return s, true
	}
	return "", false
}

type requestView struct {
	ID, Parent, State, Class, Mode, Principal, Agent, Scene string
	Raw                                                     string // the runtime's state
	Started                                                 when
	Duration, Cost, CostLimit                               string
	ToolCalls, Turns, Tokens                                meter
	Refusals, Failures, InFlight, Waiting, Held, Frames     int
	MaxDepth, DepthLimit                                    int
	Cause                                                   *reach.Cause
	Stopped                                                 when   // when Cause was decided
	Approval                                                string // a pending approval of it, if any
	On                                                      string // the instances it runs on, when its part here ended and theirs runs on
	// Shared: the meters are the shared store's, every instance's spend
	// of what the request may spend in all (sharedMeters).
	Shared bool
	// AuditLost counts the events of its calls the audit log lost
	// (Request.AuditLost): those calls are shown from memory.
	AuditLost int64
}

// sharedMeters shows in v what q spent on every instance (used), of what
// it may spend in all: in each limited dimension, its budget, or what it
// spent and what is left (left: of its own, and of the requests above
// it) if fewer. A hand-off begun on this instance was carved from this
// instance's view of its caller's spend, which may not count another
// instance's calls.
func (v *requestView) sharedMeters(q *reach.Request, used reach.Usage, left reach.Budget) {
	b := q.Budget()
	all := func(limit, used, left int64) int64 {
		if limit <= 0 {
			return 0
		}
		return min(limit, used+left)
	}
	v.ToolCalls = newMeter(int64(used.ToolCalls), all(int64(b.ToolCalls), int64(used.ToolCalls), int64(left.ToolCalls)))
	v.Turns = newMeter(int64(used.Turns), all(int64(b.Turns), int64(used.Turns), int64(left.Turns)))
	v.Tokens = newMeter(used.Tokens, all(b.Tokens, used.Tokens, left.Tokens))
	v.Cost = money(used.Cost)
	if b.Cost > 0 {
		v.CostLimit = money(min(b.Cost, used.Cost+left.Cost))
		v.Cost = cmp.Or(v.Cost, "$0")
	}
	v.Shared = true
}

// runsOn shows v running on the instances names, as the shared store
// says, though its part here ended.
func (v *requestView) runsOn(names []string) {
	if names == nil {
		return
	}
	v.State, v.Class, v.On = stateRunning, telemetry.StateRunning, strings.Join(names, ", ")
}

// elsewhere is Options.Elsewhere, nil without it.
func (u *UI) elsewhere(ctx context.Context, rs ...*reach.Request) map[string][]string {
	if u.o.Elsewhere == nil {
		return nil
	}
	return u.o.Elsewhere(ctx, rs)
}

// viewRequest summarizes q and its sub-requests at now.
func viewRequest(q *reach.Request, now time.Time) requestView {
	us, b := q.Usage(), q.Budget()
	v := requestView{ID: q.ID(), Raw: string(q.State()), Principal: q.Principal(), Agent: q.Agent(), Scene: q.Scene(),
		Started:   newWhen(q.Started(), now),
		ToolCalls: newMeter(int64(us.ToolCalls), int64(b.ToolCalls)), Turns: newMeter(int64(us.Turns), int64(b.Turns)),
		Tokens: newMeter(us.Tokens, b.Tokens), MaxDepth: us.MaxDepth, DepthLimit: b.Depth, Cause: q.StopCause(),
		Cost: money(us.Cost), AuditLost: q.AuditLost()}
	if v.Cause != nil {
		v.Stopped = newWhen(v.Cause.At, now)
	}
	if b.Cost > 0 {
		v.CostLimit = money(b.Cost)
		if v.Cost == "" {
			v.Cost = "$0"
		}
	}
	if p := q.Parent(); p != nil {
		v.Parent = p.ID()
	}
	a := telemetry.RequestActivity(q, now)
	v.Frames, v.Refusals, v.Failures, v.InFlight, v.Waiting, v.Held = a.Frames, a.Refused, a.Failed, a.InFlight, a.Waiting, a.Held
	v.Mode, v.Class = a.Mode, a.State
	switch a.State {
	case telemetry.StateWaiting:
		v.State, v.Class = stateWaiting, classWaiting
	case telemetry.StateRunning:
		v.State = stateRunning
	case telemetry.StateIdle:
		v.State = stateIdle
	case telemetry.StateStopped:
		v.State = stateStopped
	default:
		v.State = stateDone
	}
	last := a.Last
	v.Duration = span(last.Sub(q.Started()))
	if b.Wall > 0 {
		v.Duration = cmp.Or(v.Duration, "0 s") // a request that made no call: none of its wall used
		v.Duration += " of " + span(b.Wall)
	}
	return v
}

// Live reports whether a request may still be stopped: not stopped, not
// ended (here, or, running on another instance, there: the stop is
// stored and reaches it).
func (v requestView) Live() bool {
	return v.State != stateStopped && v.State != stateDone
}

// all returns the requests the UI shows: Runtime's, newest first, then
// Options.Also's.
func (u *UI) all() []*reach.Request {
	rs := u.o.Runtime.Requests()
	if u.o.Also != nil {
		rs = append(rs, u.o.Also()...)
	}
	return rs
}

// find looks a request up in Runtime, then in Options.Also.
func (u *UI) find(id string) (*reach.Request, bool) {
	if q, ok := u.o.Runtime.Lookup(id); ok {
		return q, true
	}
	if u.o.Also != nil {
		for _, q := range u.o.Also() {
			if q.ID() == id {
				return q, true
			}
		}
	}
	return nil, false
}

// visible reports whether r may see and stop q.
func (u *UI) visible(r *http.Request, q *reach.Request) bool {
	return u.o.Visible == nil || u.o.Visible(r, q)
}

// lookup finds the request id that r may see, or answers 404.
func (u *UI) lookup(w http.ResponseWriter, r *http.Request, id string) (*reach.Request, bool) {
	q, ok := u.find(id)
	if !ok && u.o.Removed != nil {
		if msg, gone := u.o.Removed(r, id); gone {
			u.missing(w, r, http.StatusGone, msg)
			return nil, false
		}
	}
	if !ok && u.o.NotHere != nil {
		if msg, there := u.o.NotHere(r, id); there {
			u.missing(w, r, http.StatusNotFound, msg)
			return nil, false
		}
	}
	if !ok || !u.visible(r, q) {
		u.missing(w, r, http.StatusNotFound, fmt.Sprintf("no request %q of yours (it may have ended and been forgotten)", id))
		return nil, false
	}
	return q, true
}

// missing answers status with msg: to a browser, a page of the UI with
// its navigation, saying so (before, the text alone, with no way on);
// to another client (a graph's SVG, a script), the text.
func (u *UI) missing(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Error(w, msg, status)
		return
	}
	u.renderStatus(w, r, status, "missing", struct {
		page
		Msg string
	}{u.page(r, "Not found", "requests", ""), msg})
}

// pendingByRequest maps a request (and its root) to the first approval
// pending for it that r may decide.
func (u *UI) pendingByRequest(r *http.Request) map[string]string {
	m := map[string]string{}
	if u.o.Approvals == nil {
		return m
	}
	for _, a := range u.o.Approvals.List(r) {
		if a.Status == "pending" && m[a.Request] == "" {
			m[a.Request] = a.ID
		}
	}
	return m
}

type requestFilter struct {
	State, Principal, Q string
	Page                int
}

func (f requestFilter) query(page int) string {
	v := url.Values{}
	if f.State != "" {
		v.Set("state", f.State)
	}
	if f.Principal != "" {
		v.Set("principal", f.Principal)
	}
	if f.Q != "" {
		v.Set("q", f.Q)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return "/ui/"
	}
	return "/ui/?" + v.Encode()
}

func (u *UI) requests(w http.ResponseWriter, r *http.Request) {
	f := requestFilter{Principal: strings.TrimSpace(r.FormValue("principal")), Q: strings.TrimSpace(r.FormValue("q"))}
	badState := ""
	if st, ok := parseStateFilter(r.FormValue("state")); ok {
		f.State = st
	} else {
		badState = r.FormValue("state")
	}
	f.Page, _ = strconv.Atoi(r.FormValue("page"))
	f.Page = max(f.Page, 1)
	now := time.Now()
	pending := u.pendingByRequest(r)
	counts := map[string]int{}
	var vs []requestView
	total := 0
	var shown []*reach.Request
	anySeen := false
	for _, q := range u.all() {
		if !u.visible(r, q) {
			continue
		}
		anySeen = true
		if f.Principal != "" && q.Principal() != f.Principal {
			continue
		}
		if f.Q != "" && !strings.Contains(strings.ToLower(q.ID()+" "+q.Agent()+" "+q.Scene()), strings.ToLower(f.Q)) {
			continue
		}
		shown = append(shown, q)
	}
	on := u.elsewhere(r.Context(), shown...)
	for _, q := range shown {
		v := viewRequest(q, now)
		v.runsOn(on[q.ID()])
		v.Approval = pending[v.ID]
		if v.State == stateWaiting && v.Approval == "" && v.Held == 0 && u.o.Approvals != nil {
			// Its calls were answered "pending", and no approval of it
			// waits any more (decided, expired): nothing waits.
			v.State, v.Class = stateIdle, "idle"
		}
		counts[v.State]++
		total++
		if badState != "" || f.State != filterAll && v.State != f.State {
			continue
		}
		vs = append(vs, v)
	}
	matched := len(vs)
	from := min((f.Page-1)*requestsPage, matched)
	to := min(from+requestsPage, matched)
	type stateCount struct {
		State, Class string
		N            int
		Here         bool
		Link         string
	}
	var states []stateCount
	all := f
	all.State, all.Page = filterAll, 0
	states = append(states, stateCount{State: "all", N: total, Here: f.State == filterAll, Link: all.query(1)})
	for _, s := range stateFilters {
		g := f
		g.State = s
		states = append(states, stateCount{State: s, Class: strings.Fields(s)[0], N: counts[s], Here: f.State == s, Link: g.query(1)})
	}
	data := struct {
		page
		Requests       []requestView
		F              requestFilter
		States         []stateCount
		From, To, Of   int
		Newer, Older   string
		FilterStates   []string
		AnyRequestSeen bool
		BadState       string
		APIStates      []string
	}{page: u.page(r, "Requests", "requests", ""), Requests: vs[from:to], F: f, States: states,
		From: from + 1, To: to, Of: matched, FilterStates: stateFilters, AnyRequestSeen: anySeen,
		BadState: badState, APIStates: apiStates}
	if f.Page > 1 {
		data.Newer = f.query(f.Page - 1)
	}
	if to < matched {
		data.Older = f.query(f.Page + 1)
	}
	if badState != "" {
		u.renderStatus(w, r, http.StatusBadRequest, "requests", data)
		return
	}
	u.render(w, r, "requests", data)
}

type frameView struct {
	ID, Kind, Name, Args, Status, Error, Summary, Why, Offset, Latency string
	// Next is the refusal's or failure's suggestion: what the agent was
	// told to do next, which the user reads beside why.
	Next          string
	Tokens, Depth int64
	Started       when
}

func (u *UI) request(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" { // /ui/requests, a guess from the Requests link: no id is empty
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	if strings.HasSuffix(id, "/graph.svg") {
		u.graphSVG(w, r, strings.TrimSuffix(id, "/graph.svg"))
		return
	}
	q, ok := u.lookup(w, r, id)
	if !ok {
		return
	}
	now := time.Now()
	all := render.Frames(q)
	frames := make([]frameView, 0, len(all))
	for i := range all {
		f := &all[i]
		fv := frameView{ID: f.ID.String(), Kind: f.Kind, Name: f.Name, Args: clip(f.ArgumentsText(), 300), Status: f.Status, Error: f.ErrorText(),
			Summary: clip(f.Summary, 200), Why: clip(f.Why, 200), Tokens: f.Tokens, Started: newWhen(f.Started, now),
			Offset: "+" + cmp.Or(span(f.Started.Sub(q.Started())), "0 ms")}
		if l := f.Latency(); l > 0 {
			fv.Latency = span(l)
		}
		if f.Error != nil {
			fv.Next = f.Error.Suggestion
		}
		frames = append(frames, fv)
	}
	v := viewRequest(q, now)
	v.runsOn(u.elsewhere(r.Context(), q)[q.ID()])
	if u.o.Shared != nil {
		if used, left, ok := u.o.Shared(r.Context(), q); ok {
			v.sharedMeters(q, used, left)
		}
	}
	// The approvals of this request and its sub-requests that the viewer
	// may decide, pending first.
	var aps []approvalView
	if u.o.Approvals != nil {
		ids := map[string]bool{}
		var collect func(*reach.Request)
		collect = func(q *reach.Request) {
			ids[q.ID()] = true
			for _, c := range q.Children() {
				collect(c)
			}
		}
		collect(q)
		for _, a := range u.o.Approvals.List(r) {
			if ids[a.Request] && a.Status == "pending" {
				aps = append(aps, viewApproval(a, now))
			}
		}
	}
	// The requests in which its writes were undone (a compensation runs
	// its undos in a request of its own, "<request>/compensate/<n>"), and,
	// of a compensation's, the request whose writes it undid: each page
	// links the other, since neither is the other's sub-request.
	type linked struct{ ID, State, Class string }
	var undone []linked
	for _, c := range u.all() {
		if strings.HasPrefix(c.ID(), q.ID()+"/compensate/") && u.visible(r, c) {
			cv := viewRequest(c, now)
			undone = append(undone, linked{c.ID(), cv.State, cv.Class})
		}
	}
	undoes := ""
	if i := strings.LastIndex(q.ID(), "/compensate/"); i > 0 {
		undoes = q.ID()[:i]
	}
	folded := foldParam(r)
	g := u.graphOf(q, folded, id)
	u.render(w, r, "request", struct {
		page
		R         requestView
		SVG       template.HTML
		Frames    []frameView
		Approvals []approvalView
		Modes     []struct{ Mode, Label string }
		Folded    int
		Unfold    string
		Undone    []linked
		Undoes    string
	}{u.page(r, "Request "+id, "requests", flash(r, requestFlashes, id)), v,
		template.HTML(g), // rendered by our own escaping renderer
		frames, aps,
		[]struct{ Mode, Label string }{{"soft", "Soft stop"}, {"cancel", "Cancel"}, {"isolate", "Isolate"}},
		len(folded), requestPath(id) + "#graph", undone, undoes})
}

// foldParam reads the frames a viewer folded (?fold=ID,ID).
func foldParam(r *http.Request) map[reach.FrameID]bool {
	m := map[reach.FrameID]bool{}
	for _, id := range strings.Split(r.URL.Query().Get("fold"), ",") {
		if f, err := reach.ParseFrameID(strings.TrimSpace(id)); err == nil && f != 0 && len(m) < maxFoldParams {
			m[f] = true
		}
	}
	return m
}

// requestPath is the path of request id's page. An id is the client's,
// any printable text, and is written as one path segment (the template
// func seg, for the pages' links and forms): as it is, its '?', '#', '/'
// and dot segments would be the browser's to read, and the Stop buttons of
// a request named r1?x would stop r1 (and, where the path is not cleaned
// before the UI, of one named x/../../approvals/ID/approve post to that
// approval's Approve, with the viewer's form token).
func requestPath(id string) string { return "/ui/requests/" + url.PathEscape(id) }

// graphOf draws q's graph with the folded frames folded, each box a link
// that folds or unfolds it.
func (u *UI) graphOf(q *reach.Request, folded map[reach.FrameID]bool, id string) []byte {
	nodes := render.Fold(render.Frames(q), folded)
	link := func(frame reach.FrameID) string {
		next := maps.Clone(folded)
		if next[frame] {
			delete(next, frame)
		} else {
			next[frame] = true
		}
		var ids []string
		for f := range next {
			ids = append(ids, f.String())
		}
		slices.Sort(ids)
		if len(ids) == 0 {
			return requestPath(id) + "#graph"
		}
		return requestPath(id) + "?fold=" + url.QueryEscape(strings.Join(ids, ",")) + "#graph"
	}
	return render.SVGWith(nodes, &render.SVGOptions{Link: link, Caption: render.Caption(q)})
}

func (u *UI) graphSVG(w http.ResponseWriter, r *http.Request, id string) {
	q, ok := u.lookup(w, r, id)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(render.SVGWith(render.Fold(render.Frames(q), foldParam(r)), &render.SVGOptions{Caption: render.Caption(q)}))
}

func (u *UI) stop(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q, ok := u.lookup(w, r, id)
	if !ok {
		return
	}
	mode, err := reach.ParseStopMode(r.FormValue("mode"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reason := strings.TrimSpace(r.FormValue("reason"))
	if reason == "" {
		reason = "stopped from the UI"
	}
	by := u.actor(r).Principal
	q.Stop(mode, by, reason)
	if q.State() == reach.RequestCompleted {
		// Over here (Stop changes nothing on a request that ended): over
		// for good, or its part here ended while others run on.
		ended := true
		if u.o.StopElsewhere != nil {
			var err error
			ended, err = u.o.StopElsewhere(r, id, mode, by, reason)
			switch {
			case err != nil && !ended && errors.Is(err, ErrNotYours):
				// As the API answers (403 not_your_request): nothing more
				// of the request than that it is another principal's.
				writeError(w, http.StatusForbidden, "not_your_request", fmt.Sprintf("Request %s belongs to another principal.", id),
					"Only its principal, or an operator, may stop it.")
				return
			case err != nil && !ended:
				http.Error(w, fmt.Sprintf("Request %s could not be stopped: %v. Try again in a moment; it runs on until it is stopped.", id, err), http.StatusServiceUnavailable)
				return
			}
		}
		if ended {
			u.log.Info("a stop from the UI of a request that had ended changed nothing", "request", id, "by", by)
			http.Redirect(w, r, requestPath(id)+"?flash=not_stopped", http.StatusSeeOther)
			return
		}
	}
	u.log.Info("request stopped from the UI", "request", id, "mode", mode.String(), "by", by)
	http.Redirect(w, r, requestPath(id)+"?flash=stopped", http.StatusSeeOther)
}

// ErrNotYours is what Options.StopElsewhere returns when the caller may
// not stop the request (another principal's, and the caller no operator):
// the UI answers 403 not_your_request, as the API does.
var ErrNotYours = errors.New("the request belongs to another principal")

// decideView is what the Approve and Deny forms need: the approval, the
// form token, and the request page to come back to ("" for the inbox).
type decideView struct {
	A             approvalView
	CSRF, Request string
}

type voteView struct {
	By, As, Reason string
	At             when
}

type approvalView struct {
	Approval
	CreatedW, ExpiresW when
	VotesW             []voteView
	DenialW            *voteView
	Pending            bool
}

func viewApproval(a Approval, now time.Time) approvalView {
	v := approvalView{Approval: a, CreatedW: newWhen(a.Created, now), ExpiresW: newWhen(a.Expires, now), Pending: a.Status == "pending"}
	for _, x := range a.Votes {
		v.VotesW = append(v.VotesW, voteView{By: x.By, As: x.As, Reason: x.Reason, At: newWhen(x.At, now)})
	}
	if d := a.Denial; d != nil {
		v.DenialW = &voteView{By: d.By, As: d.As, Reason: d.Reason, At: newWhen(d.At, now)}
	}
	return v
}

func (u *UI) approvals(w http.ResponseWriter, r *http.Request) {
	var list []Approval
	if u.o.Approvals != nil {
		list = u.o.Approvals.List(r)
	}
	// The banner names the approval only if it is one the viewer sees.
	subject, id := "the approval", r.URL.Query().Get("id")
	if slices.ContainsFunc(list, func(a Approval) bool { return a.ID == id }) {
		subject = id
	}
	now := time.Now()
	var pending, decided []approvalView
	for _, a := range list {
		if a.Status == "pending" {
			pending = append(pending, viewApproval(a, now))
		} else {
			decided = append(decided, viewApproval(a, now))
		}
	}
	// Pending: the one that expires first, first; decided: newest first.
	slices.SortStableFunc(pending, func(a, b approvalView) int { return a.Expires.Compare(b.Expires) })
	slices.SortStableFunc(decided, func(a, b approvalView) int { return b.Created.Compare(a.Created) })
	if len(decided) > 50 {
		decided = decided[:50]
	}
	// Waiting, not Pending: a field of that name here would hide the
	// page's count of them, which the navigation shows.
	u.render(w, r, "approvals", struct {
		page
		Enabled          bool
		Waiting, Decided []approvalView
	}{u.page(r, "Approvals", "approvals", flash(r, approvalFlashes, subject)), u.o.Approvals != nil, pending, decided})
}

func (u *UI) decide(w http.ResponseWriter, r *http.Request) {
	if u.o.Approvals == nil {
		http.Error(w, "no approval queue is configured", http.StatusNotFound)
		return
	}
	id, action, reason := r.PathValue("id"), r.PathValue("action"), r.FormValue("reason")
	var err error
	var code string
	switch action {
	case "approve":
		err, code = u.o.Approvals.Approve(r, id, reason), "approved"
	case "deny":
		err, code = u.o.Approvals.Deny(r, id, reason), "denied"
	default:
		http.Error(w, "action must be approve or deny", http.StatusBadRequest)
		return
	}
	if err != nil {
		code = "not_decided"
		if errors.Is(err, ErrNotRecorded) {
			code = "not_recorded"
		}
		u.log.Info("a decision from the UI was not recorded", "approval", id, "action", action, "by", u.actor(r).Principal, "err", err)
	}
	// From a request's page, back to it (if the viewer may see it).
	if back := r.FormValue("request"); back != "" {
		if q, ok := u.find(back); ok && u.visible(r, q) {
			http.Redirect(w, r, requestPath(back)+"?flash="+code, http.StatusSeeOther)
			return
		}
	}
	http.Redirect(w, r, "/ui/approvals?flash="+code+"&id="+url.QueryEscape(id), http.StatusSeeOther)
}

type auditView struct {
	AuditRow
	At when
}

func (u *UI) audit(w http.ResponseWriter, r *http.Request) {
	q := AuditQuery{Request: r.FormValue("request"), Tool: r.FormValue("tool"), Principal: r.FormValue("principal")}
	q.Tree = q.Request != "" && r.FormValue("tree") == "1"
	if n, err := strconv.ParseInt(r.FormValue("after"), 10, 64); err == nil && n > 0 && q.Tree {
		q.After = n
	}
	if u.o.OperatorOf != nil {
		q.Tenant, _ = u.o.OperatorOf(r) // a tenant's operator: its tenant's rows
	}
	if q.Tenant == "" && u.o.Operator != nil && !u.o.Operator(r) {
		a := u.actor(r) // only one's own rows, of one's own tenant
		q.Principal, q.Owner = a.Principal, &a
	}
	if n, err := strconv.ParseInt(r.FormValue("before"), 10, 64); err == nil && n > 0 && !q.Tree {
		q.Before = n
	}
	data := struct {
		page
		Enabled, Verified bool
		VerifyMsg         string
		Q                 AuditQuery
		Rows              []auditView
		// Next is the link to the tree's next page, or to a request's
		// older events ("" for none).
		Next string
	}{page: u.page(r, "Audit", "audit", ""), Enabled: u.o.Audit != nil, Q: q}
	if u.o.Audit != nil {
		data.Verified, data.VerifyMsg = u.o.Audit.Verify(r.Context())
		const pageRows = 500
		fetch := pageRows
		if q.Tree {
			fetch++ // one more says there is a next page
		}
		rows, stop, err := u.o.Audit.Search(r.Context(), q, fetch)
		if err != nil {
			data.VerifyMsg += "; search failed: " + err.Error()
		}
		if q.Tree && len(rows) > pageRows {
			rows = rows[:pageRows]
			stop = rows[pageRows-1].Seq
		}
		if stop > 0 {
			next := url.Values{"request": {q.Request}, "tree": {"1"}, "after": {strconv.FormatInt(stop, 10)}}
			if !q.Tree {
				next = url.Values{"before": {strconv.FormatInt(stop, 10)}}
				if q.Request != "" {
					next.Set("request", q.Request)
				}
			}
			if r.FormValue("tool") != "" {
				next.Set("tool", r.FormValue("tool"))
			}
			if r.FormValue("principal") != "" {
				next.Set("principal", r.FormValue("principal"))
			}
			data.Next = "/ui/audit?" + next.Encode()
		}
		now := time.Now()
		for _, row := range rows {
			data.Rows = append(data.Rows, auditView{AuditRow: row, At: newWhen(row.Time, now)})
		}
	}
	u.render(w, r, "audit", data)
}

type toolView struct {
	// Calls, Success, P50, P95, Failures and Refusals are empty for one
	// who may see no figures (UI.figures).
	Name, Description, Access, Reentrancy, Calls, Success, P50, P95, Failures, Refusals string
	// Breaker is the state of the tool's circuit breaker, or of its
	// upstream's when that one is not closed; BreakerWhy says since when
	// and until when, and Down that it is not closed.
	Breaker, BreakerWhy string
	Down                bool
}

// breakerView is how the tools page shows a breaker that is not closed;
// its last error (what one tenant's call said, whether the breaker is a
// tool's or an upstream's) only to a global operator (all) or the
// principal whose call it was, in its tenant (who), as /healthz does.
func breakerView(v *toolView, s reach.BreakerStatus, all bool, who *auth.Identity) {
	v.Breaker, v.Down = strings.ReplaceAll(s.State.String(), "_", "-"), true
	if s.Kind == reach.BreakerUpstream {
		v.Breaker += " (upstream " + s.Name + ")"
	}
	v.BreakerWhy = "since " + s.Since.UTC().Format(time.RFC3339)
	if !s.RetryAt.IsZero() {
		v.BreakerWhy += ", probed at " + s.RetryAt.UTC().Format(time.RFC3339)
	}
	if s.LastError != "" && (all || who != nil && reach.BreakerErrorFor(s, who.Principal, who.Tenant)) {
		v.BreakerWhy += ": " + clip(s.LastError, 160)
	}
}

func (u *UI) tools(w http.ResponseWriter, r *http.Request) {
	stats := map[string]telemetry.ToolStats{}
	figures, scope := u.figures(r)
	for _, s := range figures {
		stats[s.Tool] = s
	}
	global := u.o.Operator == nil || u.o.Operator(r)
	who, _ := auth.IdentityFrom(r.Context())
	var tools []reach.Tool
	if u.o.Tools != nil {
		tools = u.o.Tools(r)
	} else {
		tools = u.o.Runtime.Tools()
	}
	breakers := map[string]reach.BreakerStatus{}
	for _, b := range u.o.Runtime.Breakers() {
		breakers[b.Kind+":"+b.Name] = b
	}
	var vs []toolView
	for _, t := range tools {
		s := stats[t.Name]
		v := toolView{Name: t.Name, Description: clip(t.Description, 100), Access: string(t.Access), Reentrancy: string(t.Reentrancy),
			Failures: counts(s.Failures), Refusals: counts(s.RefusedBy), Breaker: "closed"}
		if figures != nil {
			v.Calls = strconv.FormatInt(s.Calls, 10)
		}
		if b, ok := breakers[reach.BreakerUpstream+":"+t.Upstream]; ok && t.Upstream != "" && b.State != reach.BreakerClosed {
			breakerView(&v, b, global, who)
		} else if b, ok := breakers[reach.BreakerTool+":"+t.Name]; ok && b.State != reach.BreakerClosed {
			breakerView(&v, b, global, who)
		}
		if s.Completed+s.Failed > 0 {
			v.Success = fmt.Sprintf("%.0f%%", s.SuccessRate*100)
			v.P50, v.P95 = span(s.P50), span(s.P95)
		}
		vs = append(vs, v)
	}
	u.render(w, r, "tools", struct {
		page
		Tools []toolView
		Scope string
	}{u.page(r, "Tools", "tools", ""), vs, scope})
}

// figures returns the per-tool figures the one who makes r may see, and
// says whose calls they count: a global operator every tenant's, a
// tenant's operator its tenant's, anyone else none (they count other
// principals' calls, as GET /v1/stats does).
func (u *UI) figures(r *http.Request) ([]telemetry.ToolStats, string) {
	if u.o.Stats == nil {
		return nil, ""
	}
	if u.o.OperatorOf != nil {
		if t, ok := u.o.OperatorOf(r); ok {
			out, since := u.o.Stats.TenantSnapshot(t)
			return out, "The figures count the calls of tenant " + t + "'s requests since " + since.UTC().Format(time.RFC3339) + "."
		}
	}
	if u.o.Operator == nil || u.o.Operator(r) {
		return u.o.Stats.Snapshot(), "The figures count every tenant's calls since " + u.o.Stats.Since().UTC().Format(time.RFC3339) + "."
	}
	return nil, "Calls, success and latencies are for operators: they count other principals' calls."
}

func counts(m map[string]int64) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// live streams an event whenever the requests change (server-sent events),
// until the client goes or what signed it in no longer holds (a logout, the
// session's end, its key revoked: stillSignedIn).
func (u *UI) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	a := u.actor(r)
	if !u.openLive(a) {
		writeError(w, http.StatusTooManyRequests, "too_many_streams",
			fmt.Sprintf("%s has %d live updates of the UI open, the most one principal may have at once.", a.Principal, maxLive),
			"Close the UI's tabs and windows you no longer use; this page still shows what it showed, and a reload brings it up to date.")
		return
	}
	defer u.closeLive(a)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	last, on := "", ""
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		if i%elsewhereEvery == 0 {
			// A request whose part here ended may run on, or again, on
			// another instance: nothing here changes then, and the page
			// showed it done until a reload.
			on = u.elsewhereVersion(r)
		}
		if v := u.version(r) + on; v != last {
			last = v
			fmt.Fprintf(w, "data: %s\n\n", v)
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		if !stillSignedIn(r) {
			// Signed out, its session expired, its key revoked: the stream
			// ends (the browser's reconnection is refused 401), or it would
			// go on telling when the principal's requests change.
			return
		}
	}
}

// elsewhereEvery is how many ticks of a live stream (500 ms) go between
// its reads of where the requests ended here run on (a read of the shared
// store, Options.Elsewhere): every 2 s.
const elsewhereEvery = 4

// elsewhereVersion summarizes, of the requests r sees, those the shared
// store holds running on other instances and where, or "" without
// Options.Elsewhere.
func (u *UI) elsewhereVersion(r *http.Request) string {
	if u.o.Elsewhere == nil {
		return ""
	}
	var rs []*reach.Request
	for _, q := range u.all() {
		if u.visible(r, q) && q.State() == reach.RequestCompleted {
			rs = append(rs, q)
		}
	}
	if len(rs) == 0 {
		return ""
	}
	on := u.elsewhere(r.Context(), rs...)
	var b strings.Builder
	for _, q := range rs {
		if names := on[q.ID()]; len(names) > 0 {
			fmt.Fprintf(&b, "%s@%s;", q.ID(), strings.Join(names, ","))
		}
	}
	return fmt.Sprintf(":%x", hash(b.String()))
}

// version summarizes what the pages show to r, to notice changes.
func (u *UI) version(r *http.Request) string {
	var b strings.Builder
	for _, q := range u.all() {
		if !u.visible(r, q) {
			continue
		}
		us := q.Usage()
		fs, gone := q.KeptFrames() // the frames let go from memory ended: they change no more
		fmt.Fprintf(&b, "%s:%s:%d:%d:%d;", q.ID(), q.State(), gone.Frames+len(fs), us.ToolCalls, us.Tokens)
		for _, f := range fs {
			fmt.Fprintf(&b, "%d", f.State())
		}
	}
	if u.o.Approvals != nil {
		for _, a := range u.o.Approvals.List(r) {
			fmt.Fprintf(&b, "a%s%s;", a.ID, a.Status)
		}
	}
	return fmt.Sprintf("%x", hash(b.String()))
}

func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
