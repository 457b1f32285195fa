package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// holdApprover holds every call it is asked about until released, so a
// request waits for approval while the test looks.
type holdApprover struct{ release chan struct{} }

func (h holdApprover) Approve(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	select {
	case <-h.release:
		return reach.Permit, nil
	case <-ctx.Done():
		return reach.NeedsApproval, &reach.Error{Code: "approval_pending", Message: "still waiting"}
	}
}

// fiveStates makes one request in each state the list shows: running (a
// call in flight), idle, waiting for approval, stopped and done, and one
// refusal, in the idle one.
func fiveStates(t *testing.T) (*reach.Runtime, func()) {
	t.Helper()
	release, unblock := make(chan struct{}), make(chan struct{})
	rt := reach.New(&reach.Options{Approver: holdApprover{release}, Prices: map[string]reach.Price{"m": {Input: 1}}})
	rt.MustRegister(
		reach.Tool{Name: "slow", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			return json.RawMessage(`"ok"`), nil
		}},
		reach.Tool{Name: "refund", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"refunded"`), nil
		}},
		reach.Tool{Name: "quick", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"ok"`), nil
		}},
	)
	var wg sync.WaitGroup
	rctx, _, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r-running", Principal: "alice"})
	wg.Go(func() { rt.Call(rctx, &reach.Call{ID: "c", Tool: "slow", Arguments: json.RawMessage(`{}`)}) })
	wctx, _, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r-waiting", Principal: "bob"})
	wg.Go(func() { rt.Call(wctx, &reach.Call{ID: "c", Tool: "refund", Arguments: json.RawMessage(`{"order":7}`)}) })
	ctx, _, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r-idle", Principal: "alice", Budget: &reach.Budget{Cost: 1}})
	mctx, m, _ := rt.BeginModel(ctx, "m")
	rt.Call(mctx, &reach.Call{ID: "c1", Tool: "quick", Arguments: json.RawMessage(`{}`)})
	rt.Call(mctx, &reach.Call{ID: "c2", Tool: "nope", Arguments: json.RawMessage(`{}`)}) // refused: unknown tool
	m.EndModel(reach.TokenUsage{Input: 12345})
	_, stopped, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r-stopped", Principal: "alice"})
	stopped.Stop(reach.Cancel, "ops", "test")
	_, done, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r-done", Principal: "alice"})
	done.End()
	for {
		q, _ := rt.Lookup("r-waiting")
		r, _ := rt.Lookup("r-running")
		if len(q.Frames()) > 0 && q.Frames()[0].State() == reach.AwaitingApproval && len(r.Frames()) > 0 && r.Frames()[0].State() == reach.Executing {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return rt, func() { close(release); close(unblock); wg.Wait() }
}

// rowRe reads a row of the requests list: its id and its state cell.
var rowRe = regexp.MustCompile(`(?s)<tr data-request="([^"]+)"[^>]*>.*?<td class="state [^"]*">([^<]*)`)

func rows(page string) map[string]string {
	m := map[string]string{}
	for _, r := range rowRe.FindAllStringSubmatch(page, -1) {
		m[r[1]] = strings.TrimSpace(r[2])
	}
	return m
}

// TestRequestStates: the list shows each request's real state (not
// "running" for all), its refusals, cost and duration; a waiting one
// links to its decision; a state filter keeps only that state.
func TestRequestStates(t *testing.T) {
	rt, stop := fiveStates(t)
	defer stop()
	aps := &fakeApprovals{items: []Approval{{ID: "ap9", Tool: "refund", Status: "pending", Request: "r-waiting"}}}
	srv := httptest.NewServer(New(Options{Runtime: rt, Approvals: aps}))
	defer srv.Close()
	page := get(t, srv.URL+"/ui/")
	want := map[string]string{"r-running": "running", "r-waiting": "waiting for approval", "r-idle": "idle", "r-stopped": "stopped", "r-done": "done"}
	if got := rows(page); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("states on the list = %v, want %v", got, want)
	}
	idle := page[strings.Index(page, `data-request="r-idle"`):]
	idle = idle[:strings.Index(idle, "</tr>")]
	for _, w := range []string{`class="refusals err">1<`, `class="cost">$0.0123 <span class="muted">of $1.00`} {
		if !strings.Contains(idle, w) {
			t.Errorf("the idle request's row lacks %q:\n%s", w, idle)
		}
	}
	if !regexp.MustCompile(`class="duration">[0-9.]+ (µs|ms|s)<`).MatchString(idle) {
		t.Errorf("the idle request's row has no duration:\n%s", idle)
	}
	if !strings.Contains(page, `href="/ui/requests/r-waiting#approvals">decide ap9</a>`) {
		t.Error("the waiting request does not link to its decision")
	}
	for state, id := range map[string]string{"idle": "r-idle", "waiting for approval": "r-waiting", "done": "r-done"} {
		got := rows(get(t, srv.URL+"/ui/?state="+url.QueryEscape(state)))
		if len(got) != 1 || got[id] == "" {
			t.Errorf("?state=%s lists %v, want only %s", state, got, id)
		}
	}
	if got := rows(get(t, srv.URL+"/ui/?principal=bob")); len(got) != 1 || got["r-waiting"] == "" {
		t.Errorf("?principal=bob lists %v", got)
	}
}

