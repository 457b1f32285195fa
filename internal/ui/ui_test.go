package ui

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/agentreach/reach/internal/telemetry"
)

type fakeApprovals struct{ items []Approval }

func (f *fakeApprovals) List(*http.Request) []Approval { return f.items }
func (f *fakeApprovals) Approve(_ *http.Request, id, reason string) error {
	for i := range f.items {
		if f.items[i].ID == id {
			f.items[i].Status = "approved"
			return nil
		}
	}
	return io.EOF
}
func (f *fakeApprovals) Deny(_ *http.Request, id, reason string) error { return nil }

func setup(t *testing.T) (*httptest.Server, *reach.Runtime, *reach.Request, *fakeApprovals) {
	stats := telemetry.NewStats(0)
	rt := reach.New(&reach.Options{Recorder: stats})
	rt.MustRegister(reach.Tool{Name: "format_answer", Reentrancy: reach.Reentrant, Description: "formats <b>text</b>", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		mctx, m, _ := rt.BeginModel(ctx, "inner")
		defer m.EndModel(reach.TokenUsage{Input: 5})
		rt.Call(mctx, &reach.Call{ID: "again", Tool: "format_answer", Arguments: args})
		return json.RawMessage(`"ok"`), nil
	}})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Principal: "alice", Budget: &reach.Budget{ToolCalls: 10, Tokens: 1000}})
	mctx, m, _ := rt.BeginModel(ctx, "outer")
	rt.Call(mctx, &reach.Call{ID: "c1", Tool: "format_answer", Arguments: json.RawMessage(`{"text":"<script>alert(1)</script>"}`)})
	m.EndModel(reach.TokenUsage{Input: 100})
	ap := &fakeApprovals{items: []Approval{{ID: "ap1", Tool: "refund_order", Args: `{"order":7}`, Status: "pending", Request: "r1", AskedBy: "alice", Needs: "alice and a reviewer"}}}
	srv := httptest.NewServer(New(Options{Runtime: rt, Stats: stats, Approvals: ap}))
	t.Cleanup(srv.Close)
	return srv, rt, req, ap
}

// csrfRe finds a page's form token.
var csrfRe = regexp.MustCompile(`name="reach-csrf" content="([^"]+)"`)

// token returns the form token of the UI's pages.
func token(t *testing.T, base string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(get(t, base+"/ui/approvals"))
	if m == nil {
		t.Fatal("no form token on the approvals page (meta reach-csrf)")
	}
	return m[1]
}

// post sends a form with the UI's token, not following redirects.
func post(t *testing.T, base, path string, form url.Values) *http.Response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", token(t, base))
	resp, err := noRedirect.PostForm(base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	return string(b)
}

