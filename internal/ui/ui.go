// Package ui is reach's web UI: server-rendered pages under /ui/ for the
// requests (live, with budget bars), one request (its call graph, timeline,
// budget and stop buttons), the approvals inbox, the audit log and per-tool
// statistics. It needs no JavaScript framework and no network: assets are
// embedded, and a small script swaps in fresh content when the server says
// something changed (server-sent events).
package ui

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/render"
	"github.com/agentreach/reach/internal/telemetry"
)

//go:embed assets
var assets embed.FS

// Approval is one entry of the approvals inbox.
type Approval struct {
	ID, Tool, Args, Impact, AskedBy, Request, Needs, Status string
	Expires                                                 time.Time
}

// Approvals is the approval queue the inbox shows and acts on. Each method
// is given the HTTP request it serves and acts as the one who makes it,
// with the roles and tenant they authenticated with.
type Approvals interface {
	List(r *http.Request) []Approval // the approvals r's sender may see and decide
	Approve(r *http.Request, id, reason string) error
	Deny(r *http.Request, id, reason string) error
}

// AuditQuery filters the audit view.
type AuditQuery struct {
	Request, Tool, Principal string
	// Owner, if set, keeps only the rows of its principal in its tenant:
	// the view of one who is not an operator.
	Owner *Actor
}

// Actor is who makes an HTTP request: a principal, and its tenant ("" for
// none).
type Actor struct{ Principal, Tenant string }

// AuditRow is one audit event.
type AuditRow struct {
	Seq                                               int64
	Time                                              time.Time
	Request, Principal, Frame, Name, Decision, Reason string
}

// Audit is the audit log the audit view searches and verifies.
type Audit interface {
	Search(ctx context.Context, q AuditQuery, limit int) ([]AuditRow, error)
	Verify(ctx context.Context) (ok bool, message string)
}

// Options configure the UI. Runtime is required.
type Options struct {
	Runtime   *reach.Runtime
	Stats     *telemetry.Stats // per-tool statistics; nil shows zeros
	Approvals Approvals        // nil: no inbox
	Audit     Audit            // nil: no audit view
	// Actor says who makes an HTTP request (who stops, whose audit rows
	// one who is not an operator sees); if nil, or its Principal is
	// empty, the principal "operator" of no tenant.
	Actor func(*http.Request) Actor
	// Visible reports whether the one who makes an HTTP request may see
	// and stop a request; if nil, every request is visible. Operator
	// reports whether they see the whole audit log (else only the rows of
	// the principal and tenant Actor names); if nil, everyone does.
	Visible  func(*http.Request, *reach.Request) bool
	Operator func(*http.Request) bool
	// Tools returns the tools the one who makes an HTTP request may see
	// (those policies let them call, say); if nil, every tool of Runtime.
	Tools  func(*http.Request) []reach.Tool
	Logger *slog.Logger
}

// UI serves the web UI. Mount it at /ui/.
type UI struct {
	o     Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	log   *slog.Logger
}

var _ http.Handler = (*UI)(nil)

// New returns the UI.
func New(o Options) *UI {
	u := &UI{o: o, mux: http.NewServeMux(), pages: map[string]*template.Template{}, log: o.Logger}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	funcs := template.FuncMap{}
	base := template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/pages.html"))
	for _, p := range []string{"requests", "request", "approvals", "audit", "tools"} {
		t := template.Must(base.Clone())
		template.Must(t.New("main").Parse(`{{template "` + p + `" .}}`))
		u.pages[p] = t
	}
	static, _ := fs.Sub(assets, "assets")
	u.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	u.mux.HandleFunc("GET /ui/{$}", u.requests)
	u.mux.HandleFunc("GET /ui/requests/{id...}", u.request)
	u.mux.HandleFunc("POST /ui/stop/{id...}", u.stop)
	u.mux.HandleFunc("GET /ui/approvals", u.approvals)
	u.mux.HandleFunc("POST /ui/approvals/{id}/{action}", u.decide)
	u.mux.HandleFunc("GET /ui/audit", u.audit)
	u.mux.HandleFunc("GET /ui/tools", u.tools)
	u.mux.HandleFunc("GET /ui/live", u.live)
	return u
}

// ServeHTTP implements http.Handler. State-changing requests must come from
// the UI's own pages (same origin). No other site may frame a page (its
// Approve and Stop buttons would be one click away from a hidden frame):
// every answer, a refusal or a redirect too, says so (SetHeaders).
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetHeaders(w.Header())
	if r.Method == http.MethodPost && !sameOrigin(r) {
		httpjson.WriteError(w, http.StatusForbidden, "cross_origin", "Cross-site form posts are refused.",
			"Use the reach UI itself, at /ui/ on the gateway's own address.")
		return
	}
	u.mux.ServeHTTP(w, r)
}

// CSP is the UI's Content-Security-Policy: its own scripts, styles and
// images only, and no framing by any page (frame-ancestors 'none').
const CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"