// TestRequestsPaging: 120 requests are shown 50 a page, newest first,
// with links to the older and newer pages that keep the filters.
func TestRequestsPaging(t *testing.T) {
	rt := reach.New(nil)
	for i := range 120 {
		_, q, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: fmt.Sprintf("q%03d", i), Principal: "alice"})
		q.End()
	}
	srv := httptest.NewServer(New(Options{Runtime: rt}))
	defer srv.Close()
	p1 := get(t, srv.URL+"/ui/?state=done")
	if got := len(rows(p1)); got != 50 || !strings.Contains(p1, `data-request="q119"`) || !strings.Contains(p1, "1–50 of 120") {
		t.Fatalf("page 1: %d rows, newest q119 %v", got, strings.Contains(p1, "q119"))
	}
	older := regexp.MustCompile(`href="([^"]+)" id="older"`).FindStringSubmatch(p1)
	if older == nil || !strings.Contains(older[1], "state=done") {
		t.Fatalf("page 1 has no older link keeping the filter: %v", older)
	}
	p3 := get(t, srv.URL+strings.ReplaceAll(strings.ReplaceAll(older[1], "&amp;", "&"), "page=2", "page=3"))
	if got := rows(p3); len(got) != 20 || got["q000"] == "" || strings.Contains(p3, `id="older"`) || !strings.Contains(p3, `id="newer"`) {
		t.Errorf("page 3: %d rows, want the 20 oldest and a newer link only", len(got))
	}
}

// TestStopButtonsOnlyWhenLive: a stopped or ended request has no stop
// buttons; a live one has three, each with the form token.
func TestStopButtonsOnlyWhenLive(t *testing.T) {
	rt, stop := fiveStates(t)
	defer stop()
	srv := httptest.NewServer(New(Options{Runtime: rt}))
	defer srv.Close()
	for id, n := range map[string]int{"r-running": 3, "r-idle": 3, "r-waiting": 3, "r-stopped": 0, "r-done": 0} {
		page := get(t, srv.URL+"/ui/requests/"+id)
		if got := strings.Count(page, `action="/ui/stop/`+id+`"`); got != n {
			t.Errorf("%s has %d stop forms, want %d", id, got, n)
		}
		if n > 0 && strings.Count(page, `name="csrf" value="`) < n {
			t.Errorf("%s: a stop form without its token", id)
		}
	}
}

// TestApprovalsShowEverything: the inbox shows operation, target, impact,
// why, who asked, who voted, and times as people read them (not Go's
// time.Time with its monotonic clock).
func TestApprovalsShowEverything(t *testing.T) {
	rt := reach.New(nil)
	now := time.Now()
	aps := &fakeApprovals{items: []Approval{{ID: "ap1", Tool: "refund_order", Args: `{"order":7}`, Status: "pending", Request: "r1",
		AskedBy: "alice", Agent: "support-bot", Needs: "user+reviewer", Impact: "high_risk; cannot be undone",
		Operation: "Refunds an order to the card it was paid with.", Why: "the customer was charged twice",
		Created: now.Add(-2 * time.Minute), Expires: now.Add(14*time.Minute + 30*time.Second),
		Votes: []Vote{{By: "alice", As: "user", At: now.Add(-time.Minute), Reason: "mine"}}}}}
	srv := httptest.NewServer(New(Options{Runtime: rt, Approvals: aps}))
	defer srv.Close()
	page := get(t, srv.URL+"/ui/approvals")
	for _, w := range []string{"Refunds an order to the card it was paid with.", `refund_order {&#34;order&#34;:7}`, "high_risk; cannot be undone",
		"the customer was charged twice", "support-bot", "approved by <b>alice</b> as user", "expires <time", ">in 14 min</time>", ">2 min ago</time>"} {
		if !strings.Contains(page, w) {
			t.Errorf("the approvals page lacks %q", w)
		}
	}
	if strings.Contains(page, "m=+") || strings.Contains(page, "+0000 UTC") {
		t.Error("the approvals page prints a Go time.Time")
	}
}