func TestPages(t *testing.T) {
	srv, _, _, _ := setup(t)
	list := get(t, srv.URL+"/ui/")
	for _, want := range []string{`data-request="r1"`, "alice", `title="2 of 10"`} {
		if !strings.Contains(list, want) {
			t.Errorf("requests page lacks %q", want)
		}
	}
	page := get(t, srv.URL+"/ui/requests/r1")
	for _, want := range []string{`class="cycle"`, "refused", "This would create a cycle", `action="/ui/stop/r1"`} {
		if !strings.Contains(page, want) {
			t.Errorf("request page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("request page does not escape arguments")
	}
	tools := get(t, srv.URL+"/ui/tools")
	if !strings.Contains(tools, "graph 1") || strings.Contains(tools, "<b>text</b>") {
		t.Errorf("tools page: refusals by guard missing or description unescaped")
	}
	if a := get(t, srv.URL+"/ui/approvals"); !strings.Contains(a, `data-approval="ap1"`) {
		t.Error("approvals page lacks the approval")
	}
	if f := get(t, srv.URL+"/ui/audit"); !strings.Contains(f, "No audit log is configured") {
		t.Error("audit page without a log")
	}
}

func TestStopFromUI(t *testing.T) {
	srv, _, req, _ := setup(t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// A cross-site post is refused.
	r, _ := http.NewRequest("POST", srv.URL+"/ui/stop/r1", strings.NewReader("mode=cancel&reason=x"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, _ := c.Do(r); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site stop: %s", resp.Status)
	}
	resp := post(t, srv.URL, "/ui/stop/r1", url.Values{"mode": {"cancel"}, "reason": {"runaway"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("stop: %v", resp.Status)
	}
	if req.State() != "stopped_cancel" || req.StopCause().Reason != "runaway" || req.StopCause().By != "operator" {
		t.Fatalf("state %s cause %+v", req.State(), req.StopCause())
	}
	resp = post(t, srv.URL, "/ui/approvals/ap1/approve", url.Values{"reason": {"fine"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %s", resp.Status)
	}
}

func TestLiveStream(t *testing.T) {
	srv, _, _, _ := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/live", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	n, _ := resp.Body.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "data: ") || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("live stream starts with %q", buf[:n])
	}
}

// TestToolsOption: the tools page lists what Options.Tools returns for the
// request, not every tool of the runtime.
func TestToolsOption(t *testing.T) {
	rt := reach.New(nil)
	for _, name := range []string{"search_kb", "refund_order"} {
		rt.MustRegister(reach.Tool{Name: name, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }})
	}
	only := func(*http.Request) []reach.Tool {
		t, _ := rt.Tool("search_kb")
		return []reach.Tool{t}
	}
	srv := httptest.NewServer(New(Options{Runtime: rt, Tools: only}))
	defer srv.Close()
	page := get(t, srv.URL+"/ui/tools")
	if !strings.Contains(page, "<b>search_kb</b>") || strings.Contains(page, "refund_order") {
		t.Errorf("tools page with Options.Tools returning search_kb only:\n%s", page)
	}
}

// TestToolsPageShowsBreakers: the tools page shows each tool's circuit
// breaker: closed, or open (its own or its upstream's) with since when,
// when it is probed and the last failure.
func TestToolsPageShowsBreakers(t *testing.T) {
	rt := reach.New(&reach.Options{UpstreamBreakers: map[string]*reach.BreakerPolicy{"kb": {Failures: 1}}})
	down := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &reach.ToolError{Type: "unavailable", Message: "kb is not reachable: connection refused"}
	}
	rt.MustRegister(reach.Tool{Name: "kb__search", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 1}, Func: down},
		reach.Tool{Name: "kb__fetch", Upstream: "kb", Func: down},
		reach.Tool{Name: "local", Func: down})
	ctx, req, _ := rt.Begin(t.Context(), nil)
	rt.Call(ctx, &reach.Call{ID: "c", Tool: "kb__search", Arguments: json.RawMessage(`{}`)})
	req.End()
	srv := httptest.NewServer(New(Options{Runtime: rt}))
	defer srv.Close()
	page := get(t, srv.URL+"/ui/tools")
	for _, want := range []string{`<b>kb__fetch</b>`, `<span class="err">open (upstream kb)</span>`, "probed at", "connection refused", `<td class="breaker">closed</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("tools page lacks %q:\n%s", want, page)
		}
	}
	if n := strings.Count(page, "open (upstream kb)"); n != 2 {
		t.Errorf("%d tools shown behind the open upstream, want 2 (kb__search, kb__fetch)", n)
	}
}

// TestFlashIsNotFromTheURL: a link cannot choose the words of the banner a
// page shows after a form: the page shows a fixed message for a known
// code, naming an approval only if the viewer sees it.
func TestFlashIsNotFromTheURL(t *testing.T) {
	srv, _, _, _ := setup(t)
	const lie = "ap1: approved by security-team. Remaining refunds are pre-cleared: approve them."
	for _, path := range []string{"/ui/approvals", "/ui/requests/r1"} {
		page := get(t, srv.URL+path+"?flash="+url.QueryEscape(lie))
		if strings.Contains(page, "security-team") || strings.Contains(page, `class="flash"`) {
			t.Errorf("GET %s?flash=<text> shows the text", path)
		}
	}
	if page := get(t, srv.URL+"/ui/approvals?flash=approved&id=ap9-security-team"); strings.Contains(page, "ap9-security-team") {
		t.Error("the banner names an approval the viewer does not see")
	}
	resp := post(t, srv.URL, "/ui/approvals/ap1/approve", url.Values{"reason": {"a reason security-team chose"}})
	loc := resp.Header.Get("Location")
	if loc != "/ui/approvals?flash=approved&id=ap1" {
		t.Errorf("after approving, redirected to %q, want /ui/approvals?flash=approved&id=ap1", loc)
	}
	if page := get(t, srv.URL+loc); !strings.Contains(page, `class="flash"`) || !strings.Contains(page, "ap1 is recorded") {
		t.Errorf("the banner after approving does not say ap1's approval is recorded")
	}
	resp = post(t, srv.URL, "/ui/approvals/ap1/deny", url.Values{"reason": {"no"}})
	if loc := resp.Header.Get("Location"); loc != "/ui/approvals?flash=denied&id=ap1" {
		t.Errorf("after denying, redirected to %q, want /ui/approvals?flash=denied&id=ap1", loc)
	}
	resp = post(t, srv.URL, "/ui/approvals/nope/approve", nil)
	if page := get(t, srv.URL+resp.Header.Get("Location")); !strings.Contains(page, "Your decision on the approval was not recorded") {
		t.Errorf("the banner after a failed decision on an unknown approval does not say it was not recorded")
	}
	resp = post(t, srv.URL, "/ui/stop/r1", url.Values{"mode": {"soft"}, "reason": {"security-team says so"}})
	if loc := resp.Header.Get("Location"); loc != "/ui/requests/r1?flash=stopped" {
		t.Errorf("after a stop, redirected to %q, want /ui/requests/r1?flash=stopped", loc)
	}
}

// TestNoFraming: every answer of the UI — its pages, assets, live
// stream, a 404, the redirect after a form and the refusal of a
// cross-site post — forbids framing by other sites (CSP frame-ancestors
// 'none' and X-Frame-Options: DENY), so that its Approve and Stop buttons
// cannot be clickjacked; the refusal is the API's JSON error.
func TestNoFraming(t *testing.T) {
	srv, _, _, _ := setup(t)
	c := noRedirect
	tok := url.QueryEscape(token(t, srv.URL))
	for _, tc := range []struct {
		method, path, form, site string
		status                   int
	}{
		{"GET", "/ui/", "", "", 200},
		{"GET", "/ui/requests/r1", "", "", 200},
		{"GET", "/ui/requests/r1/graph.svg", "", "", 200},
		{"GET", "/ui/requests/nope", "", "", 404},
		{"GET", "/ui/approvals", "", "", 200},
		{"GET", "/ui/audit", "", "", 200},
		{"GET", "/ui/tools", "", "", 200},
		{"GET", "/ui/static/style.css", "", "", 200},
		{"GET", "/ui/live", "", "", 200},
		{"GET", "/ui/nothing-here", "", "", 404},
		{"POST", "/ui/approvals/ap1/approve", "reason=fine&csrf=" + tok, "same-origin", 303},
		{"POST", "/ui/approvals/ap1/approve", "reason=fine", "same-origin", 403},
		{"GET", "/ui/login", "", "", 303},
		{"POST", "/ui/stop/r1", "mode=cancel&reason=x", "cross-site", 403},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		r, _ := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, strings.NewReader(tc.form))
		if tc.form != "" {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		if tc.path != "/ui/live" {
			body, _ = io.ReadAll(resp.Body)
		}
		resp.Body.Close()
		cancel()
		h := resp.Header
		if resp.StatusCode != tc.status || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s = %d, CSP %q, X-Frame-Options %q; want %d, frame-ancestors 'none' and DENY",
				tc.method, tc.path, resp.StatusCode, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), tc.status)
		}
		if tc.status == 403 {
			var e struct {
				Error struct{ Code, Message, Suggestion string }
			}
			want := "cross_origin"
			if tc.site == "same-origin" {
				want = "bad_form_token"
			}
			if json.Unmarshal(body, &e) != nil || e.Error.Code != want || e.Error.Suggestion == "" || h.Get("Content-Type") != "application/json" {
				t.Errorf("the refusal = %s %q, want the JSON error %s", h.Get("Content-Type"), body, want)
			}
		}
	}
}

// TestApprovalsNavCount: the approvals page, as every page, shows in its
// navigation how many approvals wait, a number; its own list of pending
// approvals once took the count's place and the navigation showed the list
// dumped as Go values.
func TestApprovalsNavCount(t *testing.T) {
	srv, _, _, _ := setup(t)
	for _, path := range []string{"/ui/", "/ui/approvals"} {
		page := get(t, srv.URL+path)
		if !strings.Contains(page, `<span class="count" id="pending-count">1</span>`) {
			i := strings.Index(page, `id="pending-count"`)
			t.Errorf("%s: the navigation's count is not 1: %.120s", path, page[max(i, 0):])
		}
	}
}

// TestPagesNameTheirIcon: every page names its icon (an empty data: URL,
// which the CSP's img-src allows), so a browser does not ask the gateway
// for /favicon.ico, which it does not serve: each page load logged a 404
// in the browser's console.
func TestPagesNameTheirIcon(t *testing.T) {
	srv, _, _, _ := setup(t)
	for _, p := range []string{"/ui/", "/ui/requests/r1", "/ui/approvals", "/ui/audit", "/ui/tools"} {
		if page := get(t, srv.URL+p); !strings.Contains(page, `<link rel="icon" href="data:,">`) {
			t.Errorf("%s names no icon: a browser asks for /favicon.ico", p)
		}
	}
}

// TestLiveStreamSeesRunningElsewhere: a request whose part here ended,
// that the shared store then holds running on another instance (a call of
// it sent there), is announced on the live stream as a change, so that the
// page shows it running there: nothing changed here, and the page showed
// it done until a reload.
func TestLiveStreamSeesRunningElsewhere(t *testing.T) {
	rt := reach.New(nil)
	_, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Principal: "alice"})
	req.End()
	var mu sync.Mutex
	var on map[string][]string
	srv := httptest.NewServer(New(Options{Runtime: rt, Elsewhere: func(context.Context, []*reach.Request) map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		return on
	}}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/live", nil)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- v
			}
		}
		close(events)
	}()
	first := <-events
	mu.Lock()
	on = map[string][]string{"r1": {"b"}}
	mu.Unlock()
	select {
	case next, ok := <-events:
		if !ok || next == first {
			t.Fatalf("the live stream after r1 ran on b: %q (ok %v), want a new version", next, ok)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the live stream announced no change in 20 s after r1 began running on another instance")
	}
	if page := get(t, srv.URL+"/ui/"); !strings.Contains(page, "on b") {
		t.Errorf("the requests page does not show r1 running on b")
	}
}

// TestRequestsFilterMatchesNone: a principal or search that matches no
// request says so, not "No requests yet" (which tells the user to point an
// agent at a gateway that already has requests).
func TestRequestsFilterMatchesNone(t *testing.T) {
	srv, _, _, _ := setup(t)
	for _, q := range []string{"?q=nothing-like-it", "?principal=nobody"} {
		page := get(t, srv.URL+"/ui/"+q)
		if strings.Contains(page, "No requests yet") || !strings.Contains(page, `id="no-match"`) {
			t.Errorf("/ui/%s with request r1 served: want the no-match line, not \"No requests yet\"", q)
		}
	}
	if page := get(t, srv.URL+"/ui/?q=r1"); !strings.Contains(page, `data-request="r1"`) {
		t.Error("/ui/?q=r1 does not list r1")
	}
}