// SetHeaders sets the headers of every answer under /ui: the CSP,
// X-Frame-Options: DENY (for browsers without frame-ancestors) and nosniff.
// The gateway sets them too on what it answers for /ui before the UI does
// (a 401, the redirect of /ui).
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
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

type page struct {
	Title, Nav, Flash string
}

// Banners a page shows after a form posts and redirects to it
// (?flash=CODE): fixed texts, so that a link cannot put words in the UI's
// mouth. %s is what the message is about.
var (
	requestFlashes  = map[string]string{"stopped": "Your stop is recorded."}
	approvalFlashes = map[string]string{
		"approved":    "Your approval of %s is recorded.",
		"denied":      "Your denial of %s is recorded.",
		"not_decided": "Your decision on %s was not recorded: it was decided or expired already, you approved it already, or it is not yours to decide.",
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
	var buf bytes.Buffer
	tmpl := "layout"
	if r.Header.Get("X-Reach-Fragment") != "" {
		tmpl = "main"
	}
	if err := u.pages[name].ExecuteTemplate(&buf, tmpl, data); err != nil {
		u.log.Error("rendering the UI", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
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

type requestView struct {
	ID, Parent, State, Principal, Agent, Scene, Started, Wall string
	ToolCalls, Turns, Tokens                                  meter
	MaxDepth, DepthLimit                                      int
	Cause                                                     *reach.Cause
}

func viewRequest(r *reach.Request) requestView {
	u, b := r.Usage(), r.Budget()
	v := requestView{ID: r.ID(), State: string(r.State()), Principal: r.Principal(), Agent: r.Agent(), Scene: r.Scene(),
		Started: r.Started().Format("15:04:05.000"), Wall: u.Wall.Round(time.Millisecond).String(),
		ToolCalls: newMeter(int64(u.ToolCalls), int64(b.ToolCalls)), Turns: newMeter(int64(u.Turns), int64(b.Turns)),
		Tokens: newMeter(u.Tokens, b.Tokens), MaxDepth: u.MaxDepth, DepthLimit: b.Depth, Cause: r.StopCause()}
	if p := r.Parent(); p != nil {
		v.Parent = p.ID()
	}
	if b.Wall > 0 {
		v.Wall += " of " + b.Wall.String()
	}
	return v
}

// visible reports whether r may see and stop q.
func (u *UI) visible(r *http.Request, q *reach.Request) bool {
	return u.o.Visible == nil || u.o.Visible(r, q)
}

// lookup finds the request id that r may see, or answers 404.
func (u *UI) lookup(w http.ResponseWriter, r *http.Request, id string) (*reach.Request, bool) {
	q, ok := u.o.Runtime.Lookup(id)
	if !ok || !u.visible(r, q) {
		http.Error(w, fmt.Sprintf("no request %q of yours (it may have ended and been forgotten)", id), http.StatusNotFound)
		return nil, false
	}
	return q, true
}

func (u *UI) requests(w http.ResponseWriter, r *http.Request) {
	var vs []requestView
	for _, q := range u.o.Runtime.Requests() {
		if u.visible(r, q) {
			vs = append(vs, viewRequest(q))
		}
	}
	u.render(w, r, "requests", struct {
		page
		Requests []requestView
	}{page{Title: "Requests", Nav: "requests"}, vs})
}

type frameView struct {
	ID, Kind, Name, Args, Status, Error, Summary, Started, Latency string
	Tokens                                                         int64
}

func (u *UI) request(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if strings.HasSuffix(id, "/graph.svg") {
		u.graphSVG(w, r, strings.TrimSuffix(id, "/graph.svg"))
		return
	}
	q, ok := u.lookup(w, r, id)
	if !ok {
		return
	}
	all := render.Frames(q)
	frames := make([]frameView, 0, len(all))
	for i := range all {
		f := &all[i]
		fv := frameView{ID: f.ID.String(), Kind: f.Kind, Name: f.Name, Args: clip(f.ArgumentsText(), 160), Status: f.Status, Error: f.ErrorText(),
			Summary: clip(f.Summary, 120), Started: f.Started.Local().Format("15:04:05.000"), Tokens: f.Tokens}
		if l := f.Latency().Round(time.Microsecond * 100); l > 0 {
			fv.Latency = l.String()
		}
		frames = append(frames, fv)
	}
	st := q.State()
	running := st != reach.RequestStoppedIsolate && st != reach.RequestCompleted
	u.render(w, r, "request", struct {
		page
		R       requestView
		SVG     template.HTML
		Frames  []frameView
		Running bool
		Modes   []struct{ Mode, Label string }
	}{page{Title: "Request " + id, Nav: "requests", Flash: flash(r, requestFlashes, id)}, viewRequest(q),
		template.HTML(render.SVG(all)), // rendered by our own escaping renderer
		frames, running,
		[]struct{ Mode, Label string }{{"soft", "Soft stop"}, {"cancel", "Cancel"}, {"isolate", "Isolate"}}})
}

func (u *UI) graphSVG(w http.ResponseWriter, r *http.Request, id string) {
	q, ok := u.lookup(w, r, id)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(render.SVG(render.Frames(q)))
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
	u.log.Info("request stopped from the UI", "request", id, "mode", mode.String(), "by", by)
	http.Redirect(w, r, "/ui/requests/"+id+"?flash=stopped", http.StatusSeeOther)
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
	u.render(w, r, "approvals", struct {
		page
		Enabled   bool
		Approvals []Approval
	}{page{Title: "Approvals", Nav: "approvals", Flash: flash(r, approvalFlashes, subject)}, u.o.Approvals != nil, list})
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
		u.log.Info("a decision from the UI was not recorded", "approval", id, "action", action, "by", u.actor(r).Principal, "err", err)
	}
	http.Redirect(w, r, "/ui/approvals?flash="+code+"&id="+url.QueryEscape(id), http.StatusSeeOther)
}

func (u *UI) audit(w http.ResponseWriter, r *http.Request) {
	q := AuditQuery{Request: r.FormValue("request"), Tool: r.FormValue("tool"), Principal: r.FormValue("principal")}
	if u.o.Operator != nil && !u.o.Operator(r) {
		a := u.actor(r) // only one's own rows, of one's own tenant
		q.Principal, q.Owner = a.Principal, &a
	}
	data := struct {
		page
		Enabled, Verified bool
		VerifyMsg         string
		Q                 AuditQuery
		Rows              []AuditRow
	}{page: page{Title: "Audit", Nav: "audit"}, Enabled: u.o.Audit != nil, Q: q}
	if u.o.Audit != nil {
		data.Verified, data.VerifyMsg = u.o.Audit.Verify(r.Context())
		rows, err := u.o.Audit.Search(r.Context(), q, 500)
		if err != nil {
			data.VerifyMsg += "; search failed: " + err.Error()
		}
		data.Rows = rows
	}
	u.render(w, r, "audit", data)
}

type toolView struct {
	Name, Description, Access, Reentrancy, Success, P50, P95, Failures, Refusals string
	Calls                                                                        int64
	// Breaker is the state of the tool's circuit breaker, or of its
	// upstream's when that one is not closed; BreakerWhy says since when
	// and until when, and Down that it is not closed.
	Breaker, BreakerWhy string
	Down                bool
}

// breakerView is how the tools page shows a breaker that is not closed.
func breakerView(v *toolView, s reach.BreakerStatus) {
	v.Breaker, v.Down = strings.ReplaceAll(s.State.String(), "_", "-"), true
	if s.Kind == reach.BreakerUpstream {
		v.Breaker += " (upstream " + s.Name + ")"
	}
	v.BreakerWhy = "since " + s.Since.UTC().Format(time.RFC3339)
	if !s.RetryAt.IsZero() {
		v.BreakerWhy += ", probed at " + s.RetryAt.UTC().Format(time.RFC3339)
	}
	if s.LastError != "" {
		v.BreakerWhy += ": " + clip(s.LastError, 160)
	}
}

func (u *UI) tools(w http.ResponseWriter, r *http.Request) {
	stats := map[string]telemetry.ToolStats{}
	if u.o.Stats != nil {
		for _, s := range u.o.Stats.Snapshot() {
			stats[s.Tool] = s
		}
	}
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
			Calls: s.Calls, Failures: counts(s.Failures), Refusals: counts(s.RefusedBy), Breaker: "closed"}
		if b, ok := breakers[reach.BreakerUpstream+":"+t.Upstream]; ok && t.Upstream != "" && b.State != reach.BreakerClosed {
			breakerView(&v, b)
		} else if b, ok := breakers[reach.BreakerTool+":"+t.Name]; ok && b.State != reach.BreakerClosed {
			breakerView(&v, b)
		}
		if s.Completed+s.Failed > 0 {
			v.Success = fmt.Sprintf("%.0f%%", s.SuccessRate*100)
			v.P50, v.P95 = s.P50.Round(time.Microsecond*10).String(), s.P95.Round(time.Microsecond*10).String()
		}
		vs = append(vs, v)
	}
	u.render(w, r, "tools", struct {
		page
		Tools []toolView
	}{page{Title: "Tools", Nav: "tools"}, vs})
}

func counts(m map[string]int64) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	return strings.Join(sortStrings(parts), ", ")
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// live streams an event whenever the requests change (server-sent events).
func (u *UI) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	last := ""
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if v := u.version(r); v != last {
			last = v
			fmt.Fprintf(w, "data: %s\n\n", v)
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// version summarizes what the pages show to r, to notice changes.
func (u *UI) version(r *http.Request) string {
	var b strings.Builder
	for _, q := range u.o.Runtime.Requests() {
		if !u.visible(r, q) {
			continue
		}
		us := q.Usage()
		fmt.Fprintf(&b, "%s:%s:%d:%d:%d;", q.ID(), q.State(), len(q.Frames()), us.ToolCalls, us.Tokens)
	}
	if u.o.Approvals != nil {
		fmt.Fprintf(&b, "a%d", len(u.o.Approvals.List(r)))
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