// TestDecideFromRequestPage: a request waiting for approval shows the
// approval with Approve and Deny on its own page, and deciding there
// comes back to it.
func TestDecideFromRequestPage(t *testing.T) {
	rt, stop := fiveStates(t)
	defer stop()
	aps := &fakeApprovals{items: []Approval{{ID: "ap9", Tool: "refund", Status: "pending", Request: "r-waiting", Why: "double charge"}}}
	srv := httptest.NewServer(New(Options{Runtime: rt, Approvals: aps}))
	defer srv.Close()
	page := get(t, srv.URL+"/ui/requests/r-waiting")
	for _, w := range []string{`id="approvals"`, `data-approval="ap9"`, `action="/ui/approvals/ap9/approve"`, `action="/ui/approvals/ap9/deny"`,
		`name="request" value="r-waiting"`, "double charge"} {
		if !strings.Contains(page, w) {
			t.Errorf("the waiting request's page lacks %q", w)
		}
	}
	if other := get(t, srv.URL+"/ui/requests/r-idle"); strings.Contains(other, "ap9") {
		t.Error("another request's page shows ap9")
	}
	resp := post(t, srv.URL, "/ui/approvals/ap9/approve", url.Values{"request": {"r-waiting"}})
	if loc := resp.Header.Get("Location"); loc != "/ui/requests/r-waiting?flash=approved" || aps.items[0].Status != "approved" {
		t.Errorf("approving from the request page: %s to %q, status %s", resp.Status, loc, aps.items[0].Status)
	}
	// A request the viewer cannot see is no place to come back to.
	resp = post(t, srv.URL, "/ui/approvals/ap9/approve", url.Values{"request": {"https://evil.example/"}})
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/ui/approvals?") {
		t.Errorf("back to an unknown request: redirected to %q", loc)
	}
}

// TestGraphFolds: the request page's graph links every box to fold it,
// and a folded box hides what it called.
func TestGraphFolds(t *testing.T) {
	srv, _, req, _ := setup(t)
	page := get(t, srv.URL+"/ui/requests/r1")
	var tool string
	for _, f := range req.Frames() {
		if f.Kind == reach.ToolFrame {
			tool = f.ID.String()
			break
		}
	}
	if !strings.Contains(page, `<a href="/ui/requests/r1?fold=`+tool+`#graph">`) || !strings.Contains(page, `data-zoom="in"`) {
		t.Fatalf("the graph's boxes do not fold, or there is no zoom")
	}
	all := strings.Count(page, `<g class="frame`)
	folded := get(t, srv.URL+"/ui/requests/r1?fold="+tool)
	if n := strings.Count(folded, `<g class="frame`); n >= all || !strings.Contains(folded, `class="folded"`) || !strings.Contains(folded, `id="unfold"`) {
		t.Errorf("folded: %d boxes of %d, a +N mark %v", n, all, strings.Contains(folded, `class="folded"`))
	}
}

// TestFormToken: without the page's token, a form post is refused, and
// the request keeps running.
func TestFormToken(t *testing.T) {
	srv, _, req, _ := setup(t)
	for _, tok := range []string{"", "forged"} {
		resp, err := noRedirect.PostForm(srv.URL+"/ui/stop/r1", url.Values{"mode": {"cancel"}, "reason": {"x"}, "csrf": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || req.State() != "running" {
			t.Errorf("stop with token %q: %s, request %s", tok, resp.Status, req.State())
		}
	}
}

func TestRelative(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 28, 5, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "just now", -40 * time.Second: "40 s ago", -3 * time.Minute: "3 min ago", 14*time.Minute + 59*time.Second: "in 14 min",
		-5 * time.Hour: "5 h ago", -72 * time.Hour: "Nov 28 19:28",
	} {
		if got := relative(now.Add(d), now); got != want {
			t.Errorf("relative(%v) = %q, want %q", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{850 * time.Millisecond: "850 ms", 4200 * time.Millisecond: "4.2 s", 184 * time.Second: "3 min 4 s", 125 * time.Minute: "2 h 5 min",
		10 * time.Minute: "10 min", 2 * time.Hour: "2 h", 0: ""} {
		if got := span(d); got != want {
			t.Errorf("span(%v) = %q, want %q", d, got, want)
		}
	}
}

// login is a Login whose only key is rk_good (principal alice) and whose
// revoked set the test changes.
type testLogin struct {
	mu      sync.Mutex
	revoked bool
}

func (l *testLogin) options() *Login {
	check := func(cred string) (*auth.Identity, error) {
		if cred != "rk_good" {
			return nil, auth.ErrBadKey
		}
		return &auth.Identity{Principal: "alice", Method: "api_key", KeyID: "key_1"}, nil
	}
	return &Login{
		Header: func(r *http.Request) (*auth.Identity, error) {
			return check(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		},
		Credential: func(_ context.Context, c string) (*auth.Identity, time.Time, error) {
			id, err := check(c)
			return id, time.Time{}, err
		},
		Valid: func(id *auth.Identity) bool { l.mu.Lock(); defer l.mu.Unlock(); return !l.revoked },
	}
}

// TestLogin: with Login, a page redirects to the login page; a pasted
// key gives an HttpOnly, SameSite=Strict cookie that is not the key; the
// session's forms need its token; a revoked key and a logout end it.
func TestLogin(t *testing.T) {
	rt := reach.New(nil)
	_, q, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Principal: "alice"})
	l := &testLogin{}
	var seen []string
	srv := httptest.NewServer(New(Options{Runtime: rt, Login: l.options(),
		Actor: func(r *http.Request) Actor {
			if id, ok := auth.IdentityFrom(r.Context()); ok {
				seen = append(seen, id.Principal)
				return Actor{Principal: id.Principal}
			}
			return Actor{}
		}}))
	defer srv.Close()

	resp, err := noRedirect.Get(srv.URL + "/ui/requests/r1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/ui/login?next=%2Fui%2Frequests%2Fr1" {
		t.Fatalf("a page without a session: %s to %q", resp.Status, loc)
	}
	// The login form's token is in a cookie and the form.
	loginForm := func() (string, *http.Cookie) {
		resp, err := http.Get(srv.URL + "/ui/login?next=/ui/requests/r1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(readAll(resp))
		if m == nil || len(resp.Cookies()) != 1 {
			t.Fatalf("login page: no token (%d cookies)", len(resp.Cookies()))
		}
		return m[1], resp.Cookies()[0]
	}
	signIn := func(cred string, withToken bool) *http.Response {
		tok, c := loginForm()
		if !withToken {
			tok = "stale"
		}
		r, _ := http.NewRequest("POST", srv.URL+"/ui/login", strings.NewReader(url.Values{"csrf": {tok}, "credential": {cred}, "next": {"/ui/requests/r1"}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(c)
		resp, err := noRedirect.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := signIn("rk_good", false); resp.StatusCode != http.StatusForbidden || len(cookiesNamed(resp, cookiePlain)) != 0 {
		t.Errorf("login without the form's token: %s", resp.Status)
	}
	if resp := signIn("rk_bad", true); resp.StatusCode != http.StatusUnauthorized || len(cookiesNamed(resp, cookiePlain)) != 0 {
		t.Errorf("login with a bad key: %s", resp.Status)
	}
	resp = signIn("Bearer rk_good", true)
	cs := cookiesNamed(resp, cookiePlain)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/requests/r1" || len(cs) != 1 {
		t.Fatalf("login: %s to %q, %d session cookies", resp.Status, resp.Header.Get("Location"), len(cs))
	}
	c := cs[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || strings.Contains(c.Value, "rk_good") || len(c.Value) < 40 || c.MaxAge <= 0 {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure on loopback, a random value, an expiry", c)
	}
	withSession := func(method, path string, form url.Values) (*http.Response, string) {
		var body strings.Reader
		if form != nil {
			body = *strings.NewReader(form.Encode())
		}
		r, _ := http.NewRequest(method, srv.URL+path, &body)
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		r.AddCookie(c)
		resp, err := noRedirect.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp, readAll(resp)
	}
	resp, page := withSession("GET", "/ui/requests/r1", nil)
	m := csrfRe.FindStringSubmatch(page)
	if resp.StatusCode != 200 || !strings.Contains(page, `<span id="user">alice</span>`) || !strings.Contains(page, `id="logout"`) || m == nil {
		t.Fatalf("a page with the session: %s, user shown %v", resp.Status, strings.Contains(page, "alice"))
	}
	if resp, _ := withSession("POST", "/ui/stop/r1", url.Values{"mode": {"soft"}, "reason": {"x"}}); resp.StatusCode != http.StatusForbidden || q.State() != "running" {
		t.Errorf("a session's stop without its token: %s", resp.Status)
	}
	if resp, _ := withSession("POST", "/ui/stop/r1", url.Values{"mode": {"soft"}, "reason": {"done"}, "csrf": {m[1]}}); resp.StatusCode != http.StatusSeeOther || q.StopCause() == nil || q.StopCause().By != "alice" {
		t.Errorf("a session's stop with its token: %s, cause %+v", resp.Status, q.StopCause())
	}
	// A program with the key in a header needs no session and no token.
	r, _ := http.NewRequest("GET", srv.URL+"/ui/tools", nil)
	r.Header.Set("Authorization", "Bearer rk_good")
	if resp, err := noRedirect.Do(r); err != nil || resp.StatusCode != 200 {
		t.Errorf("a page with the key in a header: %v %v", err, resp.Status)
	}
	r.Header.Set("Authorization", "Bearer rk_bad")
	if resp, err := noRedirect.Do(r); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a page with a bad key in a header: %v %v", err, resp.Status)
	}
	// Revoking the key ends the session.
	l.mu.Lock()
	l.revoked = true
	l.mu.Unlock()
	if resp, _ := withSession("GET", "/ui/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session of a revoked key: %s", resp.Status)
	}
	l.mu.Lock()
	l.revoked = false
	l.mu.Unlock()
	if resp, _ := withSession("GET", "/ui/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session dropped when its key was revoked came back: %s", resp.Status)
	}
	// Logout ends the session on the server, not only in the browser.
	c = cookiesNamed(signIn("rk_good", true), cookiePlain)[0]
	_, page = withSession("GET", "/ui/", nil)
	m = csrfRe.FindStringSubmatch(page)
	if resp, _ := withSession("POST", "/ui/logout", url.Values{"csrf": {m[1]}}); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Errorf("logout: %s", resp.Status)
	}
	if resp, _ := withSession("GET", "/ui/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the session after logout: %s", resp.Status)
	}
}

// TestSecureCookie: behind TLS (here, a proxy that says https) the
// session cookie is Secure and __Host- prefixed.
func TestSecureCookie(t *testing.T) {
	l := &testLogin{}
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: l.options()}))
	defer srv.Close()
	r, _ := http.NewRequest("GET", srv.URL+"/ui/login", nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	resp, err := noRedirect.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(resp)
	resp.Body.Close()
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	lc := cookiesNamed(resp, loginSecure)
	if tok == nil || len(lc) != 1 || !lc[0].Secure {
		t.Fatalf("login page over https: cookies %v", resp.Cookies())
	}
	r, _ = http.NewRequest("POST", srv.URL+"/ui/login", strings.NewReader(url.Values{"csrf": {tok[1]}, "credential": {"rk_good"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-Proto", "https")
	r.AddCookie(&http.Cookie{Name: loginSecure, Value: lc[0].Value})
	resp, err = noRedirect.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := cookiesNamed(resp, cookieSecure)
	if len(cs) != 1 || !cs[0].Secure || cs[0].Path != "/" || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie over https: %v", resp.Cookies())
	}
}

// TestSecureCookieBehindProxies: the login cookie is Secure and __Host-
// prefixed when the proxy nearest the client says https as the agent card
// reads it (forwarded.HTTPS): the first entry of X-Forwarded-Proto, of a
// chain of proxies too ("https, http"), or Forwarded's proto; and plain,
// on loopback, when that entry says http. Before, the UI read
// X-Forwarded-Proto as a whole value and Forwarded not at all, so a
// browser behind two proxies, or one that sends Forwarded, got a cookie
// without Secure over https.
func TestSecureCookieBehindProxies(t *testing.T) {
	l := &testLogin{}
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: l.options()}))
	defer srv.Close()
	for _, tc := range []struct {
		header, value string
		secure        bool
	}{
		{"X-Forwarded-Proto", "https", true},
		{"X-Forwarded-Proto", "https, http", true},
		{"Forwarded", "for=192.0.2.60;proto=https;by=203.0.113.43", true},
		{"Forwarded", `for="[2001:db8::17]:4711";Proto="HTTPS", proto=http`, true},
		{"X-Forwarded-Proto", "http, https", false},
		{"Forwarded", "proto=http", false},
	} {
		r, _ := http.NewRequest("GET", srv.URL+"/ui/login", nil)
		r.Header.Set(tc.header, tc.value)
		resp, err := noRedirect.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sec, plain := cookiesNamed(resp, loginSecure), cookiesNamed(resp, loginPlain)
		if tc.secure && (len(sec) != 1 || !sec[0].Secure || len(plain) != 0) {
			t.Errorf("%s: %s: cookies %v, want one Secure %s", tc.header, tc.value, resp.Cookies(), loginSecure)
		}
		if !tc.secure && (len(plain) != 1 || plain[0].Secure || len(sec) != 0) {
			t.Errorf("%s: %s: cookies %v, want one plain %s (loopback, http)", tc.header, tc.value, resp.Cookies(), loginPlain)
		}
	}
}

func cookiesNamed(resp *http.Response, name string) []*http.Cookie {
	var out []*http.Cookie
	for _, c := range resp.Cookies() {
		// A plain cookie's name carries the port (cookieName).
		if (c.Name == name || strings.HasPrefix(c.Name, name+"_")) && c.MaxAge >= 0 && c.Value != "" {
			out = append(out, c)
		}
	}
	return out
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestSecureCookieNotShadowed: over TLS only the __Host- cookie is read.
// A cookie of the plain name can be planted by a page the __Host- prefix
// keeps out (a sibling domain, plain http on another port of the host):
// read as a session, it would sign a browser in as whoever planted it (the
// attacker's own session: a login fixed by the attacker), and as a login
// token it would be one the attacker knows.
func TestSecureCookieNotShadowed(t *testing.T) {
	l := &testLogin{}
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: l.options()}))
	defer srv.Close()
	https := func(method, path string, form url.Values, cookies ...*http.Cookie) *http.Response {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		r, _ := http.NewRequest(method, srv.URL+path, body)
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		r.Header.Set("X-Forwarded-Proto", "https")
		for _, c := range cookies {
			r.AddCookie(c)
		}
		resp, err := noRedirect.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// The attacker signs in as themself, over https, and keeps the value.
	resp := https("GET", "/ui/login", nil)
	page := readAll(resp)
	resp.Body.Close()
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	lc := cookiesNamed(resp, loginSecure)
	if tok == nil || len(lc) != 1 {
		t.Fatalf("login page over https: cookies %v", resp.Cookies())
	}
	resp = https("POST", "/ui/login", url.Values{"csrf": {tok[1]}, "credential": {"rk_good"}}, lc[0])
	resp.Body.Close()
	cs := cookiesNamed(resp, cookieSecure)
	if len(cs) != 1 {
		t.Fatalf("sign-in over https: %s, cookies %v", resp.Status, resp.Cookies())
	}
	// Under its own name the session holds.
	if resp := https("GET", "/ui/", nil, cs[0]); resp.StatusCode != http.StatusOK {
		t.Fatalf("the session under its own name: %s", resp.Status)
	}
	// Planted under the plain name it signs no one in.
	resp = https("GET", "/ui/", nil, &http.Cookie{Name: cookiePlain, Value: cs[0].Value})
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session planted under the plain name over https: %s, want a redirect to the login", resp.Status)
	}
	// A login token planted under the plain name is not the form's.
	planted := randomToken()
	resp = https("GET", "/ui/login", nil, &http.Cookie{Name: loginPlain, Value: planted})
	page = readAll(resp)
	resp.Body.Close()
	if strings.Contains(page, planted) {
		t.Errorf("the login form took a token planted under the plain name")
	}
	resp = https("POST", "/ui/login", url.Values{"csrf": {planted}, "credential": {"rk_good"}}, &http.Cookie{Name: loginPlain, Value: planted})
	resp.Body.Close()
	if len(cookiesNamed(resp, cookieSecure)) != 0 {
		t.Errorf("a sign-in with a login token planted under the plain name: %s", resp.Status)
	}
}
